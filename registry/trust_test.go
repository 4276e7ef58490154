package registry_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/crow-sync/crow/identity/member"
	"github.com/crow-sync/crow/registry"
	"github.com/crow-sync/crow/registry/registrytest"
)

// joinerKey is a fresh key of a joining machine.
func joinerKey(b byte) ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{b}, ed25519.SeedSize))
}

// invite makes an invite on home e for name.
func invite(t *testing.T, e *env, name string, ttl time.Duration) member.Invite {
	t.Helper()
	made, err := e.reg.CreateInvite(context.Background(), name, ttl, "http://127.0.0.1:3001")
	if err != nil {
		t.Fatalf("CreateInvite: %v", err)
	}
	return made.Invite
}

func joinRequest(t *testing.T, inv member.Invite, id string, key ed25519.PrivateKey, name string) member.JoinRequest {
	t.Helper()
	req, err := member.NewJoinRequest(inv, id, key, name, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func TestEnrollIssuesACertificateOnce(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "home-1", registry.RoleHome)
	inv := invite(t, e, "laptop", 0)
	if got := inv.ExpiresAt.Sub(t0); got != registry.DefaultInviteTTL {
		t.Errorf("default lifetime = %v, want %v", got, registry.DefaultInviteTTL)
	}
	key := joinerKey(1)
	req := joinRequest(t, inv, "sat-new", key, "laptop")
	ans, err := e.reg.Enroll(ctx, req)
	if err != nil {
		t.Fatalf("Enroll: %v", err)
	}
	if err := member.VerifyJoinAnswer(inv, req, ans); err != nil {
		t.Fatalf("answer does not verify for the joiner: %v", err)
	}
	if ans.Certificate.Role != member.RoleSatellite || !ans.Certificate.PublicKey.Equal(key.Public()) {
		t.Errorf("certificate = %+v", ans.Certificate.Fields)
	}
	// Single use: the same request, or a new one from the same invite.
	if _, err := e.reg.Enroll(ctx, req); !errors.Is(err, registry.ErrInviteUsed) {
		t.Errorf("replayed join = %v, want ErrInviteUsed", err)
	}
	if _, err := e.reg.Enroll(ctx, joinRequest(t, inv, "sat-other", joinerKey(2), "laptop")); !errors.Is(err, registry.ErrInviteUsed) {
		t.Errorf("second join with a used invite = %v, want ErrInviteUsed", err)
	}
}

func TestEnrollRefusals(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		target error
		req    func(t *testing.T, e *env) member.JoinRequest
	}{
		{"expired", registry.ErrInviteExpired, func(t *testing.T, e *env) member.JoinRequest {
			inv := invite(t, e, "laptop", time.Minute)
			e.clock.Advance(time.Minute)
			return joinRequest(t, inv, "sat-new", joinerKey(1), "laptop")
		}},
		{"forged invite (unknown secret)", registry.ErrInviteUnknown, func(t *testing.T, e *env) member.JoinRequest {
			inv := invite(t, e, "laptop", 0)
			inv.Secret[0] ^= 1
			return joinRequest(t, inv, "sat-new", joinerKey(1), "laptop")
		}},
		{"key swapped in transit", registry.ErrBadJoin, func(t *testing.T, e *env) member.JoinRequest {
			inv := invite(t, e, "laptop", 0)
			req := joinRequest(t, inv, "sat-new", joinerKey(1), "laptop")
			req.PublicKey = joinerKey(66).Public().(ed25519.PublicKey)
			return req
		}},
		{"request for another home (pinned key differs)", registry.ErrBadJoin, func(t *testing.T, e *env) member.JoinRequest {
			inv := invite(t, e, "laptop", 0)
			inv.HomePublicKey = joinerKey(77).Public().(ed25519.PublicKey)
			return joinRequest(t, inv, "sat-new", joinerKey(1), "laptop")
		}},
		{"another name", registry.ErrBadJoin, func(t *testing.T, e *env) member.JoinRequest {
			inv := invite(t, e, "laptop", 0)
			return joinRequest(t, inv, "sat-new", joinerKey(1), "desktop")
		}},
		{"id already registered", registry.ErrBadJoin, func(t *testing.T, e *env) member.JoinRequest {
			inv := invite(t, e, "laptop", 0)
			return joinRequest(t, inv, "home-1", joinerKey(1), "laptop")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "home-1", registry.RoleHome)
			req := tc.req(t, e)
			if _, err := e.reg.Enroll(ctx, req); !errors.Is(err, tc.target) {
				t.Fatalf("Enroll = %v, want %v", err, tc.target)
			}
		})
	}

	// A refused request does not burn the invite.
	e := newEnv(t, "home-1", registry.RoleHome)
	inv := invite(t, e, "laptop", 0)
	bad := joinRequest(t, inv, "sat-new", joinerKey(1), "laptop")
	bad.MAC[0] ^= 1
	if _, err := e.reg.Enroll(ctx, bad); !errors.Is(err, registry.ErrBadJoin) {
		t.Fatalf("bad MAC = %v", err)
	}
	if _, err := e.reg.Enroll(ctx, joinRequest(t, inv, "sat-new", joinerKey(1), "laptop")); err != nil {
		t.Fatalf("the honest join after a refused one: %v", err)
	}

	// Only home (the root key) enrolls.
	s := newEnv(t, "sat-9", registry.RoleSatellite)
	cfg := s.config("sat-9")
	cfg.RootKey = nil
	sat, err := registry.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sat.CreateInvite(ctx, "x", 0, "http://127.0.0.1:1"); !errors.Is(err, registry.ErrNotHome) {
		t.Errorf("CreateInvite on a satellite = %v, want ErrNotHome", err)
	}
	if _, err := sat.Enroll(ctx, bad); !errors.Is(err, registry.ErrNotHome) {
		t.Errorf("Enroll on a satellite = %v, want ErrNotHome", err)
	}
	if _, err := sat.Revoke(ctx, "home-1"); !errors.Is(err, registry.ErrNotHome) {
		t.Errorf("Revoke on a satellite = %v, want ErrNotHome", err)
	}
}

