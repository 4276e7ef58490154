package sync_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	stdsync "sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/crow-sync/crow/clock"
	crowsync "github.com/crow-sync/crow/sync"
	"github.com/crow-sync/crow/sync/internal/memfeed"
	"github.com/crow-sync/crow/sync/protocol"
	"github.com/crow-sync/crow/sync/transport"
	"github.com/crow-sync/crow/sync/wire"
)

// tnode is one instance in a test cluster.
type tnode struct {
	name  string
	key   ed25519.PrivateKey
	id    transport.PeerID
	feeds crowsync.Feeds
	mem   *memfeed.Feeds
	reg   *prometheus.Registry

	tr     transport.Transport
	node   *crowsync.Node
	cancel context.CancelFunc
	done   chan error

	mu     stdsync.Mutex
	events []crowsync.Event
	// traffic counts the Node's OnTraffic calls (ranges stored or served).
	traffic atomic.Int64
	// catchUp counts its OnCatchUp calls (ranges served short of the head).
	catchUp atomic.Int64
}

type cluster struct {
	t     *testing.T
	net   *transport.MemNetwork
	clock *clock.Fake
	nodes map[string]*tnode

	mu      stdsync.Mutex
	revoked map[transport.PeerID]bool // guarded by mu; refused by every node
}

func (c *cluster) admit(p transport.PeerID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.revoked[p]
}

func (c *cluster) revoke(p transport.PeerID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.revoked[p] = true
}

func newCluster(t *testing.T, names ...string) *cluster {
	c := &cluster{t: t, net: transport.NewMemNetwork(), clock: clock.NewFake(time.Unix(1_800_000_000, 0)), nodes: map[string]*tnode{},
		revoked: map[transport.PeerID]bool{}}
	for _, name := range names {
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		id, err := transport.PeerIDFromPublicKey(pub)
		if err != nil {
			t.Fatal(err)
		}
		mem := memfeed.New(priv, nil)
		c.nodes[name] = &tnode{name: name, key: priv, id: id, feeds: mem, mem: mem}
	}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			c.stop(n.name)
		}
	})
	return c
}

func (c *cluster) n(name string) *tnode { return c.nodes[name] }

func feedKey(n *tnode) wire.FeedKey { return n.mem.Self() }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// start runs name's Node on a fresh in-memory transport, keeping peers connected.
func (c *cluster) start(name string, peers ...string) {
	c.t.Helper()
	n := c.nodes[name]
	n.tr = c.net.Join(n.id, transport.AdmitFunc(c.admit))
	n.reg = prometheus.NewRegistry()
	node, err := crowsync.NewNode(crowsync.Config{
		Transport: n.tr,
		Feeds:     n.feeds,
		Self:      feedKey(n),
		Clock:     c.clock,
		// A tick per waitFor step, as Advance(fakeStep) fires each one.
		TickInterval: fakeStep,
		Logger:       quiet,
		Registerer:   n.reg,
		Protocol: protocol.Config{
			MaxBatchEntries: 64,
			Backoff:         protocol.Backoff{Min: 100 * time.Millisecond, Max: time.Second},
		},
		OnEvent: func(ev crowsync.Event) {
			n.mu.Lock()
			n.events = append(n.events, ev)
			n.mu.Unlock()
		},
		OnTraffic: func() { n.traffic.Add(1) },
		OnCatchUp: func() { n.catchUp.Add(1) },
	})
	if err != nil {
		c.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.node, n.cancel, n.done = node, cancel, make(chan error, 1)
	go func() { n.done <- node.Serve(ctx) }()
	var ps []crowsync.Peer
	for _, p := range peers {
		ps = append(ps, crowsync.Peer{ID: c.nodes[p].id})
	}
	if err := node.SetPeers(context.Background(), ps); err != nil {
		c.t.Fatal(err)
	}
}

// stop ends name's Node (its feeds stay: they are its disk).
func (c *cluster) stop(name string) {
	n := c.nodes[name]
	if n.cancel == nil {
		return
	}
	n.cancel()
	if err := <-n.done; err != context.Canceled {
		c.t.Errorf("%s: Serve returned %v", name, err)
	}
	_ = n.tr.Close()
	n.cancel = nil
}

// fakeStep is how far waitFor moves the fake clock per poll.
const fakeStep = 50 * time.Millisecond

// waitFor polls cond, advancing the fake clock so redials and timeouts happen.
func (c *cluster) waitFor(what string, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
		c.clock.Advance(fakeStep)
	}
}

// has reports whether node holds exactly the entries of src's own feed.
func (c *cluster) has(node, src string) bool {
	want := c.n(src).mem.Entries(feedKey(c.n(src)))
	got := c.n(node).mem.Entries(feedKey(c.n(src)))
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if string(got[i]) != string(want[i]) {
			c.t.Fatalf("%s holds a different entry %d of %s's feed", node, i, src)
		}
	}
	return true
}

func (c *cluster) status(name string) map[transport.PeerID]crowsync.PeerStatus {
	c.t.Helper()
	st, err := c.n(name).node.Status(context.Background())
	if err != nil {
		c.t.Fatal(err)
	}
	out := map[transport.PeerID]crowsync.PeerStatus{}
	for _, s := range st {
		out[s.Peer] = s
	}
	return out
}

func (n *tnode) eventsOf(kind protocol.EventKind) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	k := 0
	for _, ev := range n.events {
		if ev.Kind == kind {
			k++
		}
	}
	return k
}

func appendN(n *tnode, count int, tag string) {
	var es [][]byte
	for i := 0; i < count; i++ {
		es = append(es, []byte(fmt.Sprintf("%s-%d", tag, i)))
	}
	n.mem.Append(es...)
}

func newMemWithKey(k ed25519.PrivateKey) *memfeed.Feeds { return memfeed.New(k, nil) }

// waitReal polls cond without moving the fake clock.
func waitReal(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(time.Millisecond)
	}
}

// counterSum sums a counter family of n's registry.
func counterSum(t *testing.T, n *tnode, name string) float64 {
	t.Helper()
	mfs, err := n.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var v float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			v += m.GetCounter().GetValue()
		}
	}
	return v
}
