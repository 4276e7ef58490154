package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// echo runs a loopback echo server and returns its address.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

func start(t *testing.T, cfg Config) *Proxy {
	t.Helper()
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return p
}

// roundTrip sends msg through p and reads back len(msg) bytes (or what came
// before the connection ended).
func roundTrip(t *testing.T, p *Proxy, msg []byte) ([]byte, error) {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(msg); err != nil {
		return nil, err
	}
	got := make([]byte, len(msg))
	n, err := io.ReadFull(c, got)
	return got[:n], err
}

func TestCleanForwarding(t *testing.T) {
	p := start(t, Config{Target: echo(t)})
	msg := bytes.Repeat([]byte("crow "), 1000)
	got, err := roundTrip(t, p, msg)
	if err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("round trip: %v, %d bytes back", err, len(got))
	}
	for k, n := range p.Counts() {
		if n != 0 {
			t.Errorf("%d %s faults with no rate set", n, k)
		}
	}
}

func TestFlipChangesBytesAndIsCounted(t *testing.T) {
	p := start(t, Config{Target: echo(t), Seed: 7, Faults: Faults{Flip: 1}})
	msg := []byte("a message that must come back changed")
	got, err := roundTrip(t, p, msg)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(got, msg) {
		t.Fatal("bytes came back unchanged through a proxy flipping every chunk")
	}
	if p.Counts()[Flip] == 0 {
		t.Fatal("flip not counted")
	}
}

func TestDuplicateSendsTwice(t *testing.T) {
	p := start(t, Config{Target: echo(t), Seed: 1, Faults: Faults{Duplicate: 1}})
	msg := []byte("twice")
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	c.Write(msg)
	// one write, duplicated on the way there and on the way back: 4 copies
	got := make([]byte, 4*len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, bytes.Repeat(msg, 4)) {
		t.Fatalf("got %q", got)
	}
}

func TestTruncateAndCutCloseTheConnection(t *testing.T) {
	for _, f := range []Faults{{Truncate: 1}, {Cut: 1}} {
		p := start(t, Config{Target: echo(t), Seed: 3, Faults: f})
		msg := bytes.Repeat([]byte("x"), 100)
		got, err := roundTrip(t, p, msg)
		if err == nil || len(got) == len(msg) {
			t.Fatalf("%+v: the whole message came back (%d bytes, %v)", f, len(got), err)
		}
		c := p.Counts()
		if c[Truncate]+c[Cut] == 0 {
			t.Fatalf("%+v: not counted: %v", f, c)
		}
	}
}

func TestPartitionRefusesThenHeals(t *testing.T) {
	p := start(t, Config{Target: echo(t)})
	p.Partition(true)
	if got, err := roundTrip(t, p, []byte("hello")); err == nil {
		t.Fatalf("partitioned proxy forwarded %q", got)
	}
	if p.Counts()[Refused] == 0 {
		t.Fatal("refusal not counted")
	}
	p.Partition(false)
	if got, err := roundTrip(t, p, []byte("hello")); err != nil || string(got) != "hello" {
		t.Fatalf("after healing: %q, %v", got, err)
	}
}

func TestReorderAndDelayKeepEveryByte(t *testing.T) {
	p := start(t, Config{Target: echo(t), Seed: 9, Faults: Faults{Reorder: 0.5, Delay: 0.5, MaxDelay: 5 * time.Millisecond}})
	msg := []byte("0123456789")
	got, err := roundTrip(t, p, msg)
	if err != nil || len(got) != len(msg) {
		t.Fatalf("%q, %v", got, err)
	}
}

func TestOnlyLoopback(t *testing.T) {
	for _, cfg := range []Config{
		{Target: "192.0.2.1:80"},
		{Listen: "0.0.0.0:0", Target: "127.0.0.1:80"},
		{Target: "example.com:80"},
	} {
		if _, err := New(cfg); !errors.Is(err, ErrNotLoopback) {
			t.Errorf("%+v: %v, want ErrNotLoopback", cfg, err)
		}
	}
}
