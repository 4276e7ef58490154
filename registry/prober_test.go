package registry_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/crow-sync/crow/registry"
	"github.com/crow-sync/crow/registry/registrytest"
)

// addReplicated puts instance id (served at url) into e's table as a
// replicated row would arrive: never probed from e.
func addReplicated(t *testing.T, e *env, id, url string) {
	t.Helper()
	src := newEnv(t, "home-1", registry.RoleHome)
	h := registrytest.NewHealthServer(ourSeed, id, id, registry.RoleSatellite)
	srv := serve(t, h)
	if _, err := src.reg.Register(context.Background(), srv); err != nil {
		t.Fatal(err)
	}
	raw, _ := src.table.Get(context.Background(), id)
	var row registry.Row
	json.Unmarshal(raw, &row)
	row.GatewayURL = url
	raw, _ = json.Marshal(row)
	e.table.Set(id, raw)
	if err := e.reg.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestProberTransitions(t *testing.T) {
	e := newEnv(t, "home-1", registry.RoleHome)
	h1, url1 := peer(t, ourSeed, "sat-1", registry.RoleSatellite)
	h2, url2 := peer(t, ourSeed, "sat-2", registry.RoleSatellite)
	h3, url3 := peer(t, ourSeed, "sat-3", registry.RoleSatellite)
	addReplicated(t, e, "sat-1", url1)
	addReplicated(t, e, "sat-2", url2)
	addReplicated(t, e, "sat-3", url3)
	if _, err := e.reg.Revoke(context.Background(), "sat-3"); err != nil {
		t.Fatal(err)
	}
	h2.SetDown(true)
	status := func(id string) (string, int64) {
		in, err := e.reg.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		return in.Status, in.LastSeen
	}
	if s, ls := status("sat-1"); s != registry.StatusUnknown || ls != 0 {
		t.Fatalf("before first probe: %s %d, want unknown 0", s, ls)
	}

	rounds := make(chan map[string]error)
	p := registry.NewProber(e.reg, registry.ProberConfig{
		Timeout: 5 * time.Second,
		OnRound: func(res map[string]error) { rounds <- res },
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx) }()

	// Round 1, at start: sat-1 online, sat-2 offline (never seen), sat-3 not probed (revoked), self not probed.
	res := <-rounds
	if len(res) != 2 || res["sat-1"] != nil || !errors.Is(res["sat-2"], registry.ErrUnhealthy) {
		t.Fatalf("round 1 = %v", res)
	}
	if s, ls := status("sat-1"); s != registry.StatusOnline || ls != t0.Unix() {
		t.Errorf("round 1 sat-1: %s %d", s, ls)
	}
	if s, ls := status("sat-2"); s != registry.StatusOffline || ls != 0 {
		t.Errorf("round 1 sat-2: %s %d", s, ls)
	}
	if s, _ := status("sat-3"); s != registry.StatusRevoked || h3.Requests() != 0 {
		t.Errorf("revoked sat-3: %s, %d requests (want none)", s, h3.Requests())
	}

	// Round 2 after one interval: sat-1 goes down (last_seen kept), sat-2 comes up.
	h1.SetDown(true)
	h2.SetDown(false)
	e.clock.Advance(registry.DefaultProbeInterval)
	res = <-rounds
	if res["sat-1"] == nil || res["sat-2"] != nil {
		t.Fatalf("round 2 = %v", res)
	}
	if s, ls := status("sat-1"); s != registry.StatusOffline || ls != t0.Unix() {
		t.Errorf("round 2 sat-1: %s %d, want offline, last seen t0", s, ls)
	}
	t2 := t0.Add(registry.DefaultProbeInterval).Unix()
	if s, ls := status("sat-2"); s != registry.StatusOnline || ls != t2 {
		t.Errorf("round 2 sat-2: %s %d, want online %d", s, ls, t2)
	}
	m, err := registry.ReadMirror(e.mirror)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range m.Instances {
		if in.ID == "sat-2" && (in.Status != registry.StatusOnline || in.LastSeen != t2) {
			t.Errorf("mirror not updated by probes: %+v", in)
		}
	}

	// An impostor at sat-1's URL (another instance of ours) is not sat-1.
	h1.SetDown(false)
	h1.Update(func(d *registry.HealthDoc) { d.InstanceID = "sat-9" })
	e.clock.Advance(registry.DefaultProbeInterval)
	if res = <-rounds; res["sat-1"] == nil {
		t.Errorf("round 3: impostor accepted: %v", res)
	}
	// A wrong signature is not online either.
	h1.Update(func(d *registry.HealthDoc) { d.InstanceID = "sat-1" })
	h1.Tamper(func(d *registry.HealthDoc) {
		b, _ := hex.DecodeString(d.Signature)
		b[0] ^= 0xff
		d.Signature = hex.EncodeToString(b)
	})
	e.clock.Advance(registry.DefaultProbeInterval)
	if res = <-rounds; !errors.Is(res["sat-1"], registry.ErrBadSignature) {
		t.Errorf("round 4: %v, want bad signature", res)
	}
	h1.Tamper(nil)
	e.clock.Advance(registry.DefaultProbeInterval)
	if res = <-rounds; res["sat-1"] != nil {
		t.Errorf("round 5: %v", res)
	}
	if s, ls := status("sat-1"); s != registry.StatusOnline || ls != t0.Add(4*registry.DefaultProbeInterval).Unix() {
		t.Errorf("round 5 sat-1: %s %d", s, ls)
	}

	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve = %v, want nil on shutdown", err)
	}
	if n := len(e.clock.Pending()); n != 0 {
		t.Errorf("Serve left %d timers running", n)
	}
	// Probes never wrote the synced table.
	for _, id := range []string{"sat-1", "sat-2"} {
		raw, _ := e.table.Get(context.Background(), id)
		var f map[string]any
		json.Unmarshal(raw, &f)
		if _, ok := f["status"]; ok {
			t.Errorf("probe wrote status into the synced row: %s", raw)
		}
	}
}

