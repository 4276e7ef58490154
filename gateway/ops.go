package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crow-sync/crow/app"
)

// This file adapts the operations of package app to REST and MCP: one
// handler each, for every entry of app's table. Nothing here knows what an
// operation does; errors are mapped from their kind, once per surface.

// opRoute is the route of one REST operation.
func (s *Server) opRoute(op app.Op) route {
	sp := op.Info()
	acc := ownerOnly
	if sp.Access == app.Public {
		acc = public
	}
	return route{method: sp.Method, path: sp.Path, access: acc, anyQuery: true, op: op, h: s.restHandler(op), maxBody: sp.MaxBody,
		doc: routeDoc{tag: sp.Tag, summary: sp.Summary}}
}

// restHandler serves op over REST: bind, call, answer.
func (s *Server) restHandler(op app.Op) http.Handler {
	sp := op.Info()
	info := op.Input()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body []byte
		if info.Body || (r.Body != nil && r.Body != http.NoBody) {
			if ct := r.Header.Get("Content-Type"); info.Body && ct != "" && !strings.HasPrefix(ct, "application/json") {
				writeError(w, http.StatusUnsupportedMediaType, "content type must be application/json, got %q", ct)
				return
			}
			b, err := io.ReadAll(r.Body) // capped by the route (limitBody)
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				writeError(w, http.StatusRequestEntityTooLarge, "request body larger than %d bytes", tooBig.Limit)
				return
			} else if err != nil {
				writeError(w, http.StatusBadRequest, "reading the request body: %s", err.Error())
				return
			}
			body = b
		}
		q, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			writeError(w, http.StatusBadRequest, "malformed query string: %s", err.Error())
			return
		}
		in, err := info.BindREST(app.REST{Method: r.Method, Path: r.URL.Path, Value: r.PathValue, Query: q, Body: body})
		if err != nil {
			s.writeOpError(w, r, sp, err)
			return
		}
		ctx := app.WithCaller(r.Context(), app.Caller{Surface: app.SurfaceREST})
		out, err := s.app.Invoke(ctx, op, in)
		if err != nil {
			s.writeOpError(w, r, sp, err)
			return
		}
		if loc := op.Location(out); loc != "" {
			w.Header().Set("Location", loc)
		}
		if sp.NoStore {
			w.Header().Set("Cache-Control", "no-store")
		}
		if st, ok := out.(*app.Stream); ok {
			s.writeStream(w, r, sp, st)
			return
		}
		writeJSON(w, sp.SuccessStatus(), out)
	})
}

// writeStream answers with a streamed body. An error once bytes are out
// aborts the connection (the client sees a truncated body).
func (s *Server) writeStream(w http.ResponseWriter, r *http.Request, sp *app.Spec, st *app.Stream) {
	w.Header().Set("Content-Type", st.ContentType)
	w.WriteHeader(sp.SuccessStatus())
	if err := st.Write(w); err != nil {
		s.log.Error("streaming an answer failed", "op", sp.Name, "path", r.URL.Path, "err", err)
		panic(http.ErrAbortHandler)
	}
}

// writeOpError answers err with the status of its kind; an internal error
// is logged and answered with the request id only.
func (s *Server) writeOpError(w http.ResponseWriter, r *http.Request, sp *app.Spec, err error) {
	k := app.KindOf(r.Context(), err)
	if k == app.KindInternal {
		id := r.Context().Value(requestIDKey)
		s.log.Error("request failed", "op", sp.Name, "path", r.URL.Path, "request_id", id, "err", err)
		writeError(w, http.StatusInternalServerError, "internal error (request id %v)", id)
		return
	}
	if k == app.KindUnavailable && r.Context().Err() != nil {
		writeError(w, http.StatusServiceUnavailable, "request cancelled")
		return
	}
	writeError(w, k.HTTPStatus(), "%s", app.Message(err))
}

// KindMetaKey is the _meta key of a tool error result that carries the
// error's kind (app.Kind's name), so a federated caller maps it back.
const KindMetaKey = "crow/kind"

