package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crow-sync/crow/app"
)

// The MCP endpoints (SPEC §8): /mcp serves the local tools; /router/mcp serves
// the same tools, each taking a required instance_id, and routes the call to
// that instance. Both are mcp-go streamable-HTTP servers behind the owner key
// and the browser guard (mcp_guard.go). Each tool is an operation of app's
// table, the same one its REST route runs (ops.go), so both answer the same
// field names; tool failures are IsError results that say what to fix, never
// JSON-RPC errors.

// Paths of the MCP endpoints.
const (
	MCPPath       = "/mcp"
	RouterMCPPath = "/router/mcp"
)

// RemoteCaller calls a tool on another instance's MCP server. Federation
// (SPEC §9) implements it; the router hands it every call whose instance_id is
// not this instance. args are the tool's arguments without instance_id. An
// error means the call could not be made (unreachable, refused); a tool
// failure on the peer comes back as a result with IsError set.
type RemoteCaller interface {
	CallTool(ctx context.Context, instanceID, tool string, args json.RawMessage) (*mcp.CallToolResult, error)
}

// mcpTool is one tool: its schema and the logic behind it. call returns the
// structured result (a JSON object, or a *mcp.CallToolResult passed through
// as is) or an error that toolErrorResult turns into an IsError result.
// op is the operation of app's table behind it.
type mcpTool struct {
	tool mcp.Tool
	call func(ctx context.Context, args json.RawMessage) (any, error)
	op   app.Op
}

// opTools are the MCP tools of app's table.
func (s *Server) opTools() []mcpTool {
	var out []mcpTool
	for _, op := range app.Ops() {
		if op.Info().Tool != "" {
			out = append(out, mcpTool{tool: opTool(op), call: s.opToolCall(op), op: op})
		}
	}
	return out
}

// mcpRoutes returns the routes of /mcp and /router/mcp: every method (mcpWire
// answers 405 for those MCP has no use for), behind the owner key (for /mcp, or a peer's federation
// token), bodies capped at MaxMCPBodyBytes. The router runs calls for other
// instances through Config.Remote.
func (s *Server) mcpRoutes() []route {
	tools := s.opTools()
	local := s.newMCPServer("mcp", tools)
	router := s.newMCPServer("router", s.routedTools(tools, s.cfg.Remote))
	return []route{
		{path: MCPPath, access: ownerOrPeer, maxBody: MaxMCPBodyBytes, anyQuery: true, h: local,
			doc: routeDoc{tag: "mcp", mcp: true, summary: "MCP server (streamable HTTP): this instance's tools"}},
		{path: RouterMCPPath, access: ownerOnly, maxBody: MaxMCPBodyBytes, anyQuery: true, h: router,
			doc: routeDoc{tag: "mcp", mcp: true, summary: "MCP router (streamable HTTP): the same tools, each taking the instance_id to run on"}},
	}
}

// MaxMCPBodyBytes bounds an MCP request body (mcp-go reads it whole). A memory's
// content is at most 64 KiB, which JSON escaping can grow up to six-fold.
const MaxMCPBodyBytes = 1 << 20

// mcpInstructions is what an MCP client is told on initialize.
const mcpInstructions = `crow keeps one person's memories in sync across their machines (instances).
Store durable facts, decisions and preferences with crow_store_memory; find them with crow_search_memories
(full text) or crow_list_memories (newest first, with filters); read, correct or delete one by id with
crow_get_memory, crow_update_memory and crow_delete_memory. crow_list_instances shows the machines;
crow_sync_status shows replication. Results are JSON objects with the same field names as the REST API.`

// mcpResourceInstructions is added to mcpInstructions on /mcp, which has
// resources and prompts.
const mcpResourceInstructions = `
crow_changes_since tells what the other machines changed since your last call. Resources: crow://instances,
crow://memory/{number}, crow://project/{name}/state. Prompts: consolidate_project, review_sync_conflicts.`

