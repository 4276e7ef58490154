package registry

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/crow-sync/crow/identity"
	"github.com/crow-sync/crow/identity/member"
)

// Trust is what every instance knows of its crow (SPEC §2): the crow id and
// the root public key that certificates and revocations verify under. Home
// computes it from the seed; a satellite enrolled by invitation received it
// in its join answer. It never holds a secret.
type Trust struct {
	CrowID        string
	RootPublicKey ed25519.PublicKey
}

// TrustOfSeed is the Trust of the crow whose master seed is seed.
func TrustOfSeed(seed identity.Seed) Trust {
	return Trust{CrowID: seed.CrowID(), RootPublicKey: seed.RootPublicKey()}
}

func (t Trust) check() error {
	if len(t.RootPublicKey) != ed25519.PublicKeySize {
		return errors.New("registry: Config.Trust.RootPublicKey is required")
	}
	if identity.CrowIDFromPublicKey(t.RootPublicKey) != t.CrowID {
		return errors.New("registry: Config.Trust.CrowID is not the root key's")
	}
	return nil
}

// ErrUncertified is returned when an instance presents no membership
// certificate, or one that does not verify under our root key or does not
// certify the instance id, key and role it claims.
var ErrUncertified = errors.New("registry: no valid membership certificate")

// ErrNotHome is returned by the operations that need the root key (Revoke,
// CreateInvite, Enroll) on an instance that does not hold the master seed.
var ErrNotHome = errors.New("registry: only home holds the root key")

// certify parses certText and checks that it is a certificate of our crow,
// signed by our root key, for exactly instance id with key pub and role.
// Errors wrap ErrUncertified (or ErrForeignIdentity for a certificate of
// another crow).
func (t Trust) certify(certText, id string, pub ed25519.PublicKey, role string) (member.Certificate, error) {
	if certText == "" {
		return member.Certificate{}, fmt.Errorf("%w: instance %q presents none", ErrUncertified, id)
	}
	c, err := member.ParseCertificate(certText)
	if err != nil {
		return member.Certificate{}, fmt.Errorf("%w: instance %q: %w", ErrUncertified, id, err)
	}
	if c.CrowID != t.CrowID {
		return member.Certificate{}, fmt.Errorf("%w: instance %q is certified by crow %q, ours is %q", ErrForeignIdentity, id, c.CrowID, t.CrowID)
	}
	if err := member.Verify(c, t.CrowID, t.RootPublicKey); err != nil {
		return member.Certificate{}, fmt.Errorf("%w: instance %q: %w", ErrUncertified, id, err)
	}
	switch {
	case c.InstanceID != id:
		return member.Certificate{}, fmt.Errorf("%w: the certificate of instance %q is for instance %q", ErrUncertified, id, c.InstanceID)
	case !c.PublicKey.Equal(pub):
		return member.Certificate{}, fmt.Errorf("%w: the certificate of instance %q is for another key", ErrUncertified, id)
	case string(c.Role) != role:
		return member.Certificate{}, fmt.Errorf("%w: instance %q says it is %s but is certified as %s", ErrUncertified, id, role, c.Role)
	}
	return c, nil
}

// revocationSet holds the verified revocations this registry has seen, by
// instance id and by key (hex). It only grows: a revocation once seen is
// enforced for the life of the process, whatever later happens to the rows
// that carried it.
type revocationSet struct {
	byID  map[string]member.Revocation
	byKey map[string]member.Revocation
}

func newRevocationSet() revocationSet {
	return revocationSet{byID: map[string]member.Revocation{}, byKey: map[string]member.Revocation{}}
}

func (s revocationSet) clone() revocationSet {
	return revocationSet{byID: maps.Clone(s.byID), byKey: maps.Clone(s.byKey)}
}

func (s revocationSet) add(rv member.Revocation) {
	s.byID[rv.InstanceID] = rv
	s.byKey[hex.EncodeToString(rv.PublicKey)] = rv
}

// revokes reports whether id or keyHex is revoked.
func (s revocationSet) revokes(id, keyHex string) (member.Revocation, bool) {
	if rv, ok := s.byKey[strings.ToLower(keyHex)]; ok {
		return rv, true
	}
	rv, ok := s.byID[id]
	return rv, ok
}

// RevocationRow is the data of one synced crow_revocations row (row id = the
// revoked key, lowercase hex). Only home writes it, once; it is never
// changed. The record is the root-signed revocation (member.Revocation's text
// form); the other fields repeat it for people reading the table. Example:
//
//	{"instance_id":"…","public_key":"<64 hex>","revoked_at":"2026-12-01T08:00:00Z",
//	 "revocation":"crowrev1.…"}
type RevocationRow struct {
	InstanceID string `json:"instance_id"`
	PublicKey  string `json:"public_key"`
	RevokedAt  string `json:"revoked_at"`
	Revocation string `json:"revocation"`
}

// verifyRevocation parses and verifies a revocation text of our crow.
func (t Trust) verifyRevocation(text string) (member.Revocation, error) {
	rv, err := member.ParseRevocation(text)
	if err != nil {
		return member.Revocation{}, err
	}
	if err := member.VerifyRevocation(rv, t.CrowID, t.RootPublicKey); err != nil {
		return member.Revocation{}, err
	}
	return rv, nil
}

// decodeRevocationRow parses and verifies a crow_revocations row.
func (t Trust) decodeRevocationRow(data json.RawMessage) (member.Revocation, error) {
	var row RevocationRow
	if err := json.Unmarshal(data, &row); err != nil {
		return member.Revocation{}, fmt.Errorf("decoding revocation row: %w", err)
	}
	return t.verifyRevocation(row.Revocation)
}

// KeyStatus is what the registry knows of an Ed25519 key (a feed's author, a
// connecting peer).
type KeyStatus int

// Key statuses.
const (
	// KeyUnknown: no registered instance holds the key with a valid
	// certificate (yet): its feed is parked until one does.
	KeyUnknown KeyStatus = iota
	// KeyCertified: the key is a registered, certified, non-revoked
	// instance's.
	KeyCertified
	// KeyRevoked: the key, or the instance it was certified for, is revoked.
	KeyRevoked
)

func (k KeyStatus) String() string {
	switch k {
	case KeyUnknown:
		return "unknown"
	case KeyCertified:
		return "certified"
	case KeyRevoked:
		return "revoked"
	}
	return fmt.Sprintf("KeyStatus(%d)", int(k))
}
