package federation

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crow-sync/crow/clock"
)

// testKey returns a fixed instance key derived from name.
func testKey(name string) ed25519.PrivateKey {
	seed := make([]byte, ed25519.SeedSize)
	copy(seed, name)
	return ed25519.NewKeyFromSeed(seed)
}

// keyring is a keyOf over a fixed set of keys, some of them revoked.
type keyring struct {
	mu      sync.Mutex // guards the maps
	keys    map[string]ed25519.PublicKey
	revoked map[string]bool
}

var errNotRegistered = errors.New("not registered")
var errRevoked = errors.New("revoked")

func newKeyring(keys map[string]ed25519.PrivateKey) *keyring {
	k := &keyring{keys: map[string]ed25519.PublicKey{}, revoked: map[string]bool{}}
	for id, priv := range keys {
		k.keys[id] = priv.Public().(ed25519.PublicKey)
	}
	return k
}

func (k *keyring) revoke(id string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.revoked[id] = true
}

func (k *keyring) keyOf(id string) (ed25519.PublicKey, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.revoked[id] {
		return nil, fmt.Errorf("instance %q: %w", id, errRevoked)
	}
	pub, ok := k.keys[id]
	if !ok {
		return nil, fmt.Errorf("instance %q: %w", id, errNotRegistered)
	}
	return pub, nil
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func goldenClaims() Claims {
	c := Claims{Issuer: "home", Audience: "laptop", IssuedAt: t0, Expiry: t0.Add(5 * time.Minute)}
	for i := range c.Nonce {
		c.Nonce[i] = byte(i)
	}
	return c
}

// TestTokenGolden pins the crowtok1 format (the payload hex was written by
// hand from doc.go; the signature was cross-checked with
// "openssl pkeyutl -sign -rawin" over the same key and payload).
//
// TestTokenGolden pins the crowtok1 format. If it fails, the format changed:
// old instances will refuse the new tokens. Do not update the constants;
// make a new format (doc.go).
func TestTokenGolden(t *testing.T) {
	const (
		wantPayload = "63726f772d6665642d746f6b656e2d7631" + // "crow-fed-token-v1"
			"0004" + "686f6d65" + // "home"
			"0006" + "6c6170746f70" + // "laptop"
			"0000000069a42a40" + // 2026-03-01T12:00:00Z
			"0000000069a42b6c" + // +300 s
			"000102030405060708090a0b0c0d0e0f" // nonce
		wantToken = "crowtok1.Y3Jvdy1mZWQtdG9rZW4tdjEABGhvbWUABmxhcHRvcAAAAABppCpAAAAAAGmkK2wAAQIDBAUGBwgJCgsMDQ4P." +
			"_8e8lbTt_tyWokV2q-zXy_nsG1s88VjvuYzxe_vD0kKnYgeCY1UNxla_SWOJK_zVhlFAg99TDr9ZrH3jTV2zBw"
	)
	priv := testKey("golden")
	tok, err := Sign(priv, goldenClaims())
	if err != nil {
		t.Fatal(err)
	}
	p64, s64, _ := strings.Cut(strings.TrimPrefix(tok, tokenPrefix), ".")
	payload, _ := base64.RawURLEncoding.DecodeString(p64)
	if got := hex.EncodeToString(payload); got != wantPayload {
		t.Errorf("payload\n got %s\nwant %s", got, wantPayload)
	}
	sig, _ := base64.RawURLEncoding.DecodeString(s64)
	if !ed25519.Verify(priv.Public().(ed25519.PublicKey), payload, sig) {
		t.Error("signature is not Ed25519 over the payload bytes")
	}
	if tok != wantToken {
		t.Errorf("token\n got %s\nwant %s", tok, wantToken)
	}
}

func TestTokenRoundTrip(t *testing.T) {
	home := testKey("home")
	keys := newKeyring(map[string]ed25519.PrivateKey{"home": home})
	want := goldenClaims()
	tok, err := Sign(home, want)
	if err != nil {
		t.Fatal(err)
	}
	for _, now := range []time.Time{t0, t0.Add(-MaxSkew), t0.Add(5*time.Minute + MaxSkew - time.Nanosecond)} {
		got, err := Verify(tok, "laptop", now, keys.keyOf)
		if err != nil {
			t.Fatalf("at %s: %v", now, err)
		}
		if got.Issuer != want.Issuer || got.Audience != want.Audience || !got.IssuedAt.Equal(want.IssuedAt) ||
			!got.Expiry.Equal(want.Expiry) || got.Nonce != want.Nonce {
			t.Fatalf("claims %+v, want %+v", got, want)
		}
		if got.IssuedAt.Location() != time.UTC {
			t.Errorf("IssuedAt in %s, want UTC", got.IssuedAt.Location())
		}
	}
}

func TestSignRefuses(t *testing.T) {
	priv := testKey("home")
	for name, mutate := range map[string]func(*Claims){
		"no issuer":          func(c *Claims) { c.Issuer = "" },
		"no audience":        func(c *Claims) { c.Audience = "" },
		"zero lifetime":      func(c *Claims) { c.Expiry = c.IssuedAt },
		"negative lifetime":  func(c *Claims) { c.Expiry = c.IssuedAt.Add(-time.Second) },
		"5 min + 1 s":        func(c *Claims) { c.Expiry = c.IssuedAt.Add(5*time.Minute + time.Second) },
		"huge lifetime":      func(c *Claims) { c.IssuedAt, c.Expiry = time.Unix(-1<<62, 0), time.Unix(1<<62, 0) },
		"ids over 1 KiB":     func(c *Claims) { c.Issuer = strings.Repeat("x", 700) },
		"ids over u16 range": func(c *Claims) { c.Audience = strings.Repeat("x", 70000) },
	} {
		c := goldenClaims()
		mutate(&c)
		if tok, err := Sign(priv, c); err == nil {
			t.Errorf("%s: signed %q", name, tok)
		}
	}
	if _, err := Sign(priv[:10], goldenClaims()); err == nil {
		t.Error("signed with a truncated key")
	}
	// The longest ids that fit still make a token Verify accepts.
	c := goldenClaims()
	c.Issuer = strings.Repeat("i", 300)
	c.Audience = strings.Repeat("a", 1000)
	for len(c.Audience) > 0 {
		if _, err := Sign(priv, c); err == nil {
			break
		}
		c.Audience = c.Audience[:len(c.Audience)-1]
	}
	tok, err := Sign(priv, c)
	if err != nil {
		t.Fatal(err)
	}
	if len(tok) != MaxTokenLen && len(tok) != MaxTokenLen-1 {
		t.Errorf("longest token is %d bytes, want about %d", len(tok), MaxTokenLen)
	}
	keys := newKeyring(map[string]ed25519.PrivateKey{c.Issuer: priv})
	if _, err := Verify(tok, c.Audience, t0, keys.keyOf); err != nil {
		t.Errorf("longest token: %v", err)
	}
}

func TestVerifyFailures(t *testing.T) {
	home, other := testKey("home"), testKey("other")
	keys := newKeyring(map[string]ed25519.PrivateKey{"home": home, "gone": testKey("gone"), "laptop": testKey("laptop")})
	keys.revoke("gone")
	sign := func(priv ed25519.PrivateKey, mutate func(*Claims)) string {
		c := goldenClaims()
		if mutate != nil {
			mutate(&c)
		}
		tok, err := Sign(priv, c)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	good := sign(home, nil)
	payload, sig, _ := strings.Cut(strings.TrimPrefix(good, tokenPrefix), ".")
	// withPayload re-signs raw payload bytes, bypassing Sign's checks.
	withPayload := func(p []byte) string {
		return tokenPrefix + base64.RawURLEncoding.EncodeToString(p) + "." +
			base64.RawURLEncoding.EncodeToString(ed25519.Sign(home, p))
	}
	rawPayload, _ := base64.RawURLEncoding.DecodeString(payload)
	long := goldenClaims()
	long.Expiry = long.IssuedAt.Add(5*time.Minute + time.Second)
	backwards := goldenClaims()
	backwards.Expiry = backwards.IssuedAt

	for _, tc := range []struct {
		name  string
		token string
		now   time.Time
		want  error
		cause error // also wrapped, when set
	}{
		{"empty", "", t0, ErrMalformed, nil},
		{"other prefix", "crowtok2." + payload + "." + sig, t0, ErrMalformed, nil},
		{"no signature", tokenPrefix + payload, t0, ErrMalformed, nil},
		{"three parts", good + ".x", t0, ErrMalformed, nil},
		{"padded base64", tokenPrefix + payload + "=." + sig, t0, ErrMalformed, nil},
		{"newline in payload", tokenPrefix + payload[:10] + "\n" + payload[10:] + "." + sig, t0, ErrMalformed, nil},
		{"carriage return in signature", tokenPrefix + payload + ".\r" + sig, t0, ErrMalformed, nil},
		{"std base64", strings.NewReplacer("-", "+", "_", "/").Replace(good), t0, ErrMalformed, nil},
		{"short signature", tokenPrefix + payload + "." + sig[:20], t0, ErrMalformed, nil},
		{"too long", good + strings.Repeat("A", MaxTokenLen), t0, ErrMalformed, nil},
		{"trailing byte", withPayload(append(bytes.Clone(rawPayload), 0)), t0, ErrMalformed, nil},
		{"missing nonce byte", withPayload(rawPayload[:len(rawPayload)-1]), t0, ErrMalformed, nil},
		{"wrong domain", withPayload(append([]byte("crow-fed-token-v2"), rawPayload[len(tokenDomain):]...)), t0, ErrMalformed, nil},
		{"issuer length past end", withPayload(append([]byte(tokenDomain), 0xff, 0xff, 'x')), t0, ErrMalformed, nil},
		{"empty issuer", withPayload(encodePayload(Claims{Audience: "laptop", IssuedAt: t0, Expiry: t0.Add(time.Minute)})), t0, ErrMalformed, nil},
		{"unregistered issuer", sign(other, func(c *Claims) { c.Issuer = "stranger" }), t0, ErrUnknownIssuer, errNotRegistered},
		{"revoked issuer", sign(testKey("gone"), func(c *Claims) { c.Issuer = "gone" }), t0, ErrUnknownIssuer, errRevoked},
		{"signed by another key", sign(other, nil), t0, ErrBadSignature, nil},
		{"self-issued", sign(testKey("laptop"), func(c *Claims) { c.Issuer = "laptop" }), t0, ErrSelfIssued, nil},
		{"self-issued for another", sign(testKey("laptop"), func(c *Claims) { c.Issuer, c.Audience = "laptop", "vps" }), t0, ErrSelfIssued, nil},
		{"order: signature before self-issued", sign(other, func(c *Claims) { c.Issuer = "laptop" }), t0, ErrBadSignature, nil},
		{"other audience", sign(home, func(c *Claims) { c.Audience = "vps" }), t0, ErrWrongAudience, nil},
		{"5 min + 1 s lifetime", withPayload(encodePayload(long)), t0, ErrLifetime, nil},
		{"zero lifetime", withPayload(encodePayload(backwards)), t0, ErrLifetime, nil},
		{"expired at skew edge", good, t0.Add(5*time.Minute + MaxSkew), ErrExpired, nil},
		{"expired long ago", good, t0.Add(time.Hour), ErrExpired, nil},
		{"not yet valid past skew", good, t0.Add(-MaxSkew - time.Second), ErrNotYetValid, nil},
		// Checks run in order: an unknown issuer is reported as such though
		// the audience and time are wrong too.
		{"order: issuer before audience", sign(other, func(c *Claims) { c.Issuer, c.Audience = "stranger", "vps" }), t0.Add(time.Hour), ErrUnknownIssuer, nil},
		{"order: signature before audience", sign(other, func(c *Claims) { c.Audience = "vps" }), t0, ErrBadSignature, nil},
		{"order: audience before time", sign(home, func(c *Claims) { c.Audience = "vps" }), t0.Add(time.Hour), ErrWrongAudience, nil},
		{"order: lifetime before time", withPayload(encodePayload(long)), t0.Add(time.Hour), ErrLifetime, nil},
	} {
		_, err := Verify(tc.token, "laptop", tc.now, keys.keyOf)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: err %v, want %v", tc.name, err, tc.want)
			continue
		}
		if tc.cause != nil && !errors.Is(err, tc.cause) {
			t.Errorf("%s: err %v does not wrap %v", tc.name, err, tc.cause)
		}
	}
	// The edges that still pass.
	for _, now := range []time.Time{t0.Add(-MaxSkew), t0.Add(5*time.Minute + MaxSkew - time.Second)} {
		if _, err := Verify(good, "laptop", now, keys.keyOf); err != nil {
			t.Errorf("at %s: %v", now, err)
		}
	}
}

// TestVerifyBitFlips flips every bit of a valid token: none of the results
// may verify.
func TestVerifyBitFlips(t *testing.T) {
	home := testKey("home")
	keys := newKeyring(map[string]ed25519.PrivateKey{"home": home})
	tok, err := Sign(home, goldenClaims())
	if err != nil {
		t.Fatal(err)
	}
	for i := range len(tok) {
		for bit := range 8 {
			b := []byte(tok)
			b[i] ^= 1 << bit
			if c, err := Verify(string(b), "laptop", t0, keys.keyOf); err == nil {
				t.Errorf("byte %d bit %d flipped: verified as %+v", i, bit, c)
			}
		}
	}
}

func TestTokenSourceFresh(t *testing.T) {
	home := testKey("home")
	keys := newKeyring(map[string]ed25519.PrivateKey{"home": home})
	start := t0.Add(400 * time.Millisecond) // not on a whole second
	clk := clock.NewFake(start)
	src := NewTokenSource("home", home, clk)

	// Every call makes a new token, even at the same instant: a receiver
	// accepts each one once.
	nonces := map[[nonceLen]byte]bool{}
	toks := map[string]bool{}
	for range 3 {
		tok, err := src.Token("laptop")
		if err != nil {
			t.Fatal(err)
		}
		c, err := Verify(tok, "laptop", start, keys.keyOf)
		if err != nil {
			t.Fatal(err)
		}
		if !c.IssuedAt.Equal(t0) || c.Expiry.Sub(c.IssuedAt) != TokenLifetime {
			t.Fatalf("claims %+v: want issued at %s for %s", c, t0, TokenLifetime)
		}
		if toks[tok] || nonces[c.Nonce] {
			t.Fatal("a token (or nonce) issued twice")
		}
		toks[tok], nonces[c.Nonce] = true, true
	}
	vps, err := src.Token("vps")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(vps, "vps", start, keys.keyOf); err != nil {
		t.Fatal(err)
	}
	clk.Set(t0.Add(4 * time.Minute))
	later, err := src.Token("laptop")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Verify(later, "laptop", clk.Now(), keys.keyOf)
	if err != nil {
		t.Fatal(err)
	}
	if !c.IssuedAt.Equal(t0.Add(4 * time.Minute)) {
		t.Errorf("token issued at %s, want %s", c.IssuedAt, t0.Add(4*time.Minute))
	}
	if _, err := src.Token("home"); !errors.Is(err, ErrSelfIssued) {
		t.Errorf("token for itself: err %v, want ErrSelfIssued", err)
	}
}

func TestTokenSourceConcurrent(t *testing.T) {
	home := testKey("home")
	src := NewTokenSource("home", home, nil)
	var wg sync.WaitGroup
	toks := make([]string, 16)
	for i := range toks {
		wg.Go(func() {
			tok, err := src.Token("laptop")
			if err != nil {
				t.Error(err)
			}
			toks[i] = tok
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, tok := range toks {
		if seen[tok] {
			t.Fatal("concurrent callers got the same token")
		}
		seen[tok] = true
	}
	if _, err := NewTokenSource("", home, nil).Token("laptop"); err == nil {
		t.Error("a source without an id issued a token")
	}
}
