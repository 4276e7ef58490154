package registry_test

import (
	"context"
	"crypto/ed25519"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/crow-sync/crow/clock"
	"github.com/crow-sync/crow/identity"
	"github.com/crow-sync/crow/registry"
	"github.com/crow-sync/crow/registry/registrytest"
)

var t0 = time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC)

func seedOf(b byte) identity.Seed {
	var s identity.Seed
	for i := range s {
		s[i] = b + byte(i)
	}
	return s
}

var (
	ourSeed   = seedOf(1)
	otherSeed = seedOf(100)
)

type env struct {
	reg    *registry.Registry
	role   string
	table  *registrytest.MemTable
	revs   *registrytest.MemTable
	invs   *registrytest.MemInvites
	obs    *registrytest.MemObservations
	clock  *clock.Fake
	mirror string
	events chan registry.Event
}

// newEnv builds a registry for instance self of ourSeed, registered with role.
func newEnv(t *testing.T, self, role string) *env {
	t.Helper()
	e := &env{
		role:  role,
		table: &registrytest.MemTable{}, revs: &registrytest.MemTable{}, invs: &registrytest.MemInvites{},
		obs:   &registrytest.MemObservations{},
		clock: clock.NewFake(t0), mirror: filepath.Join(t.TempDir(), "instances.json"),
		events: make(chan registry.Event, 64),
	}
	e.reg = e.open(t, self)
	if role != "" {
		if _, err := e.reg.RegisterSelf(context.Background(), registry.SelfInfo{
			Name: self, Role: role, GatewayURL: "http://127.0.0.1:1", SyncAddrs: []string{"/ip4/127.0.0.1/tcp/2"},
		}); err != nil {
			t.Fatalf("RegisterSelf: %v", err)
		}
	}
	drain(e.events)
	return e
}

// config is the Config of instance self of ourSeed over e's storage.
func (e *env) config(self string) registry.Config {
	role := e.role
	if role == "" {
		role = registry.RoleSatellite
	}
	key := ourSeed.InstanceKey(self)
	return registry.Config{
		Trust: registry.TrustOfSeed(ourSeed), RootKey: ourSeed.RootKey(),
		SelfID: self, SelfKey: key, SelfCert: registrytest.Certify(ourSeed, self, key.Public().(ed25519.PublicKey), role, "name-"+self),
		Table: e.table, Revocations: e.revs, Invites: e.invs, Observations: e.obs, MirrorPath: e.mirror,
		Clock: e.clock, HealthTimeout: 5 * time.Second, Logger: slog.New(slog.DiscardHandler),
	}
}

// open (re)opens a registry over e's storage.
func (e *env) open(t *testing.T, self string) *registry.Registry {
	t.Helper()
	reg, err := registry.New(context.Background(), e.config(self))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	reg.Subscribe(func(ev registry.Event) { e.events <- ev })
	return reg
}

func drain(ch chan registry.Event) []registry.Event {
	var out []registry.Event
	for {
		select {
		case ev := <-ch:
			out = append(out, ev)
		default:
			return out
		}
	}
}

// serve starts an httptest server for h and returns its URL.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// peer starts an honest /health server for instance id of seed.
func peer(t *testing.T, seed identity.Seed, id, role string) (*registrytest.HealthServer, string) {
	t.Helper()
	h := registrytest.NewHealthServer(seed, id, "name-"+id, role, "/ip4/127.0.0.1/tcp/4001")
	return h, serve(t, h)
}

// serveFunc starts a server whose handler calls wait and then answers 500.
func serveFunc(t *testing.T, wait func()) string {
	t.Helper()
	return serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wait()
		w.WriteHeader(http.StatusInternalServerError)
	}))
}
