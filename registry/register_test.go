package registry_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/crow-sync/crow/identity/member"
	"github.com/crow-sync/crow/registry"
	"github.com/crow-sync/crow/registry/registrytest"
)

func TestRegisterSuccess(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "home-1", registry.RoleHome)
	h, url := peer(t, ourSeed, "sat-1", registry.RoleSatellite)

	in, err := e.reg.Register(ctx, url+"/")
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	want := registry.Instance{
		ID: "sat-1", Name: "name-sat-1", Role: registry.RoleSatellite, GatewayURL: url,
		SyncAddrs: []string{"/ip4/127.0.0.1/tcp/4001"}, PublicKey: hex.EncodeToString(ourSeed.InstancePublicKey("sat-1")),
		LastSeen: t0.Unix(), Status: registry.StatusOnline, CreatedAt: "2026-11-29T21:00:00Z",
	}
	if !equalInstance(in, want) {
		t.Fatalf("Register = %+v\nwant %+v", in, want)
	}
	if h.Requests() != 2 {
		t.Errorf("health requests = %d, want 2 (plain, then challenge)", h.Requests())
	}
	if !e.reg.IsAdmitted("sat-1") || !e.reg.IsAdmitted(want.PublicKey) || !e.reg.IsAdmittedKey(ourSeed.InstancePublicKey("sat-1")) {
		t.Error("registered instance not admitted")
	}
	if e.reg.IsAdmitted("sat-2") || e.reg.IsAdmittedKey(ourSeed.InstancePublicKey("sat-2")) {
		t.Error("unregistered instance admitted")
	}
	if got, err := e.reg.LookupKey(ourSeed.InstancePublicKey("sat-1")); err != nil || got.ID != "sat-1" {
		t.Errorf("LookupKey = %+v, %v", got, err)
	}

	// The synced row holds identity facts only: no status, no last_seen.
	raw, err := e.table.Get(ctx, "sat-1")
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(raw, &fields); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"status", "last_seen"} {
		if _, ok := fields[k]; ok {
			t.Errorf("synced row has %q: %s", k, raw)
		}
	}
	if fields["revoked"] != false {
		t.Errorf("synced row revoked = %v: %s", fields["revoked"], raw)
	}

	evs := drain(e.events)
	if len(evs) != 1 || evs[0].Kind != registry.EventAdded || evs[0].Instance.ID != "sat-1" {
		t.Errorf("events = %+v, want one added", evs)
	}
	home, err := e.reg.Home()
	if err != nil || home.ID != "home-1" {
		t.Errorf("Home = %+v, %v", home, err)
	}
	if l := e.reg.List(); len(l) != 2 || l[0].ID != "home-1" || l[1].ID != "sat-1" {
		t.Errorf("List = %+v", l)
	}
}

func equalInstance(a, b registry.Instance) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