// toolErrorResult is the IsError result of a failed operation.
func (s *Server) toolErrorResult(ctx context.Context, name string, err error) *mcp.CallToolResult {
	k := app.KindOf(ctx, err)
	var res *mcp.CallToolResult
	switch k {
	case app.KindInternal:
		id := ctx.Value(requestIDKey)
		s.log.Error("mcp tool failed", "tool", name, "request_id", id, "err", err)
		res = mcp.NewToolResultErrorf("internal error in %s (request id %v); the crow daemon's log has the details", name, id)
	case app.KindUnavailable:
		if ctx.Err() != nil {
			res = mcp.NewToolResultError("the call was cancelled before it finished")
			break
		}
		fallthrough
	default:
		res = mcp.NewToolResultError(app.Message(err))
	}
	res.Meta = mcp.NewMetaFromMap(map[string]any{KindMetaKey: k.String()})
	return res
}

// opTool is the MCP tool of an operation.
func opTool(op app.Op) mcp.Tool {
	sp := op.Info()
	desc := sp.Description
	if desc == "" {
		desc = sp.Summary
	}
	in, _ := json.Marshal(op.Input().ToolInputSchema())
	out, _ := json.Marshal(app.OutputSchema(op.Output()))
	return mcp.Tool{
		Name: sp.Tool, Title: sp.Title, Description: desc,
		RawInputSchema: in, RawOutputSchema: out,
		Annotations: mcp.ToolAnnotation{Title: sp.Title, ReadOnlyHint: mcp.ToBoolPtr(sp.ReadOnly),
			DestructiveHint: mcp.ToBoolPtr(sp.Destructive), IdempotentHint: mcp.ToBoolPtr(sp.Idempotent || sp.ReadOnly),
			OpenWorldHint: mcp.ToBoolPtr(sp.OpenWorld)},
	}
}

// opToolCall runs op as an MCP tool: the peer allow-list, decode, call.
func (s *Server) opToolCall(op app.Op) func(ctx context.Context, args json.RawMessage) (any, error) {
	sp := op.Info()
	info := op.Input()
	return func(ctx context.Context, args json.RawMessage) (any, error) {
		caller := app.Caller{Surface: app.SurfaceMCP}
		peer, fromPeer := peerOf(ctx)
		if fromPeer {
			caller.Peer = peer
			ctx = app.WithCaller(ctx, caller)
			// Refused before the arguments are read; Config.PeerAllowed
			// narrows the table's allow-list (tests).
			err := s.app.CheckPeer(ctx, sp)
			if err == nil && s.cfg.PeerAllowed != nil && !s.cfg.PeerAllowed(sp.Tool) {
				err = s.app.CheckPeer(ctx, &app.Spec{Name: sp.Name, Tool: sp.Tool})
			}
			if err != nil {
				return nil, s.peerDenied(peer, sp, err)
			}
		}
		in, err := info.DecodeArgs(args)
		if err != nil {
			return nil, err
		}
		out, err := s.app.Invoke(app.WithCaller(ctx, caller), op, in)
		if fromPeer && errors.Is(err, app.ErrPeerDenied) {
			return nil, s.peerDenied(peer, sp, err)
		}
		return out, err
	}
}

// peerDenied logs and counts a peer's call outside the allow-list.
func (s *Server) peerDenied(peer string, sp *app.Spec, err error) error {
	s.metrics.peers.WithLabelValues("tool_denied").Inc()
	s.log.Warn("federation: peer called a tool outside the allow-list", "peer", peer, "tool", sp.Tool)
	return err
}

// mcpHandler adapts a tool's call to mcp-go: arguments in, structured
// result or tool error out.
func (s *Server) mcpHandler(t mcpTool) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, err := rawArguments(req)
		if err != nil {
			return s.toolErrorResult(ctx, t.tool.Name, app.Invalidf("%s", err.Error())), nil
		}
		v, err := t.call(ctx, args)
		if err != nil {
			return s.toolErrorResult(ctx, t.tool.Name, err), nil
		}
		if res, ok := v.(*mcp.CallToolResult); ok {
			return res, nil // a peer's answer, passed through
		}
		return mcp.NewToolResultStructuredOnly(v), nil
	}
}

// rawArguments returns the call's arguments as JSON ("{}" when absent).
func rawArguments(req mcp.CallToolRequest) (json.RawMessage, error) {
	switch a := req.GetRawArguments().(type) {
	case json.RawMessage:
		return a, nil
	case nil:
		return json.RawMessage("{}"), nil
	default:
		b, err := json.Marshal(a)
		if err != nil {
			return nil, fmt.Errorf("arguments are not JSON: %w", err)
		}
		return b, nil
	}
}
