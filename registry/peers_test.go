package registry_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/crow-sync/crow/registry"
)

// threePeers is home-1 with sat-1 (online), sat-2 (then probed offline)
// and sat-3 (revoked) registered.
func threePeers(t *testing.T) (*env, map[string]registry.Instance) {
	t.Helper()
	e := newEnv(t, "home-1", registry.RoleHome)
	ctx := context.Background()
	ins := map[string]registry.Instance{}
	for _, id := range []string{"sat-1", "sat-2", "sat-3"} {
		h, url := peer(t, ourSeed, id, registry.RoleSatellite)
		in, err := e.reg.Register(ctx, url)
		if err != nil {
			t.Fatalf("Register %s: %v", id, err)
		}
		ins[id] = in
		if id == "sat-2" {
			h.SetDown(true)
		}
	}
	registry.NewProber(e.reg, registry.ProberConfig{}).ProbeOnce(ctx)
	if _, err := e.reg.Revoke(ctx, "sat-3"); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	return e, ins
}

func TestEndpointsArePeersNotSelfNotRevoked(t *testing.T) {
	e, ins := threePeers(t)
	got := e.reg.Endpoints()
	var ids []string
	online := map[string]bool{}
	for _, p := range got {
		ids = append(ids, p.ID)
		online[p.ID] = p.Online
		want, _ := ins[p.ID].PublicKeyBytes()
		if !want.Equal(p.Key) || p.GatewayURL != ins[p.ID].GatewayURL || !slices.Equal(p.SyncAddrs, ins[p.ID].SyncAddrs) {
			t.Errorf("endpoint %+v does not match its instance %+v", p, ins[p.ID])
		}
	}
	if !slices.Equal(ids, []string{"sat-1", "sat-2"}) {
		t.Fatalf("endpoints %v, want sat-1 and sat-2 (not self, not the revoked sat-3)", ids)
	}
	if !online["sat-1"] || online["sat-2"] {
		t.Errorf("online = %v, want sat-1 online and sat-2 (probe failed) offline", online)
	}
}

func TestEndpointsCountNeverProbedAsOnline(t *testing.T) {
	e := newEnv(t, "sat-9", registry.RoleSatellite)
	// A row that arrives by replication has never been probed here.
	other := newEnv(t, "home-1", registry.RoleHome)
	raw, err := other.table.Get(context.Background(), "home-1")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.table.Put(context.Background(), "home-1", true, raw); err != nil {
		t.Fatal(err)
	}
	if err := e.reg.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := e.reg.Endpoints()
	if len(got) != 1 || got[0].ID != "home-1" || !got[0].Online || got[0].Role != registry.RoleHome {
		t.Fatalf("endpoints = %+v, want home-1, status unknown counted online", got)
	}
}

func TestAllowsFeedRefusesOnlyRevokedKeys(t *testing.T) {
	e, ins := threePeers(t)
	for id, want := range map[string]bool{"sat-1": true, "sat-2": true, "sat-3": false} {
		key, _ := ins[id].PublicKeyBytes()
		if got := e.reg.AllowsFeed(key); got != want {
			t.Errorf("AllowsFeed(%s) = %v, want %v", id, got, want)
		}
	}
	unknown := ourSeed.InstancePublicKey("not-registered")
	if !e.reg.AllowsFeed(unknown) {
		t.Error("AllowsFeed refuses a key no row names yet; its row may not have replicated")
	}
}

func TestPeerKey(t *testing.T) {
	e, _ := threePeers(t)
	key, err := e.reg.PeerKey("sat-1")
	if err != nil || !key.Equal(ourSeed.InstancePublicKey("sat-1")) {
		t.Fatalf("PeerKey(sat-1) = %x, %v; want the derived key", key, err)
	}
	if _, err := e.reg.PeerKey("sat-3"); !errors.Is(err, registry.ErrRevoked) {
		t.Errorf("PeerKey(revoked) err = %v, want ErrRevoked", err)
	}
	if _, err := e.reg.PeerKey("nobody"); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("PeerKey(unknown) err = %v, want ErrNotFound", err)
	}
}

func TestDescribeKey(t *testing.T) {
	e, ins := threePeers(t)
	key, _ := ins["sat-1"].PublicKeyBytes()
	if got, ok := e.reg.DescribeKey(key); !ok || got != "name-sat-1 (sat-1)" {
		t.Errorf("DescribeKey = %q, %v", got, ok)
	}
	if got, ok := e.reg.DescribeKey(make([]byte, 32)); ok {
		t.Errorf("DescribeKey(unknown) = %q, true", got)
	}
}
