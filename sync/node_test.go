package sync_test

import (
	"errors"
	"testing"
	"time"

	"github.com/crow-sync/crow/internal/testhold"
	crowsync "github.com/crow-sync/crow/sync"
	"github.com/crow-sync/crow/sync/protocol"
	"github.com/crow-sync/crow/sync/wire"
)

func TestTwoNodesConverge(t *testing.T) {
	c := newCluster(t, "a", "b")
	appendN(c.n("a"), 300, "a") // more than one batch (64 in tests)
	appendN(c.n("b"), 5, "b")
	c.start("a", "b")
	c.start("b", "a")
	c.waitFor("a and b converge", func() bool { return c.has("a", "b") && c.has("b", "a") })

	st := c.status("b")[c.n("a").id]
	if !st.Connected || st.EntriesReceived != 300 {
		t.Fatalf("b's status of a: %+v", st)
	}
	for _, f := range st.Feeds {
		if f.Lag != 0 {
			t.Fatalf("lag after convergence: %+v", f)
		}
	}
}

// TestTrafficReportsRangesStoredAndServed: OnTraffic (the daemon's
// foreground signal) is called for each range a Node serves and each range it
// stores, and not while there is nothing to replicate; OnCatchUp for each
// range served that leaves the peer more to fetch.
func TestTrafficReportsRangesStoredAndServed(t *testing.T) {
	c := newCluster(t, "a", "b")
	appendN(c.n("a"), 300, "a") // 5 ranges of at most 64
	c.start("a", "b")
	c.start("b", "a")
	c.waitFor("b holds a's feed", func() bool { return c.has("b", "a") })
	served, stored := c.n("a").traffic.Load(), c.n("b").traffic.Load()
	if served < 5 || stored < 5 {
		t.Fatalf("traffic: a (serving 300 entries) %d, b (storing them) %d; want at least 5 ranges each", served, stored)
	}
	for range 20 {
		c.clock.Advance(fakeStep)
	}
	if a, b := c.n("a").traffic.Load(), c.n("b").traffic.Load(); a != served || b != stored {
		t.Fatalf("traffic while idle: a %d -> %d, b %d -> %d", served, a, stored, b)
	}
	// OnCatchUp: each range a served short of its head of 300 (the first
	// four of five), none for the last; b served nothing.
	if a, b := c.n("a").catchUp.Load(), c.n("b").catchUp.Load(); a != 4 || b != 0 {
		t.Fatalf("OnCatchUp: a %d, b %d; want 4 and 0", a, b)
	}
}

func TestThreeNodesConverge(t *testing.T) {
	c := newCluster(t, "home", "lap", "vps")
	appendN(c.n("home"), 10, "h")
	appendN(c.n("lap"), 70, "l")
	appendN(c.n("vps"), 130, "v")
	c.start("home", "lap", "vps")
	c.start("lap", "home", "vps")
	c.start("vps", "home", "lap")
	c.waitFor("all converge", func() bool {
		for _, a := range []string{"home", "lap", "vps"} {
			for _, b := range []string{"home", "lap", "vps"} {
				if !c.has(a, b) {
					return false
				}
			}
		}
		return true
	})
	// Single flight per feed: each feed crossed into each node exactly once,
	// whichever peers it came from.
	for _, name := range []string{"home", "lap", "vps"} {
		var got uint64
		for _, s := range c.status(name) {
			got += s.EntriesReceived
		}
		var want uint64
		for _, o := range []string{"home", "lap", "vps"} {
			if o != name {
				want += c.n(o).mem.Len(feedKey(c.n(o)))
			}
		}
		if got != want {
			t.Errorf("%s received %d entries, want %d (each exactly once)", name, got, want)
		}
	}
}

func TestOfflineCatchUpOnlyNewEntries(t *testing.T) {
	c := newCluster(t, "a", "b")
	appendN(c.n("a"), 100, "old")
	c.start("a", "b")
	c.start("b", "a")
	c.waitFor("first sync", func() bool { return c.has("b", "a") })

	c.stop("b") // b goes offline; its feeds (disk) stay
	c.waitFor("a sees b gone", func() bool { return !c.status("a")[c.n("b").id].Connected })
	appendN(c.n("a"), 50, "new")
	if st := c.status("a")[c.n("b").id]; st.Feeds[0].Peer != 0 && st.Connected {
		t.Fatalf("unexpected status %+v", st)
	}

	c.start("b", "a")
	c.waitFor("catch up", func() bool { return c.has("b", "a") })
	if got := c.status("b")[c.n("a").id].EntriesReceived; got != 50 {
		t.Fatalf("b received %d entries after reconnecting, want only the 50 new", got)
	}
	if got := c.status("a")[c.n("b").id].EntriesSent; got != 150 {
		t.Fatalf("a sent %d entries to b in total, want 100+50", got)
	}
	if got := counterSum(t, c.n("b"), "crow_sync_entries_received_total"); got != 50 {
		t.Fatalf("metric entries received = %v, want 50", got)
	}
}

