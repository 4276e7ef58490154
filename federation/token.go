package federation

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/crow-sync/crow/clock"
)

// Token limits and timing (SPEC §9). Changing any of them changes which
// tokens the instances of one crow accept from each other.
const (
	// MaxLifetime bounds expiry − issued-at of a token.
	MaxLifetime = 5 * time.Minute
	// MaxSkew is the clock difference tolerated between issuer and receiver.
	MaxSkew = 30 * time.Second
	// MaxTokenLen bounds the length of a token string; Verify rejects
	// longer ones before decoding anything.
	MaxTokenLen = 1024
	// TokenLifetime is the lifetime of the tokens a TokenSource issues.
	TokenLifetime = MaxLifetime
	// TokenRenewBefore: a TokenSource issues a new token once the cached one
	// has less than this much life left.
	TokenRenewBefore = time.Minute
)

// TokenPrefix starts every federation token, so a gateway tells a peer's
// token from an owner key without trying both.
const TokenPrefix = tokenPrefix

// Token wire format (frozen; see doc.go and TestTokenGolden).
const (
	tokenPrefix = "crowtok1."
	tokenDomain = "crow-fed-token-v1"
	nonceLen    = 16
)

// Errors of Verify, each wrapped with detail; test with errors.Is.
var (
	// ErrMalformed is returned by Verify for a token that is not a crowtok1
	// token: wrong prefix, too long, bad base64, wrong sizes, trailing bytes.
	ErrMalformed = errors.New("malformed token")
	// ErrUnknownIssuer is returned by Verify when keyOf has no key for the
	// issuer (not registered, or revoked); keyOf's error is wrapped too.
	ErrUnknownIssuer = errors.New("unknown or revoked issuer")
	// ErrBadSignature is returned by Verify when the signature does not
	// verify under the issuer's key.
	ErrBadSignature = errors.New("bad token signature")
	// ErrWrongAudience is returned by Verify for a token issued for another
	// instance.
	ErrWrongAudience = errors.New("token issued for another instance")
	// ErrSelfIssued is returned by Verify for a token whose issuer is the
	// verifying instance itself: a peer's token never is.
	ErrSelfIssued = errors.New("token issued by this instance itself")
	// ErrLifetime is returned by Verify for a token whose expiry is not after
	// its issued-at or more than MaxLifetime after it, and by Sign for such
	// claims.
	ErrLifetime = errors.New("token lifetime out of range")
	// ErrExpired is returned by Verify for a token whose expiry is more than
	// MaxSkew in the past.
	ErrExpired = errors.New("token expired")
	// ErrNotYetValid is returned by Verify for a token issued more than
	// MaxSkew in the future.
	ErrNotYetValid = errors.New("token not yet valid")
)

// Claims are what a token says: Issuer asks Audience for something between
// IssuedAt and Expiry. Times travel as whole Unix seconds; Verify returns
// them in UTC. Nonce makes every token unique.
//
// Compatibility: the encoding is frozen as crowtok1 (doc.go). A new field
// or a change of meaning needs a new domain string and prefix; receivers
// then accept both for as long as old issuers may exist.
type Claims struct {
	Issuer, Audience string
	IssuedAt, Expiry time.Time
	Nonce            [nonceLen]byte
}

// Sign encodes c and signs it with priv, the issuer's instance key. It
// refuses empty ids, a lifetime (in whole seconds) that is not in
// (0, MaxLifetime], and ids so long the token would exceed MaxTokenLen.
func Sign(priv ed25519.PrivateKey, c Claims) (string, error) {
	if len(priv) != ed25519.PrivateKeySize {
		return "", fmt.Errorf("signing token: private key is %d bytes, want %d", len(priv), ed25519.PrivateKeySize)
	}
	if c.Issuer == "" || c.Audience == "" {
		return "", fmt.Errorf("signing token: issuer and audience are required")
	}
	if err := checkLifetime(c.IssuedAt.Unix(), c.Expiry.Unix()); err != nil {
		return "", fmt.Errorf("signing token: %w", err)
	}
	if n := encodedLen(len(c.Issuer), len(c.Audience)); n > MaxTokenLen {
		return "", fmt.Errorf("signing token: ids too long (token would be %d bytes, max %d)", n, MaxTokenLen)
	}
	payload := encodePayload(c)
	sig := ed25519.Sign(priv, payload)
	return tokenPrefix + base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}

