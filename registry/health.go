package registry

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/crow-sync/crow/identity"
	"github.com/crow-sync/crow/identity/member"
)

// ChallengeSize is the number of random bytes Register and the prober send
// as a /health challenge (the gateway accepts 16 to 64).
const ChallengeSize = 32

// maxHealthBody bounds a /health response.
const maxHealthBody = 64 << 10

// HealthDoc is the /health document as the registry reads it (SPEC §8). The
// gateway serves it; field names are part of the registration contract.
type HealthDoc struct {
	Status     string   `json:"status"`
	InstanceID string   `json:"instance_id"`
	Name       string   `json:"name"`
	Role       string   `json:"role"`
	CrowID     string   `json:"crow_id"`
	PublicKey  string   `json:"public_key"` // hex
	Version    string   `json:"version"`
	SyncAddrs  []string `json:"sync_addrs"`
	// GatewayURL (optional) is the URL the instance advertises for its own
	// gateway, and CreatedAt (optional, RFC 3339) the time it was
	// initialised. When present, Register stores them, so that a row
	// inserted here and the row the instance inserts for itself
	// (RegisterSelf) are identical and replicate without a conflict.
	GatewayURL string `json:"gateway_url,omitempty"`
	CreatedAt  string `json:"created_at,omitempty"`
	// Certificate is the instance's membership certificate (text form).
	Certificate string `json:"certificate,omitempty"`
	Challenge   string `json:"challenge,omitempty"` // hex, echoed
	Signature   string `json:"signature,omitempty"` // hex Ed25519 over identity.ChallengeMessage
	// Time (optional, RFC 3339 with nanoseconds) is the instance's clock
	// when it answered: `crow doctor` compares it with its own.
	Time string `json:"time,omitempty"`
}

// NormalizeGatewayURL checks that s is an absolute http(s) URL with a host
// and no user info, query or fragment, and returns it without a trailing
// slash. Errors wrap ErrInvalidURL.
func NormalizeGatewayURL(s string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidURL, err)
	}
	u.Scheme = strings.ToLower(u.Scheme)
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("%w: %q: scheme must be http or https", ErrInvalidURL, s)
	case u.Hostname() == "":
		return "", fmt.Errorf("%w: %q: no host", ErrInvalidURL, s)
	case u.User != nil:
		return "", fmt.Errorf("%w: %q: user info not allowed", ErrInvalidURL, s)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return "", fmt.Errorf("%w: %q: query or fragment not allowed", ErrInvalidURL, s)
	}
	u.Host = strings.ToLower(u.Host)
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u.String(), nil
}

// fetchHealth GETs base/health (with ?challenge= when challenge is not nil)
// and decodes it. Errors wrap ErrUnhealthy.
func fetchHealth(ctx context.Context, client *http.Client, base string, challenge []byte) (HealthDoc, error) {
	u, err := url.Parse(base + "/health")
	if err != nil {
		return HealthDoc{}, fmt.Errorf("%w: %w", ErrUnhealthy, err)
	}
	if challenge != nil {
		u.RawQuery = url.Values{"challenge": {hex.EncodeToString(challenge)}}.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return HealthDoc{}, fmt.Errorf("%w: %w", ErrUnhealthy, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return HealthDoc{}, fmt.Errorf("%w: %w", ErrUnhealthy, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxHealthBody+1))
	if err != nil {
		return HealthDoc{}, fmt.Errorf("%w: reading %s: %w", ErrUnhealthy, u.Redacted(), err)
	}
	if resp.StatusCode != http.StatusOK {
		return HealthDoc{}, fmt.Errorf("%w: %s answered %s", ErrUnhealthy, u.Redacted(), resp.Status)
	}
	if len(body) > maxHealthBody {
		return HealthDoc{}, fmt.Errorf("%w: %s: response larger than %d bytes", ErrUnhealthy, u.Redacted(), maxHealthBody)
	}
	var doc HealthDoc
	if err := json.Unmarshal(body, &doc); err != nil {
		return HealthDoc{}, fmt.Errorf("%w: %s: decoding: %w", ErrUnhealthy, u.Redacted(), err)
	}
	if doc.Status != "ok" {
		return HealthDoc{}, fmt.Errorf("%w: %s: status %q", ErrUnhealthy, u.Redacted(), doc.Status)
	}
	return doc, nil
}

// verifyHealth checks a challenged /health answer against our identity: the
// challenge is echoed, the crow id is ours, the instance presents a
// certificate of our root key for its id, key and role that no revocation we
// have seen names, and the signature verifies. It returns the (checked)
// public key and certificate.
func (r *Registry) verifyHealth(doc HealthDoc, challenge []byte) (ed25519.PublicKey, member.Certificate, error) {
	var none member.Certificate
	if err := validateID(doc.InstanceID); err != nil {
		return nil, none, err
	}
	echoed, err := hex.DecodeString(doc.Challenge)
	if err != nil || !bytes.Equal(echoed, challenge) {
		return nil, none, fmt.Errorf("%w: instance %q", ErrChallengeMismatch, doc.InstanceID)
	}
	if doc.CrowID != r.crowID {
		return nil, none, fmt.Errorf("%w: instance %q has crow id %q, ours is %q", ErrForeignIdentity, doc.InstanceID, doc.CrowID, r.crowID)
	}
	if !validRole(doc.Role) {
		return nil, none, fmt.Errorf("%w: instance %q has role %q", ErrInvalidInstance, doc.InstanceID, doc.Role)
	}
	pub, err := decodeKey(doc.PublicKey)
	if err != nil {
		return nil, none, fmt.Errorf("instance %q: %w", doc.InstanceID, err)
	}
	cert, err := r.trust.certify(doc.Certificate, doc.InstanceID, pub, doc.Role)
	if err != nil {
		return nil, none, err
	}
	if err := r.checkNotRevoked(doc.InstanceID, pub); err != nil {
		return nil, none, err
	}
	sig, err := hex.DecodeString(doc.Signature)
	if err != nil {
		return nil, none, fmt.Errorf("%w: instance %q: signature is not hex", ErrBadSignature, doc.InstanceID)
	}
	if err := identity.VerifyChallenge(pub, challenge, doc.InstanceID, sig); err != nil {
		return nil, none, fmt.Errorf("%w: %w", ErrBadSignature, err)
	}
	return pub, cert, nil
}

// checkNotRevoked fails with ErrRevoked when a revocation we have seen names
// id or key, or the row of id is revoked.
func (r *Registry) checkNotRevoked(id string, key ed25519.PublicKey) error {
	kh := hex.EncodeToString(key)
	r.mu.Lock()
	rv, ok := r.revoked.revokes(id, kh)
	r.mu.Unlock()
	if ok {
		return fmt.Errorf("instance %q: %w (key %s… revoked %s as instance %s)", id, ErrRevoked, kh[:16], rfc3339(rv.RevokedAt), rv.InstanceID)
	}
	if row, ok := r.snap.Load().rows[id]; ok && row.Revoked {
		return fmt.Errorf("instance %q (revoked %s): %w", id, row.RevokedAt, ErrRevoked)
	}
	return nil
}

// newChallenge reads ChallengeSize random bytes.
func (r *Registry) newChallenge() ([]byte, error) {
	c := make([]byte, ChallengeSize)
	if _, err := io.ReadFull(r.rand, c); err != nil {
		return nil, fmt.Errorf("reading challenge randomness: %w", err)
	}
	return c, nil
}
