package registry_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"

	"github.com/crow-sync/crow/identity/member"
	"github.com/crow-sync/crow/registry"
	"github.com/crow-sync/crow/registry/registrytest"
)

// sibling opens a second registry, instance self with role, over e's tables
// (replication reduced to a shared table and Reload).
func (e *env) sibling(t *testing.T, self, role string) *registry.Registry {
	t.Helper()
	s := *e
	s.role = role
	s.events = make(chan registry.Event, 64)
	reg := s.open(t, self)
	if _, err := reg.RegisterSelf(context.Background(), registry.SelfInfo{
		Name: self, Role: role, GatewayURL: "http://127.0.0.1:1", SyncAddrs: []string{"/ip4/127.0.0.1/tcp/2"},
	}); err != nil {
		t.Fatalf("RegisterSelf %s: %v", self, err)
	}
	return reg
}

func homeCert(id string) member.Certificate {
	key := ourSeed.InstanceKey(id)
	return registrytest.Certify(ourSeed, id, key.Public().(ed25519.PublicKey), registry.RoleHome, "name-"+id)
}

func reloadAll(t *testing.T, regs ...*registry.Registry) {
	t.Helper()
	for _, r := range regs {
		if err := r.Reload(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// A promotion: the promoted satellite is home everywhere from the next
// Reload; the old home is demoted; numbers above the base written by the old
// home are refused, those up to it are not; a second promotion moves the
// rule on.
func TestPromoteEpochRule(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "h", registry.RoleHome)
	h := e.reg
	a := e.sibling(t, "a", registry.RoleSatellite)
	b := e.sibling(t, "b", registry.RoleSatellite)
	reloadAll(t, h, a, b)
	if a.HomeRole(registry.RoleSatellite) != registry.RoleSatellite || h.HomeRole(registry.RoleHome) != registry.RoleHome {
		t.Fatal("roles before any record")
	}
	if _, ok := h.RefusesNumber("h", 99); ok {
		t.Fatal("a number refused with no home record")
	}

	// Promote needs the root key and a home certificate.
	if _, err := a.Promote(ctx, registry.Promotion{Cert: homeCert("a"), Base: 10}); !errors.Is(err, registry.ErrNotHome) {
		t.Fatalf("promote without the root key: %v", err)
	}
	satCert := registrytest.Certify(ourSeed, "a", ourSeed.InstanceKey("a").Public().(ed25519.PublicKey), registry.RoleSatellite, "name-a")
	if _, err := a.Promote(ctx, registry.Promotion{RootKey: ourSeed.RootKey(), Cert: satCert, Base: 10}); !errors.Is(err, registry.ErrUncertified) {
		t.Fatalf("promote with a satellite certificate: %v", err)
	}
	rec, err := a.Promote(ctx, registry.Promotion{RootKey: ourSeed.RootKey(), Cert: homeCert("a"), Base: 10})
	if err != nil || rec.Epoch != 1 || rec.Base != 10 || rec.InstanceID != "a" {
		t.Fatalf("promote = %+v, %v", rec, err)
	}
	if _, err := a.Promote(ctx, registry.Promotion{RootKey: ourSeed.RootKey(), Cert: homeCert("a"), Base: 10}); !errors.Is(err, registry.ErrAlreadyHome) {
		t.Fatalf("second promote: %v", err)
	}
	reloadAll(t, h, a, b)
	for _, r := range []*registry.Registry{h, a, b} {
		in, err := r.Home()
		if err != nil || in.ID != "a" || r.Epoch() != 1 {
			t.Fatalf("%s: home = %+v %v, epoch %d", r.SelfID(), in, err, r.Epoch())
		}
		if got, _ := r.Get("h"); got.Role != registry.RoleSatellite {
			t.Fatalf("%s: the old home is shown as %s", r.SelfID(), got.Role)
		}
	}
	if h.HomeRole(registry.RoleHome) != registry.RoleSatellite || a.HomeRole(registry.RoleSatellite) != registry.RoleHome {
		t.Fatal("the old home is not demoted, or the promoted one not home")
	}
	for _, c := range []struct {
		writer string
		n      uint64
		refuse bool
	}{{"h", 10, false}, {"h", 11, true}, {"a", 11, false}, {"a", 3, false}, {"b", 11, true}} {
		why, got := b.RefusesNumber(c.writer, c.n)
		if got != c.refuse {
			t.Errorf("RefusesNumber(%s, %d) = %v (%s), want %v", c.writer, c.n, got, why, c.refuse)
		}
		if got && !strings.Contains(why, "above 10 since epoch 1") {
			t.Errorf("reason %q", why)
		}
	}

	// The old home comes back and re-registers as a satellite; a's row
	// keeps its record when a re-registers.
	if _, err := h.RegisterSelf(ctx, registry.SelfInfo{Name: "h", Role: registry.RoleHome, GatewayURL: "http://127.0.0.1:3"}); !errors.Is(err, registry.ErrSecondHome) {
		t.Fatalf("the demoted home registering as home: %v", err)
	}
	h = e.sibling(t, "h", registry.RoleSatellite) // restarted as a satellite
	a = e.sibling(t, "a", registry.RoleHome)      // restarted as home, with its new certificate
	if _, err := a.RegisterSelf(ctx, registry.SelfInfo{Name: "a", Role: registry.RoleHome, GatewayURL: "http://127.0.0.1:9"}); err != nil {
		t.Fatal(err)
	}
	reloadAll(t, h, a, b)
	if in, _ := b.Home(); in.ID != "a" || in.GatewayURL != "http://127.0.0.1:9" {
		t.Fatalf("after a re-registers: home %+v", in)
	}

	// A later promotion (b, epoch 2, base 20) moves every rule.
	if _, err := b.Promote(ctx, registry.Promotion{RootKey: ourSeed.RootKey(), Cert: homeCert("b"), Base: 20}); err != nil {
		t.Fatal(err)
	}
	reloadAll(t, h, a, b)
	if in, _ := h.Home(); in.ID != "b" || a.HomeRole(registry.RoleHome) != registry.RoleSatellite {
		t.Fatalf("after epoch 2: home %s, a is %s", in.ID, a.HomeRole(registry.RoleHome))
	}
	if _, ok := h.RefusesNumber("a", 21); !ok {
		t.Error("a's number above b's base accepted")
	}
	if _, ok := h.RefusesNumber("a", 15); ok {
		t.Error("a's number of its own term refused")
	}
	if _, ok := h.RefusesNumber("h", 15); !ok {
		t.Error("h's number above a's base accepted")
	}
}

// A home record that does not verify, or that another row carries, is
// ignored: it makes nobody home.
func TestHomeRecordForged(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "h", registry.RoleHome)
	a := e.sibling(t, "a", registry.RoleSatellite)
	rec, err := a.Promote(ctx, registry.Promotion{RootKey: ourSeed.RootKey(), Cert: homeCert("a"), Base: 4})
	if err != nil {
		t.Fatal(err)
	}
	// m, a satellite, copies a's record into its own row, as home.
	m := e.sibling(t, "m", registry.RoleSatellite)
	other := otherSeed.RootKey()
	forged, err := member.IssueHome(other, member.HomeFields{CrowID: otherSeed.CrowID(), InstanceID: "m",
		PublicKey: ourSeed.InstanceKey("m").Public().(ed25519.PublicKey), Epoch: 7, IssuedAt: t0})
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{rec.String(), forged.String()} {
		row := registrytest.CertifiedRow(ourSeed, "m", registry.RoleHome)
		e.table.Set("m", []byte(strings.TrimSuffix(string(row), "}")+`,"home_record":"`+text+`"}`))
		reloadAll(t, e.reg, a, m)
		if in, _ := e.reg.Home(); in.ID != "a" || e.reg.Epoch() != 1 {
			t.Fatalf("a record carried by m made %s home (epoch %d)", in.ID, e.reg.Epoch())
		}
	}
}

// Promote refuses while the home answers, naming it, unless forced.
func TestPromoteRefusedWhileHomeAnswers(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "a", registry.RoleSatellite)
	_, url := peer(t, ourSeed, "hh", registry.RoleHome)
	if _, err := e.reg.Register(ctx, url); err != nil {
		t.Fatal(err)
	}
	p := registry.Promotion{RootKey: ourSeed.RootKey(), Cert: homeCert("a"), Base: 3}
	_, err := e.reg.Promote(ctx, p)
	if !errors.Is(err, registry.ErrHomeReachable) || !strings.Contains(err.Error(), "name-hh") || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("promote while home answers: %v", err)
	}
	p.Force = true
	if _, err := e.reg.Promote(ctx, p); err != nil {
		t.Fatalf("forced promote: %v", err)
	}
	if in, _ := e.reg.Home(); in.ID != "a" {
		t.Fatalf("home = %s", in.ID)
	}
}