func TestRegisterRefused(t *testing.T) {
	flip := func(s string) string {
		b, _ := hex.DecodeString(s)
		if len(b) == 0 {
			return s // the plain /health request has nothing to flip
		}
		b[0] ^= 1
		return hex.EncodeToString(b)
	}
	cases := []struct {
		name   string
		setup  func(t *testing.T) string
		target error
	}{
		{name: "another identity", target: registry.ErrForeignIdentity, setup: func(t *testing.T) string {
			_, url := peer(t, otherSeed, "sat-x", registry.RoleSatellite)
			return url
		}},
		{name: "another identity claiming our crow id", target: registry.ErrForeignIdentity, setup: func(t *testing.T) string {
			h, url := peer(t, otherSeed, "sat-x", registry.RoleSatellite)
			h.Update(func(d *registry.HealthDoc) { d.CrowID = ourSeed.CrowID() })
			return url
		}},
		{name: "key of another instance id", target: registry.ErrUncertified, setup: func(t *testing.T) string {
			h, url := peer(t, ourSeed, "sat-x", registry.RoleSatellite)
			h.Update(func(d *registry.HealthDoc) { d.InstanceID = "sat-y" }) // claims sat-y with sat-x's key
			return url
		}},
		{name: "wrong signature", target: registry.ErrBadSignature, setup: func(t *testing.T) string {
			h, url := peer(t, ourSeed, "sat-x", registry.RoleSatellite)
			h.Tamper(func(d *registry.HealthDoc) { d.Signature = flip(d.Signature) })
			return url
		}},
		{name: "no signature", target: registry.ErrBadSignature, setup: func(t *testing.T) string {
			h, url := peer(t, ourSeed, "sat-x", registry.RoleSatellite)
			h.Tamper(func(d *registry.HealthDoc) { d.Signature = "" })
			return url
		}},
		{name: "challenge not echoed", target: registry.ErrChallengeMismatch, setup: func(t *testing.T) string {
			h, url := peer(t, ourSeed, "sat-x", registry.RoleSatellite)
			h.Tamper(func(d *registry.HealthDoc) { d.Challenge = "" })
			return url
		}},
		{name: "other challenge echoed", target: registry.ErrChallengeMismatch, setup: func(t *testing.T) string {
			h, url := peer(t, ourSeed, "sat-x", registry.RoleSatellite)
			h.Tamper(func(d *registry.HealthDoc) { d.Challenge = flip(d.Challenge) })
			return url
		}},
		{name: "not ok", target: registry.ErrUnhealthy, setup: func(t *testing.T) string {
			h, url := peer(t, ourSeed, "sat-x", registry.RoleSatellite)
			h.SetDown(true)
			return url
		}},
		{name: "bad role", target: registry.ErrInvalidInstance, setup: func(t *testing.T) string {
			h, url := peer(t, ourSeed, "sat-x", registry.RoleSatellite)
			h.Update(func(d *registry.HealthDoc) { d.Role = "boss" })
			return url
		}},
		{name: "no certificate", target: registry.ErrUncertified, setup: func(t *testing.T) string {
			h, url := peer(t, ourSeed, "sat-x", registry.RoleSatellite)
			h.Update(func(d *registry.HealthDoc) { d.Certificate = "" })
			return url
		}},
		{name: "garbled certificate", target: registry.ErrUncertified, setup: func(t *testing.T) string {
			h, url := peer(t, ourSeed, "sat-x", registry.RoleSatellite)
			h.Update(func(d *registry.HealthDoc) { d.Certificate = d.Certificate[:len(d.Certificate)-4] + "AAAA" })
			return url
		}},
		{name: "self-made certificate claiming our crow id", target: registry.ErrUncertified, setup: func(t *testing.T) string {
			// A key of its own, certified by another root under our crow id.
			key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))
			forged := registrytest.Certify(otherSeed, "sat-x", key.Public().(ed25519.PublicKey), registry.RoleSatellite, "x")
			forged.CrowID = ourSeed.CrowID()
			h := registrytest.NewCertifiedHealthServer(key, forged, "/ip4/127.0.0.1/tcp/4001")
			h.Update(func(d *registry.HealthDoc) { d.CrowID = ourSeed.CrowID() })
			return serve(t, h)
		}},
		{name: "satellite certificate presented as home", target: registry.ErrUncertified, setup: func(t *testing.T) string {
			h, url := peer(t, ourSeed, "sat-x", registry.RoleSatellite)
			h.Update(func(d *registry.HealthDoc) { d.Role = registry.RoleHome })
			return url
		}},
		{name: "certificate of another key", target: registry.ErrUncertified, setup: func(t *testing.T) string {
			key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, 32))
			cert := registrytest.Certify(ourSeed, "sat-x", ourSeed.InstancePublicKey("sat-x"), registry.RoleSatellite, "x")
			return serve(t, registrytest.NewCertifiedHealthServer(key, cert, "/ip4/127.0.0.1/tcp/4001"))
		}},
		{name: "bad sync address", target: registry.ErrInvalidInstance, setup: func(t *testing.T) string {
			h, url := peer(t, ourSeed, "sat-x", registry.RoleSatellite)
			h.Update(func(d *registry.HealthDoc) { d.SyncAddrs = []string{"127.0.0.1:4001"} })
			return url
		}},
		{name: "invalid URL", target: registry.ErrInvalidURL, setup: func(t *testing.T) string { return "ftp://127.0.0.1/" }},
		{name: "unreachable", target: registry.ErrUnhealthy, setup: func(t *testing.T) string {
			url := serve(t, nil)
			return url + "/nothing-here" // 404 on /nothing-here/health
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "home-1", registry.RoleHome)
			before := e.table.Puts()
			_, err := e.reg.Register(context.Background(), tc.setup(t))
			if !errors.Is(err, tc.target) {
				t.Fatalf("Register error = %v, want %v", err, tc.target)
			}
			if !strings.HasPrefix(err.Error(), "registering ") {
				t.Errorf("error lacks context: %v", err)
			}
			if e.table.Puts() != before || len(e.reg.List()) != 1 {
				t.Errorf("refused registration wrote something: puts %d→%d, list %+v", before, e.table.Puts(), e.reg.List())
			}
			if e.reg.IsAdmitted("sat-x") || e.reg.IsAdmitted("sat-y") {
				t.Error("refused instance admitted")
			}
		})
	}
}