// A's entries reach C through home while A is offline; A and C are never
// online together.
func TestReplicaServedOnward(t *testing.T) {
	c := newCluster(t, "a", "home", "c")
	appendN(c.n("a"), 90, "a")
	c.start("home", "a", "c")
	c.start("a", "home")
	c.waitFor("home has a", func() bool { return c.has("home", "a") })
	c.stop("a")
	appendN(c.n("c"), 3, "c")
	c.start("c", "home")
	c.waitFor("c has a via home", func() bool { return c.has("c", "a") })
	c.waitFor("home has c", func() bool { return c.has("home", "c") })
	// And back: a comes online later and gets c's entries from home.
	c.stop("c")
	c.start("a", "home")
	c.waitFor("a has c via home", func() bool { return c.has("a", "c") })
}

// tamperFeeds serves one feed with a flipped byte.
type tamperFeeds struct {
	crowsync.Feeds
	feed wire.FeedKey
}

func (f tamperFeeds) ReadRange(k wire.FeedKey, s, e uint64, max int) (wire.Range, error) {
	r, err := f.Feeds.ReadRange(k, s, e, max)
	if err == nil && k == f.feed {
		r.Entries[0] = append([]byte("x"), r.Entries[0][1:]...)
	}
	return r, err
}

func TestTamperedRangeRejectedSyncContinues(t *testing.T) {
	c := newCluster(t, "a", "evil", "b")
	appendN(c.n("a"), 20, "a")
	appendN(c.n("evil"), 7, "e")
	// evil gets a's feed honestly, then serves it tampered.
	c.start("a", "evil")
	c.start("evil", "a")
	c.waitFor("evil has a", func() bool { return c.has("evil", "a") })
	c.stop("a")
	c.stop("evil")
	c.n("evil").feeds = tamperFeeds{Feeds: c.n("evil").mem, feed: feedKey(c.n("a"))}

	c.start("evil", "b")
	c.start("b", "evil")
	c.waitFor("b has evil's own feed", func() bool { return c.has("b", "evil") })
	c.waitFor("rejection", func() bool { return c.n("b").eventsOf(protocol.EventRejected) > 0 })
	if n := c.n("b").mem.Len(feedKey(c.n("a"))); n != 0 {
		t.Fatalf("b stored %d entries of a tampered range", n)
	}
	if got := counterSum(t, c.n("b"), "crow_sync_rejected_total"); got < 1 {
		t.Fatalf("rejections metric = %v", got)
	}
	// Sync goes on with an honest peer.
	c.start("a", "b")
	c.stop("b")
	c.start("b", "evil", "a")
	c.waitFor("b has a from a", func() bool { return c.has("b", "a") })
}

func TestLivePush(t *testing.T) {
	c := newCluster(t, "a", "b")
	c.start("a", "b")
	c.start("b", "a")
	c.waitFor("connected", func() bool { return c.status("b")[c.n("a").id].Connected })
	for i := 1; i <= 3; i++ {
		c.n("a").mem.Append([]byte{byte(i)})
		// No clock advance: the append is pushed, not polled.
		waitReal(t, func() bool { return c.n("b").mem.Len(feedKey(c.n("a"))) == uint64(i) })
	}
	if got := c.status("b")[c.n("a").id].EntriesReceived; got != 3 {
		t.Fatalf("received %d, want 3", got)
	}
}

func TestForkStopsFeedWithPeer(t *testing.T) {
	c := newCluster(t, "a", "clone", "b")
	// clone has a's key (a cloned machine) and wrote different entries.
	c.n("clone").mem = newMemWithKey(c.n("a").key)
	c.n("clone").feeds = c.n("clone").mem
	appendN(c.n("a"), 5, "a")
	appendN(c.n("clone"), 5, "clone")
	c.start("a", "b")
	c.start("b", "a", "clone")
	c.waitFor("b has a", func() bool { return c.has("b", "a") })
	c.start("clone", "b")
	c.waitFor("fork event", func() bool { return c.n("b").eventsOf(protocol.EventFork) > 0 })
	st := c.status("b")[c.n("clone").id]
	stopped := false
	for _, f := range st.Feeds {
		if f.Feed == feedKey(c.n("a")) && f.Stopped {
			stopped = true
		}
	}
	if !stopped {
		t.Fatalf("feed not stopped with the forking peer: %+v", st)
	}
	if !c.has("b", "a") {
		t.Fatal("b's copy of a changed")
	}
}

