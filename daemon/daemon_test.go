package daemon_test

import (
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crow-sync/crow/anchor"
	"github.com/crow-sync/crow/daemon"
	"github.com/crow-sync/crow/home"
	"github.com/crow-sync/crow/identity"
	"github.com/crow-sync/crow/search"
	"github.com/crow-sync/crow/sync/transport"
)

func newHome(t *testing.T) *home.Home {
	t.Helper()
	seed, err := identity.NewSeed(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "h")
	if _, err := home.Init(dir, "test", seed, home.RoleHome); err != nil {
		t.Fatal(err)
	}
	h, err := home.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func build(t *testing.T, h *home.Home, net *transport.MemNetwork) (*daemon.Daemon, error) {
	settings := home.DefaultConfig()
	settings.Listen = "127.0.0.1:0"
	return daemon.New(daemon.Config{Home: h, Settings: settings, Version: "test"}, daemon.Deps{
		Logger:        slog.New(slog.DiscardHandler),
		Transport:     daemon.MemTransport(net),
		InMemoryStore: true,
		Chain:         func(context.Context, *slog.Logger) (anchor.Chain, error) { return nil, nil },
	})
}

// TestServeLifecycle: New takes the serve lock; Serve writes gateway.addr
// and answers /health; the end of ctx stops it cleanly, removes
// gateway.addr and releases the lock.
func TestServeLifecycle(t *testing.T) {
	h := newHome(t)
	net := transport.NewMemNetwork()
	d, err := build(t, h, net)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := build(t, h, net); err == nil {
		t.Fatal("a second daemon on the same home was built; the serve lock did not hold")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Serve(ctx) }()

	var addr string
	deadline := time.Now().Add(10 * time.Second)
	for addr == "" && time.Now().Before(deadline) {
		addr, _ = h.ReadGatewayAddr()
		time.Sleep(10 * time.Millisecond)
	}
	if addr != d.GatewayAddr().String() {
		t.Fatalf("gateway.addr %q, want %q", addr, d.GatewayAddr())
	}
	resp, err := http.Get(d.GatewayURL() + "/health")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/health = %d %s", resp.StatusCode, body)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve after shutdown: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return after the context ended")
	}
	if _, err := os.Stat(h.GatewayAddrFile()); !os.IsNotExist(err) {
		t.Errorf("gateway.addr left behind: %v", err)
	}
	d2, err := build(t, h, net)
	if err != nil {
		t.Fatalf("the lock was not released: %v", err)
	}
	if err := d2.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestBuildFailureClosesTheIndex: the search index opens beside the store;
// when the store does not open, New fails and the index is closed again (its
// files can be opened at once, as a retry would).
func TestBuildFailureClosesTheIndex(t *testing.T) {
	h := newHome(t)
	if err := os.WriteFile(h.DBDir(), []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	settings := home.DefaultConfig()
	settings.Listen = "127.0.0.1:0"
	_, err := daemon.New(daemon.Config{Home: h, Settings: settings, Version: "test"}, daemon.Deps{
		Logger:    slog.New(slog.DiscardHandler),
		Transport: daemon.MemTransport(transport.NewMemNetwork()),
		Chain:     func(context.Context, *slog.Logger) (anchor.Chain, error) { return nil, nil },
	})
	if err == nil || !strings.Contains(err.Error(), "opening store") {
		t.Fatalf("New with a file where the store's directory goes: %v", err)
	}
	opened := make(chan error, 1)
	go func() {
		x, err := search.Open(h.IndexDir(), slog.New(slog.DiscardHandler))
		if err == nil {
			err = x.Close()
		}
		opened <- err
	}()
	select {
	case err := <-opened:
		if err != nil {
			t.Fatalf("reopening the index: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the index is still held open after New failed")
	}
}