// Verify checks token for the instance self at time now and returns its
// claims. keyOf returns the public key of a registered, non-revoked instance
// and an error otherwise. The checks run in this order, and the first
// failure is returned: format and size (ErrMalformed), issuer key
// (ErrUnknownIssuer), signature (ErrBadSignature), issuer ≠ self
// (ErrSelfIssued), audience == self (ErrWrongAudience), lifetime ≤ MaxLifetime (ErrLifetime), time window with
// MaxSkew: expiry > now − MaxSkew (ErrExpired) and issued-at ≤ now + MaxSkew
// (ErrNotYetValid).
func Verify(token, self string, now time.Time, keyOf func(instanceID string) (ed25519.PublicKey, error)) (Claims, error) {
	payload, sig, err := splitToken(token)
	if err != nil {
		return Claims{}, err
	}
	c, iat, exp, err := decodePayload(payload)
	if err != nil {
		return Claims{}, err
	}
	pub, err := keyOf(c.Issuer)
	if err != nil {
		return Claims{}, fmt.Errorf("%w: %q: %w", ErrUnknownIssuer, c.Issuer, err)
	}
	if len(pub) != ed25519.PublicKeySize {
		return Claims{}, fmt.Errorf("%w: %q: public key is %d bytes", ErrUnknownIssuer, c.Issuer, len(pub))
	}
	if !ed25519.Verify(pub, payload, sig) {
		return Claims{}, fmt.Errorf("%w: issuer %q", ErrBadSignature, c.Issuer)
	}
	if c.Issuer == self {
		return Claims{}, fmt.Errorf("%w: issuer %q", ErrSelfIssued, c.Issuer)
	}
	if c.Audience != self {
		return Claims{}, fmt.Errorf("%w: audience %q, this instance is %q", ErrWrongAudience, c.Audience, self)
	}
	if err := checkLifetime(iat, exp); err != nil {
		return Claims{}, err
	}
	if !c.Expiry.After(now.Add(-MaxSkew)) {
		return Claims{}, fmt.Errorf("%w: expired at %s, now %s", ErrExpired, c.Expiry.Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	if c.IssuedAt.After(now.Add(MaxSkew)) {
		return Claims{}, fmt.Errorf("%w: issued at %s, now %s", ErrNotYetValid, c.IssuedAt.Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	return c, nil
}

// checkLifetime reports ErrLifetime unless 0 < exp − iat ≤ MaxLifetime
// (Unix seconds).
func checkLifetime(iat, exp int64) error {
	max := int64(MaxLifetime / time.Second)
	// exp > iat first, so exp-iat cannot overflow below; it can above, which
	// the unsigned comparison catches.
	if exp <= iat || uint64(exp)-uint64(iat) > uint64(max) {
		return fmt.Errorf("%w: issued-at %d, expiry %d (max %d s)", ErrLifetime, iat, exp, max)
	}
	return nil
}

// payloadLen is the size of the payload for ids of these lengths.
func payloadLen(issuer, audience int) int {
	return len(tokenDomain) + 2 + issuer + 2 + audience + 8 + 8 + nonceLen
}

// encodedLen is the length of the token for ids of these lengths.
func encodedLen(issuer, audience int) int {
	return len(tokenPrefix) + base64.RawURLEncoding.EncodedLen(payloadLen(issuer, audience)) + 1 +
		base64.RawURLEncoding.EncodedLen(ed25519.SignatureSize)
}

func encodePayload(c Claims) []byte {
	b := make([]byte, 0, payloadLen(len(c.Issuer), len(c.Audience)))
	b = append(b, tokenDomain...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(c.Issuer)))
	b = append(b, c.Issuer...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(c.Audience)))
	b = append(b, c.Audience...)
	b = binary.BigEndian.AppendUint64(b, uint64(c.IssuedAt.Unix()))
	b = binary.BigEndian.AppendUint64(b, uint64(c.Expiry.Unix()))
	return append(b, c.Nonce[:]...)
}

// tokenEncoding rejects non-zero padding bits, so that a token has exactly
// one spelling.
var tokenEncoding = base64.RawURLEncoding.Strict()

// splitToken checks the token's shape and returns its decoded payload and
// signature.
func splitToken(token string) (payload, sig []byte, err error) {
	if len(token) > MaxTokenLen {
		return nil, nil, fmt.Errorf("%w: %d bytes, max %d", ErrMalformed, len(token), MaxTokenLen)
	}
	rest, ok := strings.CutPrefix(token, tokenPrefix)
	if !ok {
		return nil, nil, fmt.Errorf("%w: does not start with %q", ErrMalformed, tokenPrefix)
	}
	p64, s64, ok := strings.Cut(rest, ".")
	if !ok {
		return nil, nil, fmt.Errorf("%w: no signature part", ErrMalformed)
	}
	// encoding/base64 skips \r and \n; a token has none.
	if i := strings.IndexFunc(p64+s64, notBase64URL); i >= 0 {
		return nil, nil, fmt.Errorf("%w: byte %q is not base64url", ErrMalformed, (p64 + s64)[i])
	}
	if payload, err = tokenEncoding.DecodeString(p64); err != nil {
		return nil, nil, fmt.Errorf("%w: payload: %w", ErrMalformed, err)
	}
	if sig, err = tokenEncoding.DecodeString(s64); err != nil {
		return nil, nil, fmt.Errorf("%w: signature: %w", ErrMalformed, err)
	}
	if len(sig) != ed25519.SignatureSize {
		return nil, nil, fmt.Errorf("%w: signature is %d bytes, want %d", ErrMalformed, len(sig), ed25519.SignatureSize)
	}
	return payload, sig, nil
}

func notBase64URL(r rune) bool {
	return !('A' <= r && r <= 'Z' || 'a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '-' || r == '_')
}

// decodePayload parses a payload; it also returns the raw Unix seconds.
func decodePayload(b []byte) (c Claims, iat, exp int64, err error) {
	bad := func(what string) (Claims, int64, int64, error) {
		return Claims{}, 0, 0, fmt.Errorf("%w: payload: %s", ErrMalformed, what)
	}
	rest, ok := strings.CutPrefix(string(b), tokenDomain)
	if !ok {
		return bad("wrong domain")
	}
	str := func() (string, bool) {
		if len(rest) < 2 {
			return "", false
		}
		n := int(binary.BigEndian.Uint16([]byte(rest[:2])))
		if len(rest) < 2+n {
			return "", false
		}
		s := rest[2 : 2+n]
		rest = rest[2+n:]
		return s, true
	}
	if c.Issuer, ok = str(); !ok || c.Issuer == "" {
		return bad("bad issuer")
	}
	if c.Audience, ok = str(); !ok || c.Audience == "" {
		return bad("bad audience")
	}
	if len(rest) != 8+8+nonceLen {
		return bad(fmt.Sprintf("%d bytes after the ids, want %d", len(rest), 8+8+nonceLen))
	}
	iat = int64(binary.BigEndian.Uint64([]byte(rest[0:8])))
	exp = int64(binary.BigEndian.Uint64([]byte(rest[8:16])))
	copy(c.Nonce[:], rest[16:])
	c.IssuedAt = time.Unix(iat, 0).UTC()
	c.Expiry = time.Unix(exp, 0).UTC()
	return c, iat, exp, nil
}

// TokenSource issues this instance's tokens. Every call of Token makes a
// new token (a new nonce): a receiver accepts each token once (its replay
// cache, Verifier), so a token is never reused, not even for a retry. It is
// safe for concurrent use.
type TokenSource struct {
	self string
	priv ed25519.PrivateKey
	clk  clock.Clock
}

// NewTokenSource returns a source of tokens issued by self and signed with
// priv, its instance key, with issue times on clk (nil: clock.System).
func NewTokenSource(self string, priv ed25519.PrivateKey, clk clock.Clock) *TokenSource {
	return &TokenSource{self: self, priv: priv, clk: clock.Or(clk)}
}

// Token returns a new token for audience, issued now (rounded down to a
// whole second) for TokenLifetime. It refuses audience == self: an
// instance does not call itself over federation.
func (s *TokenSource) Token(audience string) (string, error) {
	if audience == s.self && s.self != "" {
		return "", fmt.Errorf("signing token: %w: audience %q", ErrSelfIssued, audience)
	}
	now := s.clk.Now()
	c := Claims{Issuer: s.self, Audience: audience, IssuedAt: time.Unix(now.Unix(), 0)}
	c.Expiry = c.IssuedAt.Add(TokenLifetime)
	rand.Read(c.Nonce[:])
	return Sign(s.priv, c)
}

// Verifier returns the check of tokens presented to this instance (self) by
// peers: Verify at clk's time with keyOf (the registry's rule: the key the
// seed derives for a registered, non-revoked instance), then the replay
// cache (a ReplayCache of DefaultReplayCacheSize on clk, one per Verifier):
// a token is accepted once, and ErrReplayed refuses it afterwards until it
// expires. It answers the token's issuer.
func Verifier(self string, clk clock.Clock, keyOf func(instanceID string) (ed25519.PublicKey, error)) func(token string) (issuer string, err error) {
	return VerifierWith(self, clk, keyOf, NewReplayCache(clk, DefaultReplayCacheSize))
}

// PersistentVerifier is Verifier with its replay cache kept in the
// ReplayLog at path (see ReplayLog): tokens accepted before a restart stay
// refused after it. Close the log when the verifier is no longer used.
func PersistentVerifier(self string, clk clock.Clock, keyOf func(instanceID string) (ed25519.PublicKey, error), path string) (func(token string) (string, error), *ReplayLog, error) {
	clk = clock.Or(clk)
	l, live, err := OpenReplayLog(path, clk.Now())
	if err != nil {
		return nil, nil, fmt.Errorf("opening the federation replay log: %w", err)
	}
	seen := NewReplayCache(clk, DefaultReplayCacheSize)
	seen.Restore(live, l.Append)
	return VerifierWith(self, clk, keyOf, seen), l, nil
}

// VerifierWith is Verifier with the replay cache seen.
func VerifierWith(self string, clk clock.Clock, keyOf func(instanceID string) (ed25519.PublicKey, error), seen *ReplayCache) func(token string) (issuer string, err error) {
	clk = clock.Or(clk)
	return func(token string) (string, error) {
		now := clk.Now()
		c, err := Verify(token, self, now, keyOf)
		if err != nil {
			return "", err
		}
		if err := seen.admit(c, now); err != nil {
			return "", err
		}
		return c.Issuer, nil
	}
}

// ClaimedIssuer returns the issuer a well-formed token names, without
// verifying anything: for classifying a refusal in logs, never for trust.
func ClaimedIssuer(token string) (string, bool) {
	payload, _, err := splitToken(token)
	if err != nil {
		return "", false
	}
	c, _, _, err := decodePayload(payload)
	if err != nil {
		return "", false
	}
	return c.Issuer, true
}