func TestReconnectAfterPartition(t *testing.T) {
	c := newCluster(t, "a", "b")
	c.start("a", "b")
	c.start("b", "a")
	c.waitFor("connected", func() bool { return c.status("a")[c.n("b").id].Connected })
	c.net.Partition(c.n("a").id, c.n("b").id)
	c.waitFor("down", func() bool { return !c.status("a")[c.n("b").id].Connected })
	appendN(c.n("a"), 10, "p")
	// Redials fail while partitioned; the failures back off.
	c.waitFor("dial failures", func() bool { return c.status("a")[c.n("b").id].DialFailures >= 2 })
	c.net.Heal(c.n("a").id, c.n("b").id)
	c.waitFor("reconnected and synced", func() bool { return c.has("b", "a") })
}

func TestRevokeDisconnects(t *testing.T) {
	c := newCluster(t, "a", "b")
	c.start("a", "b")
	c.start("b", "a")
	c.waitFor("connected", func() bool { return c.status("a")[c.n("b").id].Connected })
	c.revoke(c.n("b").id)
	if err := c.n("a").node.Revoke(t.Context(), c.n("b").id); err != nil {
		t.Fatal(err)
	}
	c.waitFor("disconnected", func() bool { return !c.status("a")[c.n("b").id].Connected })
	// b keeps redialling a; the admission check refuses it.
	c.waitFor("b's dials refused", func() bool { return c.status("b")[c.n("a").id].DialFailures >= 3 })
	if c.status("a")[c.n("b").id].Connected {
		t.Fatal("revoked peer reconnected")
	}
}

func TestNodeStopped(t *testing.T) {
	c := newCluster(t, "a")
	c.start("a")
	c.stop("a")
	if _, err := c.n("a").node.Status(t.Context()); !errors.Is(err, crowsync.ErrStopped) {
		t.Fatalf("Status after stop: %v", err)
	}
}

// storeGate is Feeds whose VerifyAndStore can be held (hold.Arm), holding
// the Node's loop inside a pass.
type storeGate struct {
	crowsync.Feeds
	hold *testhold.Point
}

func (g *storeGate) VerifyAndStore(r crowsync.Range) (crowsync.Head, error) {
	g.hold.Here()
	return g.Feeds.VerifyAndStore(r)
}

// TestStatusWhileLoopBusy: while the loop is held inside a pass (storing a
// range), Status answers after statusWait with the state the loop published
// at the end of its last pass, instead of waiting for the pass; once the loop
// is free it answers with the current state again.
func TestStatusWhileLoopBusy(t *testing.T) {
	c := newCluster(t, "a", "b")
	g := &storeGate{Feeds: c.n("b").feeds, hold: testhold.New()}
	c.n("b").feeds = g
	t.Cleanup(g.hold.Release) // before the cluster's cleanup stops the nodes
	appendN(c.n("a"), 3, "a")
	c.start("a", "b")
	c.start("b", "a")
	c.waitFor("b holds a's 3 entries", func() bool { return c.has("b", "a") })
	a := c.n("a").id
	if st := c.status("b")[a]; !st.Connected || st.EntriesReceived != 3 {
		t.Fatalf("b's status of a before: %+v", st)
	}

	g.hold.Arm()
	appendN(c.n("a"), 2, "a2") // pushed to b, whose loop blocks storing it
	<-g.hold.Entered()
	got := make(chan []crowsync.PeerStatus)
	go func() {
		st, err := c.n("b").node.Status(t.Context())
		if err != nil {
			t.Error(err)
		}
		got <- st
	}()
	var st []crowsync.PeerStatus
	deadline := time.Now().Add(10 * time.Second)
	for st == nil {
		if time.Now().After(deadline) {
			t.Fatal("Status did not answer while the loop was held")
		}
		select {
		case st = <-got:
		case <-time.After(time.Millisecond):
			c.clock.Advance(time.Millisecond) // the loop is held: only Status's timer moves
		}
		if st == nil && c.n("b").mem.Len(feedKey(c.n("a"))) != 3 {
			t.Fatal("the range was stored while the loop was held")
		}
	}
	if len(st) != 1 || st[0].Peer != a || !st[0].Connected || st[0].EntriesReceived != 3 {
		t.Fatalf("status while the loop is held: %+v, want a connected with 3 entries received", st)
	}

	g.hold.Release()
	c.waitFor("b holds a's 5 entries", func() bool { return c.has("b", "a") })
	if st := c.status("b")[a]; !st.Connected || st.EntriesReceived != 5 {
		t.Fatalf("b's status of a after: %+v", st)
	}
}