func TestRevoke(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "home-1", registry.RoleHome)
	_, url := peer(t, ourSeed, "sat-1", registry.RoleSatellite)
	if _, err := e.reg.Register(ctx, url); err != nil {
		t.Fatal(err)
	}
	drain(e.events)
	e.clock.Advance(90e9)

	in, err := e.reg.Revoke(ctx, "sat-1")
	if err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	if in.Status != registry.StatusRevoked || in.RevokedAt != "2026-11-29T21:01:30Z" || !in.Revoked() {
		t.Errorf("revoked view = %+v", in)
	}
	if e.reg.IsAdmitted("sat-1") || e.reg.IsAdmittedKey(ourSeed.InstancePublicKey("sat-1")) {
		t.Error("revoked instance still admitted")
	}
	evs := drain(e.events)
	if len(evs) != 1 || evs[0].Kind != registry.EventRevoked || evs[0].Instance.ID != "sat-1" {
		t.Errorf("events = %+v, want one revoked", evs)
	}
	// Kept, not deleted; revoking again is a no-op.
	puts := e.table.Puts()
	if _, err := e.reg.Revoke(ctx, "sat-1"); err != nil {
		t.Fatalf("second Revoke: %v", err)
	}
	if e.table.Puts() != puts || len(drain(e.events)) != 0 {
		t.Error("second Revoke wrote or notified")
	}
	if got, err := e.reg.Get("sat-1"); err != nil || got.Status != registry.StatusRevoked {
		t.Errorf("Get after revoke = %+v, %v", got, err)
	}

	// It cannot come back, not even after a restart.
	if _, err := e.reg.Register(ctx, url); !errors.Is(err, registry.ErrRevoked) {
		t.Fatalf("re-register revoked = %v, want ErrRevoked", err)
	}
	reopened := e.open(t, "home-1")
	if _, err := reopened.Register(ctx, url); !errors.Is(err, registry.ErrRevoked) {
		t.Fatalf("re-register revoked after restart = %v, want ErrRevoked", err)
	}
	if reopened.IsAdmitted("sat-1") {
		t.Error("revoked instance admitted after restart")
	}

	if _, err := e.reg.Revoke(ctx, "home-1"); !errors.Is(err, registry.ErrRevokeSelf) {
		t.Errorf("revoke self = %v, want ErrRevokeSelf", err)
	}
	if _, err := e.reg.Revoke(ctx, "nobody"); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("revoke unknown = %v, want ErrNotFound", err)
	}
}

func TestRevokedSelfCannotRegister(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "home-1", registry.RoleHome)
	_, url := peer(t, ourSeed, "sat-1", registry.RoleSatellite)
	if _, err := e.reg.Register(ctx, url); err != nil {
		t.Fatal(err)
	}
	if _, err := e.reg.Revoke(ctx, "sat-1"); err != nil {
		t.Fatal(err)
	}
	// sat-1 restarts over the same (replicated) table: it learns it is revoked.
	sat := e.open(t, "sat-1")
	_, err := sat.RegisterSelf(ctx, registry.SelfInfo{Name: "s", Role: registry.RoleSatellite, GatewayURL: url})
	if !errors.Is(err, registry.ErrRevoked) {
		t.Fatalf("RegisterSelf of revoked = %v, want ErrRevoked", err)
	}
}

