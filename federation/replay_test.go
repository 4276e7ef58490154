package federation

import (
	"crypto/ed25519"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/crow-sync/crow/clock"
)

// replayFixture: "home" issues tokens to "laptop", whose Verifier runs on a
// fake clock.
type replayFixture struct {
	clk    *clock.Fake
	src    *TokenSource
	verify func(string) (string, error)
}

func newReplayFixture() replayFixture {
	home, laptop := testKey("home"), testKey("laptop")
	keys := newKeyring(map[string]ed25519.PrivateKey{"home": home, "laptop": laptop})
	clk := clock.NewFake(t0)
	return replayFixture{clk: clk, src: NewTokenSource("home", home, clk), verify: Verifier("laptop", clk, keys.keyOf)}
}

func (f replayFixture) token(t *testing.T) string {
	t.Helper()
	tok, err := f.src.Token("laptop")
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestVerifierRefusesReplay(t *testing.T) {
	f := newReplayFixture()
	tok := f.token(t)
	if iss, err := f.verify(tok); err != nil || iss != "home" {
		t.Fatalf("first use: issuer %q, err %v", iss, err)
	}
	for _, at := range []time.Duration{0, time.Second, 4 * time.Minute, 5*time.Minute + MaxSkew - time.Second} {
		f.clk.Set(t0.Add(at))
		if iss, err := f.verify(tok); !errors.Is(err, ErrReplayed) || iss != "" {
			t.Errorf("replay at +%s: issuer %q, err %v, want ErrReplayed", at, iss, err)
		}
	}
	// Another Verifier (another instance, or a restart) has its own cache.
	keys := newKeyring(map[string]ed25519.PrivateKey{"home": testKey("home")})
	f.clk.Set(t0)
	if _, err := Verifier("laptop", f.clk, keys.keyOf)(tok); err != nil {
		t.Errorf("another verifier: %v", err)
	}
}

func TestVerifierAcceptsFreshTokens(t *testing.T) {
	f := newReplayFixture()
	for i := range 5 {
		// The client retries with a new token each time, at the same second.
		if _, err := f.verify(f.token(t)); err != nil {
			t.Fatalf("token %d: %v", i, err)
		}
	}
}

func TestVerifierRefusesSelfIssued(t *testing.T) {
	f := newReplayFixture()
	own, err := Sign(testKey("laptop"), Claims{Issuer: "laptop", Audience: "laptop", IssuedAt: t0, Expiry: t0.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if iss, err := f.verify(own); !errors.Is(err, ErrSelfIssued) || iss != "" {
		t.Errorf("self-issued token: issuer %q, err %v, want ErrSelfIssued", iss, err)
	}
}

func TestReplayCacheExpiry(t *testing.T) {
	clk := clock.NewFake(t0)
	r := NewReplayCache(clk, 0)
	c := goldenClaims() // expires t0+5m
	if err := r.Admit(c); err != nil {
		t.Fatal(err)
	}
	short := goldenClaims()
	short.Nonce[0] ^= 0xff
	short.Expiry = t0.Add(time.Minute)
	if err := r.Admit(short); err != nil {
		t.Fatal(err)
	}
	if n := r.Len(); n != 2 {
		t.Fatalf("%d entries, want 2", n)
	}
	// Kept while Verify would still accept the token (expiry > now − MaxSkew).
	clk.Set(t0.Add(time.Minute + MaxSkew - time.Nanosecond))
	if n := r.Len(); n != 2 {
		t.Fatalf("before the short token's end: %d entries, want 2", n)
	}
	clk.Set(t0.Add(time.Minute + MaxSkew))
	if n := r.Len(); n != 1 {
		t.Fatalf("at the short token's end: %d entries, want 1", n)
	}
	if err := r.Admit(c); !errors.Is(err, ErrReplayed) {
		t.Fatalf("live token again: %v, want ErrReplayed", err)
	}
	clk.Set(t0.Add(5*time.Minute + MaxSkew))
	if n := r.Len(); n != 0 {
		t.Fatalf("after every expiry: %d entries, want 0", n)
	}
	// Forgotten once Verify refuses it anyway.
	if err := r.Admit(c); err != nil {
		t.Errorf("expired entry not freed: %v", err)
	}
}

func TestReplayCacheFullRefusesNewTokens(t *testing.T) {
	clk := clock.NewFake(t0)
	r := NewReplayCache(clk, 2)
	claims := func(b byte, exp time.Duration) Claims {
		c := goldenClaims()
		c.Nonce[0] = b
		c.Expiry = t0.Add(exp)
		return c
	}
	for b := range byte(2) {
		if err := r.Admit(claims(b, time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Admit(claims(9, time.Minute)); !errors.Is(err, ErrReplayCacheFull) {
		t.Fatalf("third token: %v, want ErrReplayCacheFull", err)
	}
	// A live one is still remembered, not pushed out.
	if err := r.Admit(claims(0, time.Minute)); !errors.Is(err, ErrReplayed) {
		t.Fatalf("replay while full: %v, want ErrReplayed", err)
	}
	clk.Set(t0.Add(time.Minute + MaxSkew))
	if err := r.Admit(claims(9, 2*time.Minute)); err != nil {
		t.Fatalf("after expiry freed room: %v", err)
	}
}

// TestClientTokensSurviveReplayCache: the real client against a peer that
// refuses replays (testPeer's ReplayCache): every request of every call,
// session set-up included, carries a new token; a token the peer accepted,
// sent again, gets 401.
func TestClientTokensSurviveReplayCache(t *testing.T) {
	f := newFederation()
	laptop := newTestPeer(t, "laptop", f.keys, withResults(result("m1", 0.5)))
	f.peers.set(laptop.peer())
	c := f.client(t, nil)
	for range 5 {
		if _, err := c.CallTool(t.Context(), "laptop", SearchTool, searchArgsJSON("q")); err != nil {
			t.Fatal(err)
		}
	}
	laptop.restart(true) // reconnects: new handshake, new tokens
	if _, err := c.CallTool(t.Context(), "laptop", SearchTool, searchArgsJSON("q")); err != nil {
		t.Fatal(err)
	}
	if r := laptop.refusals(); len(r) != 0 {
		t.Fatalf("peer refused %v", r)
	}

	used := laptop.lastToken()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, laptop.srv.URL+MCPPath,
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Authorization", "Bearer "+used)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("replayed token: status %d, want 401", resp.StatusCode)
	}
	if r := laptop.refusals(); len(r) != 1 || !errors.Is(r[0], ErrReplayed) {
		t.Fatalf("refusals %v, want one ErrReplayed", r)
	}
}