func TestInviteLimits(t *testing.T) {
	e := newEnv(t, "home-1", registry.RoleHome)
	for _, ttl := range []time.Duration{time.Second, 8 * 24 * time.Hour, -time.Hour} {
		if _, err := e.reg.CreateInvite(context.Background(), "x", ttl, "http://127.0.0.1:1"); !errors.Is(err, registry.ErrInvalidInstance) {
			t.Errorf("ttl %v: %v, want ErrInvalidInstance", ttl, err)
		}
	}
	if _, err := e.reg.CreateInvite(context.Background(), "", 0, "http://127.0.0.1:1"); !errors.Is(err, registry.ErrInvalidInstance) {
		t.Errorf("empty name: %v", err)
	}
}

// TestRevocationHoldsUnderAnyID: a revoked key is refused at registration
// under its id and under a new id with a valid certificate, and its feed
// key is KeyRevoked.
func TestRevocationHoldsUnderAnyID(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "home-1", registry.RoleHome)
	key := joinerKey(3)
	pub := key.Public().(ed25519.PublicKey)
	h := registrytest.NewCertifiedHealthServer(key, registrytest.Certify(ourSeed, "sat-1", pub, registry.RoleSatellite, "laptop"), "/ip4/127.0.0.1/tcp/4001")
	url := serve(t, h)
	if _, err := e.reg.Register(ctx, url); err != nil {
		t.Fatal(err)
	}
	if st, id := e.reg.KeyStatus(pub); st != registry.KeyCertified || id != "sat-1" {
		t.Fatalf("KeyStatus = %v %q, want certified sat-1", st, id)
	}
	if _, err := e.reg.Revoke(ctx, "sat-1"); err != nil {
		t.Fatal(err)
	}
	if st, _ := e.reg.KeyStatus(pub); st != registry.KeyRevoked || e.reg.IsAdmittedKey(pub) || e.reg.AllowsFeed(pub) {
		t.Fatalf("after revoke: KeyStatus %v, admitted %v", st, e.reg.IsAdmittedKey(pub))
	}
	if _, err := e.reg.PeerKey("sat-1"); !errors.Is(err, registry.ErrRevoked) {
		t.Errorf("PeerKey = %v, want ErrRevoked", err)
	}
	if _, err := e.reg.Register(ctx, url); !errors.Is(err, registry.ErrRevoked) {
		t.Errorf("re-register = %v, want ErrRevoked", err)
	}
	// The same key under a fresh id, even with a (root-issued) certificate.
	h2 := registrytest.NewCertifiedHealthServer(key, registrytest.Certify(ourSeed, "sat-fresh", pub, registry.RoleSatellite, "laptop"))
	if _, err := e.reg.Register(ctx, serve(t, h2)); !errors.Is(err, registry.ErrRevoked) {
		t.Errorf("register the revoked key under a new id = %v, want ErrRevoked", err)
	}
	// The revocation is in crow_revocations, keyed by the key.
	raw, err := e.revs.Get(ctx, hex.EncodeToString(pub))
	if err != nil {
		t.Fatalf("no crow_revocations row: %v", err)
	}
	var rr registry.RevocationRow
	if err := json.Unmarshal(raw, &rr); err != nil || rr.InstanceID != "sat-1" {
		t.Fatalf("revocation row %s: %v", raw, err)
	}

	// Enrolling the revoked key again under a new id is refused too.
	inv := invite(t, e, "laptop", 0)
	if _, err := e.reg.Enroll(ctx, joinRequest(t, inv, "sat-fresh", key, "laptop")); !errors.Is(err, registry.ErrRevoked) {
		t.Errorf("Enroll of a revoked key = %v, want ErrRevoked", err)
	}
}