func TestSecondHome(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "home-1", registry.RoleHome)
	_, url := peer(t, ourSeed, "home-2", registry.RoleHome)
	if _, err := e.reg.Register(ctx, url); !errors.Is(err, registry.ErrSecondHome) {
		t.Fatalf("second home = %v, want ErrSecondHome", err)
	}
	// A satellite may not turn itself into a second home either.
	h, surl := peer(t, ourSeed, "sat-1", registry.RoleSatellite)
	if _, err := e.reg.Register(ctx, surl); err != nil {
		t.Fatal(err)
	}
	h.Update(func(d *registry.HealthDoc) { d.Role = registry.RoleHome })
	if _, err := e.reg.Register(ctx, surl); !errors.Is(err, registry.ErrUncertified) {
		t.Fatalf("satellite→home = %v, want ErrUncertified (its certificate says satellite)", err)
	}

	// On a satellite: home A revoked, then home B may be registered.
	s := newEnv(t, "sat-9", registry.RoleSatellite)
	_, aurl := peer(t, ourSeed, "home-a", registry.RoleHome)
	_, burl := peer(t, ourSeed, "home-b", registry.RoleHome)
	if _, err := s.reg.Register(ctx, aurl); err != nil {
		t.Fatal(err)
	}
	if _, err := s.reg.Register(ctx, burl); !errors.Is(err, registry.ErrSecondHome) {
		t.Fatalf("second home on satellite = %v", err)
	}
	if _, err := s.reg.Revoke(ctx, "home-a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.reg.Register(ctx, burl); err != nil {
		t.Fatalf("home after revoking the old one: %v", err)
	}
	if home, err := s.reg.Home(); err != nil || home.ID != "home-b" {
		t.Errorf("Home = %+v, %v", home, err)
	}
	// Registering the same home again is fine.
	if _, err := s.reg.Register(ctx, burl); err != nil {
		t.Fatalf("re-register home: %v", err)
	}
}

