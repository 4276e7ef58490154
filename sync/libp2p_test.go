package sync_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"testing"
	"time"

	crowsync "github.com/crow-sync/crow/sync"
	"github.com/crow-sync/crow/sync/internal/memfeed"
	"github.com/crow-sync/crow/sync/transport"
)

type allow map[transport.PeerID]bool

func (a allow) Admit(p transport.PeerID) bool { return a[p] }

// Two Nodes over real libp2p hosts on loopback replicate both ways; a third
// host whose key is not admitted is refused in and out.
func TestNodesOverLibp2p(t *testing.T) {
	type inst struct {
		key   ed25519.PrivateKey
		id    transport.PeerID
		feeds *memfeed.Feeds
		host  *transport.Host
	}
	mk := func() *inst {
		pub, priv, _ := ed25519.GenerateKey(rand.Reader)
		id, err := transport.PeerIDFromPublicKey(pub)
		if err != nil {
			t.Fatal(err)
		}
		return &inst{key: priv, id: id, feeds: memfeed.New(priv, nil)}
	}
	a, b, x := mk(), mk(), mk()
	admitted := allow{a.id: true, b.id: true}
	for _, in := range []*inst{a, b, x} {
		h, err := transport.NewHost(transport.HostConfig{
			Key: in.key, Listen: []string{"/ip4/127.0.0.1/tcp/0"}, Admitter: admitted, Logger: quiet,
		})
		if err != nil {
			t.Fatal(err)
		}
		in.host = h
		t.Cleanup(func() { _ = h.Close() })
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var nodes []*crowsync.Node
	for _, in := range []*inst{a, b} {
		n, err := crowsync.NewNode(crowsync.Config{
			Transport: in.host, Feeds: in.feeds, Self: in.feeds.Self(), Logger: quiet,
			TickInterval: 50 * time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
		done := make(chan error, 1)
		go func() { done <- n.Serve(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
	}
	appendN2(a.feeds, 500)
	appendN2(b.feeds, 20)
	// Only a knows b's address; b learns of a by the inbound session.
	if err := nodes[0].SetPeers(ctx, []crowsync.Peer{{ID: b.id, Addrs: b.host.Addrs()}}); err != nil {
		t.Fatal(err)
	}
	waitReal(t, func() bool {
		return b.feeds.Len(a.feeds.Self()) == 500 && a.feeds.Len(b.feeds.Self()) == 20
	})
	// Live push over libp2p.
	a.feeds.Append([]byte("live"))
	waitReal(t, func() bool { return b.feeds.Len(a.feeds.Self()) == 501 })
	// Status may answer from the loop's last pass while the loop is busy
	// (statusWait), so the count is awaited rather than read once.
	var st []crowsync.PeerStatus
	var err error
	waitReal(t, func() bool {
		st, err = nodes[1].Status(ctx)
		return err != nil || (len(st) == 1 && st[0].EntriesReceived == 501)
	})
	if err != nil || len(st) != 1 || !st[0].Connected || st[0].EntriesReceived != 501 {
		t.Fatalf("b status %+v, %v", st, err)
	}

	// x is not admitted: refused inbound (by a's gater) and never dialled.
	dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
	defer dcancel()
	if err := x.host.Dial(dctx, a.id, a.host.Addrs()); err == nil {
		t.Fatal("a accepted a peer that is not admitted")
	}
	if err := a.host.Dial(dctx, x.id, x.host.Addrs()); err == nil {
		t.Fatal("a dialled a peer that is not admitted")
	}
	if x.feeds.Len(a.feeds.Self()) != 0 {
		t.Fatal("x got a's entries")
	}
}

func appendN2(f *memfeed.Feeds, n int) {
	for i := 0; i < n; i += 50 {
		var es [][]byte
		for j := i; j < min(n, i+50); j++ {
			es = append(es, []byte{byte(j), byte(j >> 8), 'e'})
		}
		f.Append(es...)
	}
}
