package feeds_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	stdsync "sync"
	"testing"
	"time"

	"github.com/crow-sync/crow/clock"
	"github.com/crow-sync/crow/feed"
	"github.com/crow-sync/crow/store"
	crowsync "github.com/crow-sync/crow/sync"
	"github.com/crow-sync/crow/sync/feeds"
	"github.com/crow-sync/crow/sync/protocol"
	"github.com/crow-sync/crow/sync/transport"
	"github.com/crow-sync/crow/sync/wire"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// inst is one crow instance: a badger store holding its own feed and its
// replicas, and (while started) a sync Node.
type inst struct {
	t       testing.TB
	name    string
	key     ed25519.PrivateKey // feed key (the author key)
	netKey  ed25519.PrivateKey // transport identity (= key except for clones)
	id      transport.PeerID
	dir     string
	db      *store.DB
	log     *feed.Log
	reps    *feed.Replicas
	feeds   *feeds.Feeds
	serving crowsync.Feeds // feeds given to the Node (feeds, or a tampering wrapper)
	stored  stdsync.Map    // feed.PublicKey → uint64 stored length reported by OnStored

	tr     transport.Transport
	node   *crowsync.Node
	cancel context.CancelFunc
	done   chan error

	mu     stdsync.Mutex
	events []crowsync.Event
}

func newKey(t testing.TB) ed25519.PrivateKey {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return priv
}

