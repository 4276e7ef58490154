package feeds_test

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/crow-sync/crow/feed"
	crowsync "github.com/crow-sync/crow/sync"
	"github.com/crow-sync/crow/sync/protocol"
	"github.com/crow-sync/crow/sync/wire"
)

func noTrouble(t *testing.T, ins ...*inst) {
	t.Helper()
	for _, in := range ins {
		for _, k := range []protocol.EventKind{protocol.EventRejected, protocol.EventFork, protocol.EventStoreFailed} {
			if n := in.eventsOf(k); n > 0 {
				in.mu.Lock()
				t.Errorf("%s: %d %v events, e.g. %+v", in.name, n, k, in.events)
				in.mu.Unlock()
			}
		}
	}
}

// Three instances on real badger stores converge while the author keeps
// appending: 10k entries in batches of 250 fetched 64 at a time, so replicas
// keep holding prefixes of longer heads and receive ranges proven against
// newer ones (since = start).
func TestThreeNodesConvergeWhileAppending(t *testing.T) {
	c := newCluster(t, 64, "a", "b", "c")
	a, b, cc := c.n("a"), c.n("b"), c.n("c")
	b.appendN(300, 100, 30, "b")
	c.start("a", "b", "c")
	c.start("b", "a", "c")
	c.start("c", "a", "b")
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 40; i++ {
			a.appendN(250, 64, 250, "a")
		}
	}()
	<-done
	c.waitFor("all converge", func() bool {
		return b.has(a) && cc.has(a) && a.has(b) && cc.has(b)
	})
	noTrouble(t, a, b, cc)
	// Heads announce what is stored, with the newest verified head.
	hs, err := cc.feeds.Heads()
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != 2 {
		t.Fatalf("c announces %d heads, want a's and b's", len(hs))
	}
	for _, h := range hs {
		var sh feed.Head
		if err := sh.UnmarshalBinary(h.Signed); err != nil || h.Length != sh.Length {
			t.Fatalf("head %+v: %v", h, err)
		}
	}
	if n, _ := cc.stored.Load(a.self()); n != uint64(10000) {
		t.Fatalf("OnStored last reported %v for a's feed", n)
	}
}

// b fetched only a prefix of a's long batch from a; a goes away. c gets that
// prefix from b (a relay holding a prefix proves it against the longer head),
// then a comes back with more appended and c finishes from a: ranges proven
// against a newer head, with since = start, re-proved against the head c
// holds until they reach it.
func TestRelayedPrefixThenNewerHead(t *testing.T) {
	c := newCluster(t, 100, "a", "b", "c")
	a, b, cc := c.n("a"), c.n("b"), c.n("c")
	a.appendN(3000, 50, 3000, "a")
	r, err := a.feeds.ReadRange(wire.FeedKey(a.self()), 0, 1000, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.feeds.VerifyAndStore(r); err != nil {
		t.Fatal(err)
	}
	if st, _ := b.reps.State(a.self()); st.Length != 1000 || st.Head.Length != 3000 {
		t.Fatalf("b holds %+v", st)
	}
	c.start("b", "c")
	c.start("c", "b")
	c.waitFor("c gets the prefix through b", func() bool { return cc.length(a.self()) == 1000 })
	if st, _ := cc.reps.State(a.self()); st.Head.Length != 3000 {
		t.Fatalf("c holds %+v", st)
	}
	a.appendN(500, 50, 500, "a2")
	c.start("a", "c")
	c.waitFor("c and b get all of a", func() bool { return cc.has(a) && b.has(a) })
	noTrouble(t, a, b, cc)
}

// tampering serves ranges with one entry altered.
type tampering struct {
	crowsync.Feeds
	n atomic.Int64
}

func (t *tampering) ReadRange(f wire.FeedKey, start, end uint64, maxBytes int) (wire.Range, error) {
	r, err := t.Feeds.ReadRange(f, start, end, maxBytes)
	if err == nil {
		t.n.Add(1)
		e := append([]byte(nil), r.Entries[len(r.Entries)/2]...)
		e[0] ^= 1
		r.Entries[len(r.Entries)/2] = e
	}
	return r, err
}

// A relay that alters entries is rejected: nothing of its ranges is stored.
func TestTamperedRangeRejected(t *testing.T) {
	c := newCluster(t, 64, "a", "b", "c")
	a, b, cc := c.n("a"), c.n("b"), c.n("c")
	a.appendN(200, 40, 50, "a")
	c.start("a", "b")
	c.start("b", "a")
	c.waitFor("b has a", func() bool { return b.has(a) })
	a.stop()
	b.stop()
	tb := &tampering{Feeds: b.feeds}
	b.serving = tb
	c.start("b", "c")
	c.start("c", "b")
	c.waitFor("rejection", func() bool { return cc.eventsOf(protocol.EventRejected) > 0 })
	if n := cc.length(a.self()); n != 0 {
		t.Fatalf("c stored %d entries from a tampering relay", n)
	}
	if _, ok := cc.stored.Load(a.self()); ok {
		t.Fatal("OnStored called for a rejected range")
	}
	// The honest author serves c.
	c.start("a", "c")
	c.waitFor("c gets a from a", func() bool { return cc.has(a) })
}

// A clone of a (same feed key, other history) is reported as a fork by the
// replica that holds a's feed and by a itself (a fork of its own key); the
// replica keeps what it verified.
func TestForkReported(t *testing.T) {
	c := newCluster(t, 64, "a", "b")
	a, b := c.n("a"), c.n("b")
	clone := newInst(t, "clone", a.key, newKey(t))
	c.nodes["clone"] = clone
	a.appendN(100, 30, 25, "a")
	clone.appendN(150, 30, 50, "clone")
	c.start("a", "b")
	c.start("b", "a", "clone")
	c.waitFor("b has a", func() bool { return b.has(a) })
	c.start("clone", "b", "a")
	c.waitFor("fork on b", func() bool { return b.eventsOf(protocol.EventFork) > 0 })
	c.waitFor("own-feed fork on a", func() bool { return a.eventsOf(protocol.EventFork) > 0 })
	fe, err := b.reps.Fork(a.self())
	if err != nil || fe == nil {
		t.Fatalf("fork evidence not recorded: %v", err)
	}
	if err := fe.Verify(); err != nil {
		t.Fatal(err)
	}
	if !b.has(a) {
		t.Fatal("b's replica of a changed")
	}
	// Further ranges of the forked feed are refused.
	r, err := a.feeds.ReadRange(wire.FeedKey(a.self()), 0, 100, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.feeds.VerifyAndStore(r); !errors.Is(err, crowsync.ErrFork) {
		t.Fatalf("range of a forked feed: %v", err)
	}
}

// After a restart (badger reopened) only the entries appended meanwhile
// cross the wire.
func TestRestartResumesWithNewEntriesOnly(t *testing.T) {
	c := newCluster(t, 64, "a", "b")
	a, b := c.n("a"), c.n("b")
	a.appendN(1000, 40, 100, "old")
	c.start("a", "b")
	c.start("b", "a")
	c.waitFor("first sync", func() bool { return b.has(a) })
	b.close()
	a.appendN(150, 40, 50, "new")
	b.open()
	c.start("b", "a")
	c.waitFor("catch-up", func() bool { return b.has(a) })
	st := b.status()[a.id]
	if st.EntriesReceived != 150 {
		t.Fatalf("b received %d entries after the restart, want the 150 new ones", st.EntriesReceived)
	}
	noTrouble(t, a, b)
}