func TestReregisterIdempotent(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "home-1", registry.RoleHome)
	h, url := peer(t, ourSeed, "sat-1", registry.RoleSatellite)
	first, err := e.reg.Register(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	puts := e.table.Puts()
	drain(e.events)

	e.clock.Advance(3600e9)
	again, err := e.reg.Register(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if e.table.Puts() != puts {
		t.Errorf("unchanged re-registration wrote the table (%d → %d puts)", puts, e.table.Puts())
	}
	if len(drain(e.events)) != 0 {
		t.Error("unchanged re-registration emitted events")
	}
	if again.CreatedAt != first.CreatedAt || again.LastSeen != t0.Unix()+3600 {
		t.Errorf("re-registered view = %+v", again)
	}

	// New name and addresses: one update, created_at kept.
	h.Update(func(d *registry.HealthDoc) {
		d.Name = "laptop"
		d.SyncAddrs = []string{"/ip4/127.0.0.1/tcp/5001", "/ip6/::1/tcp/5001"}
	})
	upd, err := e.reg.Register(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if e.table.Puts() != puts+1 {
		t.Errorf("puts = %d, want %d", e.table.Puts(), puts+1)
	}
	if upd.Name != "laptop" || len(upd.SyncAddrs) != 2 || upd.CreatedAt != first.CreatedAt {
		t.Errorf("updated view = %+v", upd)
	}
	evs := drain(e.events)
	if len(evs) != 1 || evs[0].Kind != registry.EventUpdated {
		t.Errorf("events = %+v, want one updated", evs)
	}
	if n := len(e.reg.List()); n != 2 {
		t.Errorf("List has %d instances, want 2", n)
	}
}

func TestUnknownRowFieldsKept(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "home-1", registry.RoleHome)
	h, url := peer(t, ourSeed, "sat-1", registry.RoleSatellite)
	if _, err := e.reg.Register(ctx, url); err != nil {
		t.Fatal(err)
	}
	// A newer version added a field; it arrives by replication.
	raw, _ := e.table.Get(ctx, "sat-1")
	var m map[string]any
	json.Unmarshal(raw, &m)
	m["future_field"] = "x"
	raw, _ = json.Marshal(m)
	e.table.Set("sat-1", raw)
	if err := e.reg.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	h.Update(func(d *registry.HealthDoc) { d.Name = "renamed" })
	if _, err := e.reg.Register(ctx, url); err != nil {
		t.Fatal(err)
	}
	if _, err := e.reg.Revoke(ctx, "sat-1"); err != nil {
		t.Fatal(err)
	}
	raw, _ = e.table.Get(ctx, "sat-1")
	m = nil
	json.Unmarshal(raw, &m)
	if m["future_field"] != "x" || m["name"] != "renamed" || m["revoked"] != true {
		t.Errorf("row after rewrite = %s", raw)
	}
}

func TestNormalizeGatewayURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:3001":        "http://127.0.0.1:3001",
		"HTTPS://Desk.Tail.net/":       "https://desk.tail.net",
		" http://[::1]:3001/crow/ ":    "http://[::1]:3001/crow",
		"ftp://h":                      "",
		"http://":                      "",
		"127.0.0.1:3001":               "",
		"http://u:p@h":                 "",
		"http://h/?x=1":                "",
		"http://h/#f":                  "",
		"/health":                      "",
		"http://h:3001/a/../b/?":       "",
		"https://100.64.0.1:3001/path": "https://100.64.0.1:3001/path",
	} {
		got, err := registry.NormalizeGatewayURL(in)
		if want == "" {
			if !errors.Is(err, registry.ErrInvalidURL) {
				t.Errorf("NormalizeGatewayURL(%q) = %q, %v; want ErrInvalidURL", in, got, err)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("NormalizeGatewayURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestSyncedRowJSON(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "home-1", registry.RoleHome)
	_, url := peer(t, ourSeed, "sat-1", registry.RoleSatellite)
	if _, err := e.reg.Register(ctx, url); err != nil {
		t.Fatal(err)
	}
	key := hex.EncodeToString(ourSeed.InstancePublicKey("sat-1"))
	cert := registrytest.Certify(ourSeed, "sat-1", ourSeed.InstancePublicKey("sat-1"), registry.RoleSatellite, "name-sat-1").String()
	raw, _ := e.table.Get(ctx, "sat-1")
	want := `{"id":"sat-1","name":"name-sat-1","role":"satellite","gateway_url":"` + url +
		`","sync_addrs":["/ip4/127.0.0.1/tcp/4001"],"public_key":"` + key +
		`","created_at":"2026-11-29T21:00:00Z","revoked":false,"certificate":"` + cert + `"}`
	if string(raw) != want {
		t.Errorf("row =\n%s\nwant\n%s", raw, want)
	}
	e.clock.Advance(60e9)
	if _, err := e.reg.Revoke(ctx, "sat-1"); err != nil {
		t.Fatal(err)
	}
	raw, _ = e.table.Get(ctx, "sat-1")
	rv, err := member.Revoke(ourSeed.RootKey(), member.RevocationFields{CrowID: ourSeed.CrowID(), InstanceID: "sat-1",
		PublicKey: ourSeed.InstancePublicKey("sat-1"), RevokedAt: t0.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	want = `{"certificate":"` + cert + `","created_at":"2026-11-29T21:00:00Z","gateway_url":"` + url + `","id":"sat-1","name":"name-sat-1",` +
		`"public_key":"` + key + `","revocation":"` + rv.String() + `","revoked":true,"revoked_at":"2026-11-29T21:01:00Z","role":"satellite",` +
		`"sync_addrs":["/ip4/127.0.0.1/tcp/4001"]}`
	if string(raw) != want {
		t.Errorf("revoked row =\n%s\nwant\n%s", raw, want)
	}
}
