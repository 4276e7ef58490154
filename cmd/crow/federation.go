package main

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/crow-sync/crow/federation"
	"github.com/crow-sync/crow/home"
	"github.com/crow-sync/crow/projects"
	"github.com/crow-sync/crow/registry"
)

// daemonFederation is the daemon's side of SPEC §9: the client that calls
// peers' /mcp with this instance's tokens, and the checks applied to peers
// calling ours.
type daemonFederation struct {
	client *federation.Client
	verify func(token string) (issuer string, err error)
}

// newFederation builds the federation client and token checks over the
// registry: a peer is any registered, non-revoked instance but this one,
// and its key is the one the master seed derives for its id.
func newFederation(h *home.Home, reg *registry.Registry, log *slog.Logger) *daemonFederation {
	keyOf := func(id string) (ed25519.PublicKey, error) {
		in, err := reg.Get(id)
		if err != nil {
			return nil, err
		}
		if in.Revoked() {
			return nil, fmt.Errorf("instance %s is revoked", id)
		}
		return h.Seed().InstancePublicKey(id), nil
	}
	peers := func() []federation.Peer {
		list := reg.Peers()
		out := make([]federation.Peer, 0, len(list))
		for _, in := range list {
			if in.Revoked() || in.ID == h.InstanceID {
				continue
			}
			// Never probed yet ("unknown") counts as online: the per-instance
			// deadline bounds a call to a peer that is in fact down.
			out = append(out, federation.Peer{ID: in.ID, Name: in.Name, GatewayURL: in.GatewayURL,
				Online: in.Status != registry.StatusOffline})
		}
		return out
	}
	return &daemonFederation{
		client: federation.NewClient(federation.ClientConfig{
			Self:     h.InstanceID,
			SelfName: h.Name,
			Tokens:   federation.NewTokenSource(h.InstanceID, h.InstanceKey(), nil),
			Peers:    peers,
			Logger:   log.With("component", "federation"),
		}),
		verify: func(token string) (string, error) {
			c, err := federation.Verify(token, h.InstanceID, time.Now(), keyOf)
			return c.Issuer, err
		},
	}
}

// forwardConsolidation sends a consolidation to home over federation.
func (f *daemonFederation) forwardConsolidation(reg *registry.Registry) func(ctx context.Context, project string, req projects.Request) (projects.Response, error) {
	return func(ctx context.Context, project string, req projects.Request) (projects.Response, error) {
		homeIn, err := reg.Home()
		if err != nil {
			return projects.Response{}, fmt.Errorf("no home instance is registered here: %w", err)
		}
		args, err := json.Marshal(struct {
			Project string `json:"project"`
			projects.Request
		}{project, req})
		if err != nil {
			return projects.Response{}, err
		}
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		res, err := f.client.CallTool(ctx, homeIn.ID, "update_project_state", args)
		if err != nil {
			return projects.Response{}, fmt.Errorf("calling home (%s): %w", homeIn.Name, err)
		}
		raw, err := json.Marshal(res.StructuredContent)
		if res.IsError || err != nil || res.StructuredContent == nil {
			msg := "no structured answer"
			for _, c := range res.Content {
				if tc, ok := c.(mcp.TextContent); ok {
					msg = tc.Text
				}
			}
			return projects.Response{}, fmt.Errorf("%w: home answered: %s", projects.ErrInvalid, msg)
		}
		var out projects.Response
		if err := json.Unmarshal(raw, &out); err != nil {
			return projects.Response{}, fmt.Errorf("decoding home's answer: %w", err)
		}
		return out, nil
	}
}
