package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/registry"
)

// The MCP endpoints (SPEC §8): /mcp serves the local tools; /router/mcp serves
// the same tools, each taking a required instance_id, and routes the call to
// that instance. Both are mcp-go streamable-HTTP servers behind the owner key
// and the browser guard (mcp_guard.go). The tools call the same memory.Service
// and registry.Registry methods as the REST handlers and answer the same field
// names; tool failures are IsError results that say what to fix, never
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
// as is) or an error that toolResultError turns into an IsError result.
type mcpTool struct {
	tool mcp.Tool
	call func(ctx context.Context, args json.RawMessage) (any, error)
}

// mcpRoutes returns the routes of /mcp and /router/mcp: every method (mcpWire
// answers 405 for those MCP has no use for), behind the owner key (for /mcp, or a peer's federation
// token), bodies capped at MaxMCPBodyBytes. The router runs calls for other
// instances through Config.Remote.
func (s *Server) mcpRoutes() []route {
	tools := s.mcpTools()
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

// newMCPServer returns a streamable-HTTP MCP server serving tools; endpoint
// labels its tool-call metrics.
func (s *Server) newMCPServer(endpoint string, tools []mcpTool) http.Handler {
	sessions := newMCPSessions() // mcpwire.go: session table + wire rules
	ms := server.NewMCPServer("crow", s.cfg.Self.Version,
		server.WithHooks(sessions.hooks()),
		server.WithToolCapabilities(false),
		server.WithInstructions(mcpInstructions),
		server.WithStrictInputSchemaDefault(),
		server.WithRecovery(),
	)
	for _, t := range tools {
		ms.AddTool(t.tool, s.metrics.timeTool(endpoint, t.tool.Name, s.toolHandler(t)))
	}
	return mcpWire(sessions, MaxMCPBodyBytes, server.NewStreamableHTTPServer(ms, append(sessions.transportOptions(),
		server.WithStreamableHTTPLogger(s.log.With("endpoint", "mcp")),
		// browserGuard applies our Host/Origin policy, which also admits the
		// configured gateway host; mcp-go's own check would be a second,
		// narrower copy of it.
		server.WithDisableLocalhostProtection(true),
	)...))
}

// toolHandler adapts t to mcp-go: arguments in, structured result or tool
// error out.
func (s *Server) toolHandler(t mcpTool) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if peer, ok := peerOf(ctx); ok && (s.cfg.PeerAllowed == nil || !s.cfg.PeerAllowed(t.tool.Name)) {
			s.metrics.peers.WithLabelValues("tool_denied").Inc()
			s.log.Warn("federation: peer called a tool outside the allow-list", "peer", peer, "tool", t.tool.Name)
			return mcp.NewToolResultError(fmt.Sprintf("tool %s is not allowed for federated calls from instance %s "+
				"(peers may call only the allow-listed search and read tools)", t.tool.Name, peer)), nil
		}
		args, err := rawArguments(req)
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		v, err := t.call(ctx, args)
		if err != nil {
			return s.toolResultError(ctx, t.tool.Name, err), nil
		}
		if res, ok := v.(*mcp.CallToolResult); ok {
			return res, nil // a peer's answer, passed through
		}
		return mcp.NewToolResultStructuredOnly(v), nil
	}
}

// rawArguments returns the call's arguments as a JSON object ("{}" when absent).
func rawArguments(req mcp.CallToolRequest) (json.RawMessage, error) {
	var raw json.RawMessage
	switch a := req.GetRawArguments().(type) {
	case json.RawMessage:
		raw = a
	case nil:
	default:
		b, err := json.Marshal(a)
		if err != nil {
			return nil, fmt.Errorf("arguments are not JSON: %w", err)
		}
		raw = b
	}
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage("{}"), nil
	}
	return raw, nil
}

// toolError is a failure whose message is already fit for the caller.
type toolError struct{ msg string }

func (e *toolError) Error() string { return e.msg }

func toolErrorf(format string, a ...any) error { return &toolError{msg: fmt.Sprintf(format, a...)} }

// toolResultError turns err into an IsError result that says what to fix.
func (s *Server) toolResultError(ctx context.Context, tool string, err error) *mcp.CallToolResult {
	var terr *toolError
	var verr *memory.ValidationError
	switch {
	case errors.As(err, &terr):
		return mcp.NewToolResultError(terr.msg)
	case errors.As(err, &verr):
		return mcp.NewToolResultError("invalid argument " + verr.Error())
	case errors.Is(err, memory.ErrNotFound):
		return mcp.NewToolResultError("not found: " + err.Error())
	case registryStatus(err) != http.StatusInternalServerError:
		return mcp.NewToolResultError(registryHint(err))
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return mcp.NewToolResultError("the call was cancelled before it finished")
	}
	id := ctx.Value(requestIDKey)
	s.log.Error("mcp tool failed", "tool", tool, "request_id", id, "err", err)
	return mcp.NewToolResultErrorf("internal error in %s (request id %v); the crow daemon's log has the details", tool, id)
}