// TestReplicatedRevocationRecord: a satellite that receives only the
// crow_revocations row (say, through another satellite) refuses the key,
// even though its crow_instances row still says not revoked; a revocation
// row that does not verify is ignored.
func TestReplicatedRevocationRecord(t *testing.T) {
	ctx := context.Background()
	home := newEnv(t, "home-1", registry.RoleHome)
	_, url := peer(t, ourSeed, "sat-1", registry.RoleSatellite)
	if _, err := home.reg.Register(ctx, url); err != nil {
		t.Fatal(err)
	}
	row, _ := home.table.Get(ctx, "sat-1")

	sat := newEnv(t, "sat-2", registry.RoleSatellite)
	if err := sat.table.Put(ctx, "sat-1", true, row); err != nil {
		t.Fatal(err)
	}
	if err := sat.reg.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if !sat.reg.IsAdmitted("sat-1") {
		t.Fatal("certified row not admitted")
	}
	drain(sat.events)

	// A forged revocation (another root) is ignored.
	pub := ourSeed.InstancePublicKey("sat-1")
	forged, _ := member.Revoke(otherSeed.RootKey(), member.RevocationFields{CrowID: otherSeed.CrowID(), InstanceID: "sat-1", PublicKey: pub, RevokedAt: t0})
	data, _ := json.Marshal(registry.RevocationRow{InstanceID: "sat-1", PublicKey: hex.EncodeToString(pub), Revocation: forged.String()})
	_ = sat.revs.Put(ctx, "forged", true, data)
	if err := sat.reg.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if !sat.reg.IsAdmitted("sat-1") {
		t.Fatal("a forged revocation was honoured")
	}

	if _, err := home.reg.Revoke(ctx, "sat-1"); err != nil {
		t.Fatal(err)
	}
	rev, _ := home.revs.Get(ctx, hex.EncodeToString(pub))
	if err := sat.revs.Put(ctx, hex.EncodeToString(pub), true, rev); err != nil {
		t.Fatal(err)
	}
	if err := sat.reg.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if sat.reg.IsAdmitted("sat-1") || sat.reg.IsAdmittedKey(pub) {
		t.Fatal("revocation row applied but the key is still admitted")
	}
	got := drain(sat.events)
	if len(got) != 1 || got[0].Kind != registry.EventRevoked {
		t.Errorf("events = %+v, want one EventRevoked", got)
	}
	// It holds even if the rows carrying it later disappear or lose a
	// conflict to an unrevoked version.
	sat.revs.Delete(hex.EncodeToString(pub))
	sat.table.Set("sat-1", row)
	if err := sat.reg.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if sat.reg.IsAdmittedKey(pub) {
		t.Error("a revocation once seen was forgotten")
	}
}