// newMCPServer returns a streamable-HTTP MCP server serving tools; endpoint
// labels its tool-call metrics.
func (s *Server) newMCPServer(endpoint string, tools []mcpTool) http.Handler {
	sessions := newMCPSessions() // mcpwire.go: session table + wire rules
	hooks := sessions.hooks()
	opts := []server.ServerOption{
		server.WithHooks(hooks),
		server.WithToolCapabilities(false),

		server.WithStrictInputSchemaDefault(),
		server.WithRecovery(),
		// The session's client name (initialize's clientInfo.name) names the
		// caller to crow_changes_since, which remembers a cursor per client.
		server.WithToolHandlerMiddleware(func(next server.ToolHandlerFunc) server.ToolHandlerFunc {
			return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				if cs, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo); ok {
					if name := cs.GetClientInfo().Name; name != "" {
						ctx = app.WithClientName(ctx, name)
					}
				}
				return next(ctx, req)
			}
		}),
	}
	if endpoint == "mcp" { // resources and prompts: this instance's, not routed (mcp_resources.go)
		opts = append(opts, server.WithResourceCapabilities(false, false), server.WithPromptCapabilities(false),
			server.WithInstructions(mcpInstructions+mcpResourceInstructions))
	} else {
		opts = append(opts, server.WithInstructions(mcpInstructions))
	}
	ms := server.NewMCPServer("crow", s.app.Self().Version, opts...)
	for _, t := range tools {
		ms.AddTool(t.tool, s.metrics.timeTool(endpoint, t.tool.Name, s.mcpHandler(t)))
	}
	if endpoint == "mcp" {
		s.addResourcesAndPrompts(ms, hooks)
	}
	return mcpWire(sessions, MaxMCPBodyBytes, server.NewStreamableHTTPServer(ms, append(sessions.transportOptions(),
		server.WithStreamableHTTPLogger(s.log.With("endpoint", "mcp")),
		// browserGuard applies our Host/Origin policy, which also admits the
		// configured gateway host; mcp-go's own check would be a second,
		// narrower copy of it.
		server.WithDisableLocalhostProtection(true),
	)...))
}

// routedTools returns tools for /router/mcp: each takes a required
// instance_id and runs locally when it names this instance, through remote
// otherwise (nil remote: a tool error).
func (s *Server) routedTools(tools []mcpTool, remote RemoteCaller) []mcpTool {
	out := make([]mcpTool, 0, len(tools))
	for _, t := range tools {
		if t.op.Info().NoRoute {
			continue
		}
		rt := t.tool
		rt.Description = s.routedDescription(t.tool) // routerscope.go: local-only tools say so
		rt.RawInputSchema = routedSchema(t.op)
		r := &routedTool{s: s, local: t, remote: remote}
		out = append(out, mcpTool{tool: rt, call: r.call, op: t.op})
	}
	return out
}

// routedSchema is an operation's MCP input schema with a required
// instance_id and without the fields the router leaves out (route:"-": for
// search, instances; the router searches exactly one instance).
func routedSchema(op app.Op) json.RawMessage {
	sch := op.Input().ToolInputSchema()
	props := sch["properties"].(map[string]any)
	for _, f := range op.Input().Fields {
		if !f.Routed {
			delete(props, f.Name)
		}
	}
	props["instance_id"] = map[string]any{
		"type": "string",
		"description": "Id of the instance to run this tool on (crow_list_instances lists them; " +
			"this instance's id is its \"self\"). Calls for other instances go to that instance's gateway, which runs " +
			"only its allow-listed search and read tools for peers.",
	}
	required, _ := sch["required"].([]string)
	sch["required"] = append([]string{"instance_id"}, required...)
	b, _ := json.Marshal(sch)
	return b
}

// routedTool is one tool of /router/mcp.
type routedTool struct {
	s      *Server
	local  mcpTool
	remote RemoteCaller // nil: calls for other instances are refused
}

func (r *routedTool) call(ctx context.Context, raw json.RawMessage) (any, error) {
	var args map[string]json.RawMessage
	if err := json.Unmarshal(raw, &args); err != nil {
		return nil, app.Invalidf("arguments must be a JSON object")
	}
	var id string
	if err := json.Unmarshal(args["instance_id"], &id); err != nil || strings.TrimSpace(id) == "" {
		return nil, app.Invalidf("instance_id is required: the id of the instance to run %s on (crow_list_instances lists them)", r.local.tool.Name)
	}
	delete(args, "instance_id")
	rest, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	self := r.s.app.Self().InstanceID
	for _, f := range r.local.op.Input().Fields {
		if _, given := args[f.Name]; given && !f.Routed {
			return nil, app.Invalidf("unknown argument %q: on the router, instance_id alone selects the instance %s runs on", f.Name, r.local.tool.Name)
		}
	}
	if id == self {
		return r.local.call(ctx, rest)
	}
	if err := r.s.app.RouteTarget(id); err != nil {
		return nil, err
	}
	// The peer's allow-list decides what a peer may call (it refuses, logs
	// and counts the refusal: crow_federation_peer_requests_total
	// {outcome="tool_denied"}); the router does not pre-empt it.
	if r.remote == nil {
		return nil, app.Errorf(app.KindUnavailable, "instance %q is not this instance (%q) and this gateway has no federation client to route to it; "+
			"call %s with instance_id %q, or call that instance's own gateway", id, self, r.local.tool.Name, self)
	}
	res, err := r.remote.CallTool(ctx, id, r.local.tool.Name, rest)
	if err != nil {
		return nil, app.Wrap(app.KindUpstream, err, fmt.Sprintf("calling %s on instance %q: %v", r.local.tool.Name, id, err))
	}
	return res, nil
}