// registryHint is the tool error text of a registry error.
func registryHint(err error) string {
	msg := err.Error()
	switch {
	case errors.Is(err, registry.ErrNotFound):
		return msg + "; crow_list_instances lists the registered instances and their ids"
	case errors.Is(err, registry.ErrInvalidURL):
		return msg + "; give the peer's gateway URL, e.g. http://100.64.0.2:3001"
	case errors.Is(err, registry.ErrUnhealthy):
		return msg + "; check that crow serve runs there and that the URL is reachable from this machine"
	}
	return msg
}

// decodeArgs decodes the arguments object raw into dst, refusing unknown
// arguments and wrong types with a message naming the argument.
func decodeArgs(raw json.RawMessage, dst any) error {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var typ *json.UnmarshalTypeError
		var syntax *json.SyntaxError
		switch {
		case errors.As(err, &typ) && typ.Field != "":
			return toolErrorf("argument %q must be %s, got a JSON %s", typ.Field, jsonKind(typ.Type), typ.Value)
		case errors.As(err, &typ):
			return toolErrorf("arguments must be a JSON object, got a JSON %s", typ.Value)
		case errors.As(err, &syntax):
			return toolErrorf("arguments are not valid JSON: %s", syntax.Error())
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return toolErrorf("unknown argument %s; the tool's input schema lists the accepted ones",
				strings.TrimPrefix(err.Error(), "json: unknown field "))
		}
		return toolErrorf("bad arguments: %s", err.Error())
	}
	return nil
}

// routedTools returns tools for /router/mcp: each takes a required
// instance_id and runs locally when it names this instance, through remote
// otherwise (nil remote: a tool error until federation arrives).
func (s *Server) routedTools(tools []mcpTool, remote RemoteCaller) []mcpTool {
	out := make([]mcpTool, 0, len(tools))
	for _, t := range tools {
		rt := t.tool
		rt.Description = s.routedDescription(t.tool) // routerscope.go: local-only tools say so
		rt.InputSchema.Properties = maps.Clone(t.tool.InputSchema.Properties)
		if rt.InputSchema.Properties == nil {
			rt.InputSchema.Properties = map[string]any{}
		}
		if t.tool.Name == toolSearch {
			// the router searches exactly one instance: instance_id
			delete(rt.InputSchema.Properties, "instances")
		}
		rt.InputSchema.Properties["instance_id"] = map[string]any{
			"type": "string",
			"description": "Id of the instance to run this tool on (crow_list_instances lists them; " +
				"this instance's id is its \"self\"). Calls for other instances go to that instance's gateway, which runs " +
				"only its allow-listed search and read tools for peers.",
		}
		rt.InputSchema.Required = append([]string{"instance_id"}, slices.DeleteFunc(slices.Clone(t.tool.InputSchema.Required),
			func(n string) bool { return n == "instance_id" })...)
		r := &routedTool{s: s, local: t, remote: remote}
		out = append(out, mcpTool{tool: rt, call: r.call})
	}
	return out
}

// routedTool is one tool of /router/mcp.
type routedTool struct {
	s      *Server
	local  mcpTool
	remote RemoteCaller // nil until federation
}

func (r *routedTool) call(ctx context.Context, raw json.RawMessage) (any, error) {
	var args map[string]json.RawMessage
	if err := json.Unmarshal(raw, &args); err != nil {
		return nil, toolErrorf("arguments must be a JSON object")
	}
	var id string
	if err := json.Unmarshal(args["instance_id"], &id); err != nil || strings.TrimSpace(id) == "" {
		return nil, toolErrorf("instance_id is required: the id of the instance to run %s on (crow_list_instances lists them)", r.local.tool.Name)
	}
	delete(args, "instance_id")
	rest, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	self := r.s.cfg.Self.InstanceID
	if id == self {
		if r.local.tool.Name == toolSearch {
			if _, ok := args["instances"]; ok {
				return nil, toolErrorf("unknown argument \"instances\": on the router, instance_id alone selects the instance searched")
			}
		}
		return r.local.call(ctx, rest)
	}
	if r.s.cfg.Instances != nil {
		in, err := r.s.cfg.Instances.Get(id)
		switch {
		case errors.Is(err, registry.ErrNotFound):
			return nil, toolErrorf("no instance %q is registered; crow_list_instances lists the instances (this one is %q)", id, self)
		case err != nil:
			return nil, err
		case in.Revoked():
			return nil, toolErrorf("instance %q (%s) is revoked; calls are not routed to it", id, in.Name)
		}
	}
	if r.remote == nil {
		return nil, toolErrorf("instance %q is not this instance (%q): routing to peers arrives with federation; "+
			"call %s with instance_id %q, or call that instance's own gateway", id, self, r.local.tool.Name, self)
	}
	res, err := r.remote.CallTool(ctx, id, r.local.tool.Name, rest)
	if err != nil {
		return nil, toolErrorf("calling %s on instance %q: %v", r.local.tool.Name, id, err)
	}
	return res, nil
}
