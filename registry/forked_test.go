package registry_test

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"sync"
	"testing"

	"github.com/crow-sync/crow/registry"
)

// An instance whose feed forked (the own one: a restored copy) shows
// forked in the merged view, not online.
func TestForkedFeedShowsForked(t *testing.T) {
	e := newEnv(t, "sat-1", registry.RoleSatellite)
	cfg := e.config("sat-1")
	var mu sync.Mutex
	forked := map[string]bool{}
	cfg.FeedForked = func(k ed25519.PublicKey) bool {
		mu.Lock()
		defer mu.Unlock()
		return forked[hex.EncodeToString(k)]
	}
	reg, err := registry.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	status := func() string {
		for _, in := range reg.List() {
			if in.ID == "sat-1" {
				return in.Status
			}
		}
		return "absent"
	}
	if got := status(); got != registry.StatusOnline {
		t.Fatalf("before the fork: %q", got)
	}
	mu.Lock()
	forked[hex.EncodeToString(cfg.SelfKey.Public().(ed25519.PublicKey))] = true
	mu.Unlock()
	if got := status(); got != registry.StatusForked {
		t.Fatalf("after the fork: %q", got)
	}
}
