package transport

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/crow-sync/crow/chaos/proxy"
)

// proxied starts a fault proxy in front of h's TCP listen address.
func proxied(t *testing.T, h *Host, f proxy.Faults) *proxy.Proxy {
	t.Helper()
	var target string
	for _, a := range h.h.Addrs() {
		if port, err := a.ValueForProtocol(6); err == nil { // tcp
			target = "127.0.0.1:" + port
		}
	}
	p, err := proxy.New(proxy.Config{Target: target, Seed: 42, Faults: f})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return p
}

func multiaddr(p *proxy.Proxy) string { return fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", p.Port()) }

// TestAnnouncedAddressIsWhatPeersDial: a host with Announce set reports it as
// its address, and a peer dialling that address goes through the proxy
// standing there.
func TestAnnouncedAddressIsWhatPeersDial(t *testing.T) {
	ka, a := newKey(t)
	kb, b := newKey(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	px, err := proxy.New(proxy.Config{Target: fmt.Sprintf("127.0.0.1:%d", port)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = px.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	hb2, err := NewHost(HostConfig{Key: kb, Listen: []string{fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", port)},
		Announce: []string{multiaddr(px)}, Admitter: allowSet{a: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hb2.Close() })
	if got := hb2.Addrs(); !slices.Equal(got, []string{multiaddr(px)}) {
		t.Fatalf("Addrs() = %v, want the announced %s", got, multiaddr(px))
	}
	ha := newHost(t, ka, allowSet{b: true})
	dctx, dcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer dcancel()
	if err := ha.Dial(dctx, b, hb2.Addrs()); err != nil {
		t.Fatal(err)
	}
	if px.Bytes() == 0 {
		t.Fatal("the dial did not go through the proxy at the announced address")
	}
	if _, err := NewHost(HostConfig{Key: kb, Listen: []string{"/ip4/127.0.0.1/tcp/0"}, Announce: []string{"not a multiaddr"}, Admitter: allowSet{}}); err == nil {
		t.Fatal("a bad announced address was accepted")
	}
}

// TestCorruptedChannelIsCountedNothingDeliveredAndRecovers: bits flipped on
// the wire of a live session end it and count as corrupt channel data; no
// message other than those sent is ever delivered; with the faults gone the
// peers reconnect and messages flow again.
func TestCorruptedChannelIsCountedNothingDeliveredAndRecovers(t *testing.T) {
	ka, a := newKey(t)
	kb, b := newKey(t)
	// Each end has its own registry: the proxy flips bytes both ways, so the end that reads
	// the first corrupted message is the one that counts it (either may).
	rega, regb := prometheus.NewRegistry(), prometheus.NewRegistry()
	ha, err := NewHost(HostConfig{Key: ka, Listen: []string{"/ip4/127.0.0.1/tcp/0"}, Admitter: allowSet{b: true}, Registerer: rega})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ha.Close() })
	hb, err := NewHost(HostConfig{Key: kb, Listen: []string{"/ip4/127.0.0.1/tcp/0"}, Admitter: allowSet{a: true}, Registerer: regb})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hb.Close() })
	px := proxied(t, hb, proxy.Faults{})

	sent := map[string]bool{}
	var delivered []string
	recv := func(d time.Duration) (Event, bool) {
		select {
		case ev := <-hb.Events():
			if ev.Kind == EventMessage {
				delivered = append(delivered, string(ev.Payload))
			}
			return ev, true
		case <-time.After(d):
			return Event{}, false
		}
	}
	dial := func() {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := ha.Dial(ctx, b, []string{multiaddr(px)}); err != nil {
			t.Fatal(err)
		}
	}
	send := func(i int) {
		msg := fmt.Sprintf("message %d %s", i, bytes.Repeat([]byte("."), 200))
		sent[msg] = true
		_ = ha.Send(b, []byte(msg))
	}
	dial()
	send(0)
	for len(delivered) == 0 {
		if _, ok := recv(10 * time.Second); !ok {
			t.Fatal("first message not delivered")
		}
	}

	// Flip bits in everything: the session must end, counted.
	px.SetFaults(proxy.Faults{Flip: 1})
	deadline := time.Now().Add(30 * time.Second)
	corrupt := func() uint64 { return ha.ChannelErrors()[ChannelCorrupt] + hb.ChannelErrors()[ChannelCorrupt] }
	for i := 1; corrupt() == 0; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("no corrupt channel error counted: dialer %v, listener %v (proxy %v)", ha.ChannelErrors(), hb.ChannelErrors(), px.Counts())
		}
		send(i)
		recv(100 * time.Millisecond)
	}
	if n := exported(t, rega, ChannelCorrupt) + exported(t, regb, ChannelCorrupt); n < 1 {
		t.Fatalf("crow_sync_channel_errors_total{kind=corrupt} = %v on the two ends", n)
	}

	// Faults off: a new session carries messages again.
	px.SetFaults(proxy.Faults{})
	deadline = time.Now().Add(30 * time.Second)
	before := len(delivered)
	for i := 1000; len(delivered) == before; i++ {
		if time.Now().After(deadline) {
			t.Fatal("sync did not recover once the faults stopped")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = ha.Dial(ctx, b, []string{multiaddr(px)})
		cancel()
		send(i)
		recv(500 * time.Millisecond)
	}
	for _, m := range delivered {
		if !sent[m] {
			t.Fatalf("delivered a message never sent (corrupted): %q", m)
		}
	}
}

// exported is the value of crow_sync_channel_errors_total{kind} on reg.
func exported(t *testing.T, reg *prometheus.Registry, kind string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "crow_sync_channel_errors_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == kind {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no crow_sync_channel_errors_total{kind=%q} exported", kind)
	return 0
}

// TestTruncatedChannelIsCounted: a connection cut inside a Noise message
// counts as truncated channel data.
func TestTruncatedChannelIsCounted(t *testing.T) {
	ka, a := newKey(t)
	kb, b := newKey(t)
	ha := newHost(t, ka, allowSet{b: true})
	hb := newHost(t, kb, allowSet{a: true})
	px := proxied(t, hb, proxy.Faults{})
	go func() {
		for range hb.Events() {
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; hb.ChannelErrors()[ChannelTruncated] == 0; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("no truncated channel error counted: %v (proxy %v)", hb.ChannelErrors(), px.Counts())
		}
		px.SetFaults(proxy.Faults{})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := ha.Dial(ctx, b, []string{multiaddr(px)})
		cancel()
		if err != nil {
			continue
		}
		px.SetFaults(proxy.Faults{Truncate: 1})
		_ = ha.Send(b, bytes.Repeat([]byte("t"), 4000))
		time.Sleep(100 * time.Millisecond)
	}
}
