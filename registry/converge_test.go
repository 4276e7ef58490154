package registry_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/crow-sync/crow/registry"
)

// A satellite's own row (RegisterSelf at its start) and the row home writes
// when the operator registers it (Register), made before the two ever synced,
// are byte-identical: replication sees two equivalent inserts, not a conflict.
func TestSelfRowAndRegisteredRowIdentical(t *testing.T) {
	ctx := context.Background()
	created := t0.Add(-240 * time.Hour)
	h, url := peer(t, ourSeed, "sat-1", registry.RoleSatellite)
	h.Update(func(d *registry.HealthDoc) {
		d.GatewayURL = url + "/" // advertised, not yet normalised
		d.CreatedAt = created.In(time.FixedZone("x", 3600)).Format(time.RFC3339)
	})

	sat := newEnv(t, "sat-1", "")
	if _, err := sat.reg.RegisterSelf(ctx, registry.SelfInfo{
		Name: "name-sat-1", Role: registry.RoleSatellite, GatewayURL: url,
		SyncAddrs: []string{"/ip4/127.0.0.1/tcp/4001"}, CreatedAt: created,
	}); err != nil {
		t.Fatal(err)
	}

	home := newEnv(t, "home-1", registry.RoleHome)
	home.clock.Advance(time.Hour)
	typed := strings.Replace(url, "127.0.0.1", "localhost", 1) // the operator used another name
	in, err := home.reg.Register(ctx, typed)
	if err != nil {
		t.Fatal(err)
	}
	if in.GatewayURL != url {
		t.Errorf("gateway_url = %q, want the advertised %q", in.GatewayURL, url)
	}
	a, _ := sat.table.Get(ctx, "sat-1")
	b, _ := home.table.Get(ctx, "sat-1")
	if string(a) != string(b) {
		t.Errorf("rows differ:\nself     %s\nregister %s", a, b)
	}

	// Peers lists the others, not self or revoked ones.
	if p := home.reg.Peers(); len(p) != 1 || p[0].ID != "sat-1" {
		t.Errorf("Peers = %+v", p)
	}
	if _, err := home.reg.Revoke(ctx, "sat-1"); err != nil {
		t.Fatal(err)
	}
	if p := home.reg.Peers(); len(p) != 0 {
		t.Errorf("Peers after revoke = %+v", p)
	}
}

func TestAdvertisedURLUnreachableKeepsGiven(t *testing.T) {
	ctx := context.Background()
	h, url := peer(t, ourSeed, "sat-1", registry.RoleSatellite)
	// Advertises an address that is not this instance from here.
	_, other := peer(t, ourSeed, "sat-2", registry.RoleSatellite)
	h.Update(func(d *registry.HealthDoc) { d.GatewayURL = other; d.CreatedAt = "garbage" })
	home := newEnv(t, "home-1", registry.RoleHome)
	in, err := home.reg.Register(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if in.GatewayURL != url || in.CreatedAt != "2026-11-29T21:00:00Z" {
		t.Errorf("view = %+v, want the given URL and now", in)
	}
}
