package gateway

import "github.com/mark3labs/mcp-go/mcp"

// Tool metadata options. mcp.NewTool starts every tool as destructive and
// open-world (the MCP defaults), so a tool says what it really does with
// these; TestToolAnnotationsTellTheTruth holds the intended table.

// toolTitle sets the tool's display title, both where protocol 2025-06-18 and
// later put it (Tool.title) and where 2025-03-26 clients look
// (annotations.title).
func toolTitle(title string) mcp.ToolOption {
	return func(t *mcp.Tool) {
		t.Title = title
		t.Annotations.Title = title
	}
}

// readOnlyTool marks a tool that changes nothing: read-only, hence neither
// destructive nor anything but idempotent.
func readOnlyTool() mcp.ToolOption {
	return func(t *mcp.Tool) {
		t.Annotations.ReadOnlyHint = mcp.ToBoolPtr(true)
		t.Annotations.DestructiveHint = mcp.ToBoolPtr(false)
		t.Annotations.IdempotentHint = mcp.ToBoolPtr(true)
	}
}

// additiveTool marks a tool that writes but destroys nothing (it adds a
// memory, a version, a registration or a resolution; nothing is lost).
func additiveTool() mcp.ToolOption {
	return func(t *mcp.Tool) {
		t.Annotations.ReadOnlyHint = mcp.ToBoolPtr(false)
		t.Annotations.DestructiveHint = mcp.ToBoolPtr(false)
	}
}
