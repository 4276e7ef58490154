package feeds_test

import (
	"testing"
	"time"

	crowsync "github.com/crow-sync/crow/sync"
	"github.com/crow-sync/crow/sync/transport"
)

// newHost starts a libp2p host on loopback (TCP, Noise, yamux) admitting ids.
func newHost(t testing.TB, in *inst, ids ...transport.PeerID) *transport.Host {
	t.Helper()
	ok := map[transport.PeerID]bool{}
	for _, id := range ids {
		ok[id] = true
	}
	h, err := transport.NewHost(transport.HostConfig{
		Key: in.netKey, Listen: []string{"/ip4/127.0.0.1/tcp/0"}, Logger: quiet,
		Admitter: transport.AdmitFunc(func(p transport.PeerID) bool { return ok[p] }),
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// Two instances on badger replicate over real libp2p hosts on loopback, in
// bulk and live.
func TestOverLibp2p(t *testing.T) {
	k1, k2 := newKey(t), newKey(t)
	a, b := newInst(t, "a", k1, k1), newInst(t, "b", k2, k2)
	ha, hb := newHost(t, a, b.id), newHost(t, b, a.id)
	a.appendN(5000, 200, 500, "a")
	b.appendN(20, 200, 20, "b")
	o := nodeOpts{batch: 1000, tick: 50 * time.Millisecond}
	a.start(ha, o, crowsync.Peer{ID: b.id, Addrs: hb.Addrs()})
	b.start(hb, o)
	waitReal(t, func() bool { return b.has(a) && a.has(b) })
	a.appendN(1, 200, 1, "live")
	waitReal(t, func() bool { return b.has(a) })
	noTrouble(t, a, b)
}

func waitReal(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(time.Millisecond)
	}
}