func TestProberTimeout(t *testing.T) {
	e := newEnv(t, "home-1", registry.RoleHome)
	block := make(chan struct{})
	defer close(block)
	slow := serveFunc(t, func() { <-block })
	addReplicated(t, e, "sat-1", slow)
	p := registry.NewProber(e.reg, registry.ProberConfig{Timeout: 5 * time.Second})
	got := make(chan map[string]error, 1)
	go func() { got <- p.ProbeOnce(context.Background()) }()
	// The probe's timeout is on the registry's clock: nothing ends it
	// until the clock reaches it.
	e.clock.BlockUntil(1)
	e.clock.Advance(5*time.Second - time.Nanosecond)
	select {
	case res := <-got:
		t.Fatalf("probe ended before its timeout: %v", res)
	default:
	}
	e.clock.Advance(time.Nanosecond)
	res := <-got
	if !errors.Is(res["sat-1"], registry.ErrUnhealthy) {
		t.Fatalf("slow probe = %v, want ErrUnhealthy", res["sat-1"])
	}
	if in, _ := e.reg.Get("sat-1"); in.Status != registry.StatusOffline {
		t.Errorf("status = %q, want offline", in.Status)
	}
}

// An instance that appears while the prober runs (registered here or
// replicated) is probed at once, not at the next tick.
func TestProberProbesNewInstanceAtOnce(t *testing.T) {
	e := newEnv(t, "home-1", registry.RoleHome)
	rounds := make(chan map[string]error, 4)
	p := registry.NewProber(e.reg, registry.ProberConfig{OnRound: func(res map[string]error) { rounds <- res }})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go p.Serve(ctx)
	if res := <-rounds; len(res) != 0 {
		t.Fatalf("first round with no peers: %v", res)
	}
	_, url := peer(t, ourSeed, "sat-4", registry.RoleSatellite)
	addReplicated(t, e, "sat-4", url)
	select {
	case res := <-rounds:
		if err, ok := res["sat-4"]; !ok || err != nil {
			t.Fatalf("round after the new instance: %v", res)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a new instance waited for the next tick (the clock never moved)")
	}
	if in, _ := e.reg.Get("sat-4"); in.Status != registry.StatusOnline || in.LastSeen != t0.Unix() {
		t.Fatalf("sat-4 after its first probe: %s %d", in.Status, in.LastSeen)
	}
}
