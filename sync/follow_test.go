package sync_test

import (
	"context"
	stdsync "sync"
	"testing"
	"time"

	crowsync "github.com/crow-sync/crow/sync"
)

// followA runs FollowPeers for a: its peer list is *peers, re-read on every
// value sent on the returned channel.
func followA(t *testing.T, c *cluster, peers *[]crowsync.Peer, farewell func(crowsync.PeerID) time.Duration) chan struct{} {
	t.Helper()
	changed := make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	first := make(chan struct{})
	var once stdsync.Once
	list := func() []crowsync.Peer {
		defer once.Do(func() { close(first) })
		c.mu.Lock()
		defer c.mu.Unlock()
		return append([]crowsync.Peer(nil), *peers...)
	}
	go func() { done <- crowsync.FollowPeers(ctx, c.n("a").node, list, changed, farewell) }()
	<-first // FollowPeers holds the first list before the test changes it
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("FollowPeers: %v", err)
		}
	})
	return changed
}

// A revoked peer keeps its open session for its farewell, long enough to
// fetch the entry that revokes it, and is cut when the farewell ends.
func TestFollowPeersFarewell(t *testing.T) {
	c := newCluster(t, "a", "b")
	c.start("a", "b")
	c.start("b", "a")
	peers := []crowsync.Peer{{ID: c.n("b").id}}
	changed := followA(t, c, &peers, func(crowsync.PeerID) time.Duration { return 5 * time.Second })
	c.waitFor("connected", func() bool { return c.status("a")[c.n("b").id].Connected })

	// The revocation: b is refused from now on, and a's feed gets the
	// entry that says so.
	c.revoke(c.n("b").id)
	c.mu.Lock()
	peers = nil
	c.mu.Unlock()
	appendN(c.n("a"), 1, "revoked b")
	revokedAt := c.clock.Now()
	changed <- struct{}{}
	waitReal(t, func() bool { return c.has("b", "a") }) // pushed, no clock move
	if !c.status("a")[c.n("b").id].Connected {
		t.Fatal("b cut before its farewell ended")
	}
	c.waitFor("b cut after its farewell", func() bool { return !c.status("a")[c.n("b").id].Connected })
	if got := c.clock.Since(revokedAt); got < 5*time.Second {
		t.Fatalf("b cut %s after its revocation, before its 5s farewell ended", got)
	}
	// Its redials are refused.
	c.waitFor("b's dials refused", func() bool { return c.status("b")[c.n("a").id].DialFailures >= 2 })
	if c.status("a")[c.n("b").id].Connected {
		t.Fatal("revoked peer reconnected")
	}
}

// A peer with no farewell (paused, removed) is cut at once.
func TestFollowPeersNoFarewell(t *testing.T) {
	c := newCluster(t, "a", "b")
	c.start("a", "b")
	c.start("b", "a")
	peers := []crowsync.Peer{{ID: c.n("b").id}}
	changed := followA(t, c, &peers, nil)
	c.waitFor("connected", func() bool { return c.status("a")[c.n("b").id].Connected })
	c.revoke(c.n("b").id)
	c.mu.Lock()
	peers = nil
	c.mu.Unlock()
	changed <- struct{}{}
	waitReal(t, func() bool { return !c.status("a")[c.n("b").id].Connected })
}