func newInst(t testing.TB, name string, key, netKey ed25519.PrivateKey) *inst {
	id, err := transport.PeerIDFromPublicKey(netKey.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	in := &inst{t: t, name: name, key: key, netKey: netKey, id: id, dir: t.TempDir()}
	in.open()
	t.Cleanup(in.close)
	return in
}

// open opens (or reopens) the instance's badger store and feeds the way the
// daemon does.
func (in *inst) open() {
	db, err := store.Open(in.dir, store.Options{Logger: quiet})
	if err != nil {
		in.t.Fatal(err)
	}
	st := feed.NewKVStorage(db)
	l, err := feed.OpenLog(st, in.key)
	if err != nil {
		in.t.Fatal(err)
	}
	in.db, in.log = db, l
	in.reps = feed.OpenReplicas(st, l.Key())
	in.feeds = feeds.New(l, in.reps, feeds.Options{Logger: quiet, OnStored: func(k feed.PublicKey, s feed.State) {
		in.stored.Store(k, s.Length)
	}})
	in.serving = in.feeds
}

func (in *inst) close() {
	if in.db == nil {
		return
	}
	in.stop()
	if err := in.db.Close(); err != nil {
		in.t.Error(err)
	}
	in.db = nil
}

func (in *inst) self() feed.PublicKey { return in.log.Key() }

// appendN appends count entries of size bytes in batches of batch through the
// store.Journal path (one store transaction per batch, as the Writer does).
func (in *inst) appendN(count, size, batch int, tag string) {
	in.t.Helper()
	j := in.feeds.Journal(in.log)
	for i := 0; i < count; i += batch {
		var es [][]byte
		for k := i; k < min(count, i+batch); k++ {
			e := make([]byte, size)
			copy(e, fmt.Sprintf("%s-%d-", tag, k))
			es = append(es, e)
		}
		var commit func()
		err := in.db.Update(context.Background(), func(txn *store.Txn) error {
			var err error
			commit, err = j.Stage(txn, es)
			return err
		})
		if err != nil {
			in.t.Fatal(err)
		}
		commit()
	}
}

// length returns how many entries of feed k in holds.
func (in *inst) length(k feed.PublicKey) uint64 {
	st, err := in.reps.State(k)
	if err != nil {
		return 0
	}
	return st.Length
}

// has reports whether in holds exactly src's own feed (all of it).
func (in *inst) has(src *inst) bool {
	in.t.Helper()
	n := src.log.Head().Length
	if in.length(src.self()) != n {
		return false
	}
	got, err := in.reps.Read(src.self(), 0, n)
	if err != nil {
		in.t.Fatal(err)
	}
	want, err := src.log.Read(0, n)
	if err != nil {
		in.t.Fatal(err)
	}
	for i := range got {
		if string(got[i]) != string(want[i]) {
			in.t.Fatalf("%s holds a different entry %d of %s's feed", in.name, i, src.name)
		}
	}
	return true
}

func (in *inst) eventsOf(kind protocol.EventKind) int {
	in.mu.Lock()
	defer in.mu.Unlock()
	k := 0
	for _, ev := range in.events {
		if ev.Kind == kind {
			k++
		}
	}
	return k
}

type nodeOpts struct {
	batch    uint64
	maxBytes int
	clock    crowsync.Clock
	tick     time.Duration
}

// start runs a Node for in on tr, keeping peers connected.
func (in *inst) start(tr transport.Transport, o nodeOpts, peers ...crowsync.Peer) {
	in.t.Helper()
	in.tr = tr
	node, err := crowsync.NewNode(crowsync.Config{
		Transport: tr, Feeds: in.serving, Self: wire.FeedKey(in.self()),
		Clock: o.clock, Logger: quiet, TickInterval: o.tick, MaxBatchBytes: o.maxBytes,
		Protocol: protocol.Config{
			MaxBatchEntries: o.batch,
			Backoff:         protocol.Backoff{Min: 100 * time.Millisecond, Max: time.Second},
		},
		OnEvent: func(ev crowsync.Event) {
			in.mu.Lock()
			in.events = append(in.events, ev)
			in.mu.Unlock()
		},
	})
	if err != nil {
		in.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	in.node, in.cancel, in.done = node, cancel, make(chan error, 1)
	go func() { in.done <- node.Serve(ctx) }()
	if err := node.SetPeers(context.Background(), peers); err != nil {
		in.t.Fatal(err)
	}
}

func (in *inst) stop() {
	if in.cancel == nil {
		return
	}
	in.cancel()
	if err := <-in.done; err != context.Canceled {
		in.t.Errorf("%s: Serve returned %v", in.name, err)
	}
	_ = in.tr.Close()
	in.cancel = nil
}

func (in *inst) status() map[transport.PeerID]crowsync.PeerStatus {
	in.t.Helper()
	st, err := in.node.Status(context.Background())
	if err != nil {
		in.t.Fatal(err)
	}
	out := map[transport.PeerID]crowsync.PeerStatus{}
	for _, s := range st {
		out[s.Peer] = s
	}
	return out
}

// fakeStep is how far waitFor moves the fake clock per poll.
const fakeStep = 50 * time.Millisecond

// cluster is a set of instances on one in-memory network with a fake clock.
type cluster struct {
	t     *testing.T
	net   *transport.MemNetwork
	clock *clock.Fake
	opts  nodeOpts
	nodes map[string]*inst
}

func newCluster(t *testing.T, batch uint64, names ...string) *cluster {
	c := &cluster{t: t, net: transport.NewMemNetwork(), clock: clock.NewFake(time.Unix(1_800_000_000, 0)),
		nodes: map[string]*inst{}}
	c.opts = nodeOpts{batch: batch, clock: c.clock, tick: fakeStep} // a tick per waitFor step
	for _, n := range names {
		k := newKey(t)
		c.nodes[n] = newInst(t, n, k, k)
	}
	return c
}

func (c *cluster) n(name string) *inst { return c.nodes[name] }

// start runs name's Node on a fresh in-memory transport, peered with peers.
func (c *cluster) start(name string, peers ...string) {
	c.t.Helper()
	in := c.nodes[name]
	var ps []crowsync.Peer
	for _, p := range peers {
		ps = append(ps, crowsync.Peer{ID: c.nodes[p].id})
	}
	in.start(c.net.Join(in.id, transport.AdmitFunc(func(transport.PeerID) bool { return true })), c.opts, ps...)
}

// waitFor polls cond, advancing the fake clock so redials and retries happen.
func (c *cluster) waitFor(what string, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
		c.clock.Advance(fakeStep)
	}
}

// newFeedsWithHook rebuilds in's adapter with an extra OnStored hook.
func newFeedsWithHook(in *inst, hook func(feed.PublicKey, feed.State)) *feeds.Feeds {
	return feeds.New(in.log, in.reps, feeds.Options{Logger: quiet, OnStored: func(k feed.PublicKey, s feed.State) {
		in.stored.Store(k, s.Length)
		hook(k, s)
	}})
}
