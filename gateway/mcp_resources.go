package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crow-sync/crow/app"
)

// The MCP resources and prompts of app's tables (app/resources.go,
// app/prompts.go), served on /mcp only: they are the owner's views of this
// instance, so a federated peer gets none (a resources/read or prompts/get
// with a peer token is refused). Their failures are JSON-RPC errors (MCP has
// no IsError result for them) saying what to fix; an internal error is
// logged and answered with the request id only.

// addResourcesAndPrompts registers app's resources, templates and prompts on
// ms, and lists the concrete resources of each template (recent memories,
// each project's state) through hooks' AfterListResources: mcp-go lists only
// registered resources, and these change with every write.
func (s *Server) addResourcesAndPrompts(ms *server.MCPServer, hooks *server.Hooks) {
	for _, r := range app.Resources() {
		h := s.resourceHandler(r)
		if r.Template {
			ms.AddResourceTemplate(mcp.NewResourceTemplate(r.URI, r.Name,
				mcp.WithTemplateTitle(r.Title), mcp.WithTemplateDescription(r.Description),
				mcp.WithTemplateMIMEType(app.ResourceMIMEType)),
				func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
					return h(ctx, req)
				})
			continue
		}
		ms.AddResource(mcp.NewResource(r.URI, r.Name, mcp.WithResourceTitle(r.Title),
			mcp.WithResourceDescription(r.Description), mcp.WithMIMEType(app.ResourceMIMEType)), h)
	}
	hooks.AddAfterListResources(func(ctx context.Context, _ any, _ *mcp.ListResourcesRequest, res *mcp.ListResourcesResult) {
		if res == nil || res.NextCursor != "" {
			return // a later page of the static ones follows: add the listed ones to the last
		}
		if _, fromPeer := peerOf(ctx); fromPeer {
			res.Resources = nil
			return
		}
		static := map[string]bool{}
		for _, r := range res.Resources {
			static[r.URI] = true
		}
		for _, ref := range s.app.ListResources(ctx) {
			if static[ref.URI] {
				continue
			}
			res.Resources = append(res.Resources, mcp.NewResource(ref.URI, ref.Name, mcp.WithResourceTitle(ref.Title),
				mcp.WithResourceDescription(ref.Description), mcp.WithMIMEType(app.ResourceMIMEType)))
		}
	})
	for _, p := range app.Prompts() {
		opts := []mcp.PromptOption{mcp.WithPromptTitle(p.Title), mcp.WithPromptDescription(p.Description)}
		for _, a := range p.Args {
			aopts := []mcp.ArgumentOption{mcp.ArgumentDescription(a.Description)}
			if a.Required {
				aopts = append(aopts, mcp.RequiredArgument())
			}
			opts = append(opts, mcp.WithArgument(a.Name, aopts...))
		}
		ms.AddPrompt(mcp.NewPrompt(p.Name, opts...), s.promptHandler(p))
	}
}

// errPeerNoResources refuses resources and prompts to federated peers.
var errPeerNoResources = errors.New("resources and prompts are for the owner's own clients, not for federated peers")

// resourceHandler reads resource r: the template's variables, the read,
// the answer as JSON text.
func (s *Server) resourceHandler(r *app.Resource) server.ResourceHandlerFunc {
	return func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		if _, fromPeer := peerOf(ctx); fromPeer {
			return nil, errPeerNoResources
		}
		vars := map[string]string{}
		for _, name := range r.Vars {
			switch v := req.Params.Arguments[name].(type) {
			case string:
				vars[name] = v
			case []string:
				if len(v) == 1 {
					vars[name] = v[0]
				}
			case []any:
				if len(v) == 1 {
					vars[name], _ = v[0].(string)
				}
			}
		}
		ctx = app.WithCaller(ctx, app.Caller{Surface: app.SurfaceMCP})
		out, err := r.Read(s.app, ctx, vars)
		if err != nil {
			return nil, s.rpcFailure(ctx, "resources/read "+req.Params.URI, err)
		}
		text, err := json.Marshal(out)
		if err != nil {
			return nil, s.rpcFailure(ctx, "resources/read "+req.Params.URI, err)
		}
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: app.ResourceMIMEType, Text: string(text)}}, nil
	}
}

// promptHandler renders prompt p.
func (s *Server) promptHandler(p *app.Prompt) server.PromptHandlerFunc {
	return func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		if _, fromPeer := peerOf(ctx); fromPeer {
			return nil, errPeerNoResources
		}
		ctx = app.WithCaller(ctx, app.Caller{Surface: app.SurfaceMCP})
		out, err := s.app.RenderPrompt(ctx, p, req.Params.Arguments)
		if err != nil {
			return nil, s.rpcFailure(ctx, "prompts/get "+p.Name, err)
		}
		return mcp.NewGetPromptResult(out.Description, []mcp.PromptMessage{
			mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent(out.Text)),
		}), nil
	}
}

// rpcFailure is the error a resource or prompt handler returns: the
// message of a caller's error, or the request id of an internal one.
func (s *Server) rpcFailure(ctx context.Context, what string, err error) error {
	if app.KindOf(ctx, err) == app.KindInternal {
		id := ctx.Value(requestIDKey)
		s.log.Error("mcp request failed", "request", what, "request_id", id, "err", err)
		return fmt.Errorf("internal error in %s (request id %v); the crow daemon's log has the details", what, id)
	}
	return errors.New(app.Message(err))
}
