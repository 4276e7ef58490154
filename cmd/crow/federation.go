package main

import (
	"crypto/ed25519"
	"fmt"
	"log/slog"
	"time"

	"github.com/crow-sync/crow/federation"
	"github.com/crow-sync/crow/home"
	"github.com/crow-sync/crow/registry"
)

// daemonFederation is the daemon's side of SPEC §9: the client that calls
// peers' /mcp with this instance's tokens, and the checks applied to peers
// calling ours.
type daemonFederation struct {
	client *federation.Client
	allow  federation.AllowList
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
			Self:   h.InstanceID,
			Tokens: federation.NewTokenSource(h.InstanceID, h.InstanceKey(), time.Now),
			Peers:  peers,
			Logger: log.With("component", "federation"),
		}),
		allow: federation.DefaultAllowList(),
		verify: func(token string) (string, error) {
			c, err := federation.Verify(token, h.InstanceID, time.Now(), keyOf)
			return c.Issuer, err
		},
	}
}
