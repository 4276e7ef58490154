package registry_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/crow-sync/crow/registry"
)

// replicate copies every row of from's table into to's table, as the apply
// loop would, and reloads to.
func replicate(t *testing.T, from, to *env) {
	t.Helper()
	ctx := context.Background()
	for _, in := range from.reg.List() {
		raw, err := from.table.Get(ctx, in.ID)
		if err != nil {
			t.Fatal(err)
		}
		to.table.Set(in.ID, raw)
	}
	if err := to.reg.Reload(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestReplicatedRevocation(t *testing.T) {
	ctx := context.Background()
	home := newEnv(t, "home-1", registry.RoleHome)
	sat := newEnv(t, "sat-1", registry.RoleSatellite)
	_, url := peer(t, ourSeed, "sat-2", registry.RoleSatellite)
	if _, err := home.reg.Register(ctx, url); err != nil {
		t.Fatal(err)
	}

	replicate(t, home, sat)
	if !sat.reg.IsAdmitted("home-1") || !sat.reg.IsAdmitted("sat-2") {
		t.Fatal("replicated rows not admitted")
	}
	evs := drain(sat.events)
	if len(evs) != 2 || evs[0].Kind != registry.EventAdded || evs[1].Kind != registry.EventAdded {
		t.Errorf("events after replication = %+v, want two added", evs)
	}
	// Not probed from here yet.
	if in, _ := sat.reg.Get("sat-2"); in.Status != registry.StatusUnknown || in.LastSeen != 0 {
		t.Errorf("replicated instance view = %+v, want unknown, never seen", in)
	}

	if _, err := home.reg.Revoke(ctx, "sat-2"); err != nil {
		t.Fatal(err)
	}
	replicate(t, home, sat)
	if sat.reg.IsAdmitted("sat-2") || sat.reg.IsAdmittedKey(ourSeed.InstancePublicKey("sat-2")) {
		t.Error("revocation did not reach the satellite's gater")
	}
	evs = drain(sat.events)
	if len(evs) != 1 || evs[0].Kind != registry.EventRevoked || evs[0].Instance.ID != "sat-2" {
		t.Errorf("events after replicated revoke = %+v, want one revoked", evs)
	}
	// A reload with nothing new says nothing.
	if err := sat.reg.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if evs := drain(sat.events); len(evs) != 0 {
		t.Errorf("idle reload emitted %+v", evs)
	}
}

func TestReloadIgnoresForeignRows(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "home-1", registry.RoleHome)
	// A row whose key derives from another seed (a bug or an attack upstream).
	bad, _ := json.Marshal(registry.Row{
		ID: "evil", Name: "evil", Role: registry.RoleSatellite, GatewayURL: "http://127.0.0.1:9",
		SyncAddrs: []string{}, PublicKey: hex.EncodeToString(otherSeed.InstancePublicKey("evil")),
		CreatedAt: "2026-11-29T21:00:00Z",
	})
	e.table.Set("evil", bad)
	e.table.Set("junk", json.RawMessage(`{"id":"junk","role":"nope"}`))
	e.table.Set("garbage", json.RawMessage(`not json`))
	if err := e.reg.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if evs := drain(e.events); len(evs) != 0 {
		t.Errorf("invalid rows emitted %+v", evs)
	}
	if e.reg.IsAdmitted("evil") || e.reg.IsAdmittedKey(otherSeed.InstancePublicKey("evil")) || e.reg.IsAdmitted("junk") {
		t.Error("invalid row admitted")
	}
	if n := len(e.reg.List()); n != 1 {
		t.Errorf("List has %d instances, want only self", n)
	}
}

func TestObservationsSurviveRestart(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "home-1", registry.RoleHome)
	_, url := peer(t, ourSeed, "sat-1", registry.RoleSatellite)
	if _, err := e.reg.Register(ctx, url); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(600e9)
	re := e.open(t, "home-1")
	in, err := re.Get("sat-1")
	if err != nil {
		t.Fatal(err)
	}
	if in.Status != registry.StatusOnline || in.LastSeen != t0.Unix() {
		t.Errorf("after restart = %+v, want online last seen at t0", in)
	}
	self, _ := re.Get("home-1")
	if self.Status != registry.StatusOnline || self.LastSeen != t0.Unix()+600 {
		t.Errorf("self = %+v, want online now", self)
	}
}

func TestSyncingHook(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "home-1", registry.RoleHome)
	_, url := peer(t, ourSeed, "sat-1", registry.RoleSatellite)
	if _, err := e.reg.Register(ctx, url); err != nil {
		t.Fatal(err)
	}
	e.reg.SetSyncing("sat-1", true)
	if in, _ := e.reg.Get("sat-1"); in.Status != registry.StatusSyncing {
		t.Errorf("status = %q, want syncing", in.Status)
	}
	e.reg.SetSyncing("sat-1", false)
	if in, _ := e.reg.Get("sat-1"); in.Status != registry.StatusOnline {
		t.Errorf("status = %q, want online", in.Status)
	}
	e.reg.SetSyncing("sat-1", true)
	if _, err := e.reg.Revoke(ctx, "sat-1"); err != nil {
		t.Fatal(err)
	}
	if in, _ := e.reg.Get("sat-1"); in.Status != registry.StatusRevoked {
		t.Errorf("status = %q, want revoked to win over syncing", in.Status)
	}
}

func TestRowTurningInvalidIsRemoved(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "home-1", registry.RoleHome)
	_, url := peer(t, ourSeed, "sat-1", registry.RoleSatellite)
	if _, err := e.reg.Register(ctx, url); err != nil {
		t.Fatal(err)
	}
	drain(e.events)
	e.table.Set("sat-1", json.RawMessage(`{"id":"sat-1","role":"satellite","public_key":"00"}`))
	if err := e.reg.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	evs := drain(e.events)
	if len(evs) != 1 || evs[0].Kind != registry.EventRemoved || evs[0].Instance.ID != "sat-1" {
		t.Errorf("events = %+v, want one removed", evs)
	}
	if e.reg.IsAdmitted("sat-1") {
		t.Error("invalid row still admitted")
	}
}