// TestUncertifiedRowsAreNotIndexed: a replicated row without a certificate
// (or with a forged one) is never admitted, and its key is unknown.
func TestUncertifiedRowsAreNotIndexed(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "home-1", registry.RoleHome)
	key := joinerKey(5)
	pub := hex.EncodeToString(key.Public().(ed25519.PublicKey))
	forged := registrytest.Certify(otherSeed, "sat-x", key.Public().(ed25519.PublicKey), registry.RoleSatellite, "x")
	for id, cert := range map[string]string{"sat-x": forged.String(), "sat-y": ""} {
		row := `{"id":"` + id + `","name":"x","role":"satellite","gateway_url":"http://127.0.0.1:9","sync_addrs":[],"public_key":"` +
			pub + `","created_at":"2026-11-29T21:00:00Z","revoked":false,"certificate":"` + cert + `"}`
		if err := e.table.Put(ctx, id, true, json.RawMessage(row)); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.reg.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if e.reg.IsAdmitted("sat-x") || e.reg.IsAdmitted("sat-y") {
		t.Error("uncertified row admitted")
	}
	if st, _ := e.reg.KeyStatus(key.Public().(ed25519.PublicKey)); st != registry.KeyUnknown {
		t.Errorf("KeyStatus = %v, want unknown", st)
	}
}

func TestAnnouncementNeedsACertificate(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "home-1", registry.RoleHome)
	_, url := peer(t, ourSeed, "sat-1", registry.RoleSatellite)
	key := ourSeed.InstanceKey("sat-1")
	cert := registrytest.Certify(ourSeed, "sat-1", key.Public().(ed25519.PublicKey), registry.RoleSatellite, "name-sat-1")
	a := registry.SignAnnouncement(registry.Announcement{InstanceID: "sat-1", GatewayURL: url, Audience: "home-1"}, key, t0)

	if _, err := e.reg.AcceptAnnouncement(ctx, a); !errors.Is(err, registry.ErrBadAnnouncement) {
		t.Errorf("announcement without a certificate = %v, want ErrBadAnnouncement", err)
	}
	other := registrytest.Certify(otherSeed, "sat-1", key.Public().(ed25519.PublicKey), registry.RoleSatellite, "x")
	a.Certificate = other.String()
	if _, err := e.reg.AcceptAnnouncement(ctx, a); !errors.Is(err, registry.ErrBadAnnouncement) {
		t.Errorf("announcement with another crow's certificate = %v", err)
	}
	a.Certificate = cert.String()
	if _, err := e.reg.AcceptAnnouncement(ctx, a); err != nil {
		t.Fatalf("certified announcement: %v", err)
	}
	if _, err := e.reg.Revoke(ctx, "sat-1"); err != nil {
		t.Fatal(err)
	}
	a = registry.SignAnnouncement(registry.Announcement{InstanceID: "sat-1", GatewayURL: url, Audience: "home-1"}, key, t0)
	a.Certificate = cert.String()
	if _, err := e.reg.AcceptAnnouncement(ctx, a); !errors.Is(err, registry.ErrRevoked) {
		t.Errorf("announcement of a revoked instance = %v, want ErrRevoked", err)
	}
}
