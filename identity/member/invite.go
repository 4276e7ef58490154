package member

import (
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"io"
	"net/url"
	"time"
)

// Frozen constants of invites.
const (
	invitePrefix   = "crowinv1."
	inviteIDDomain = "crow-invite-id-v1"
	// SecretSize is the size of an invite's one-time secret.
	SecretSize = 32
)

// Invite is a one-time invitation to join a crow (SPEC §7): where home is
// (GatewayURL), the key home answers with (HomePublicKey, home's instance
// key, pinned by the joiner), the crow (CrowID), the one-time Secret and the
// end of its life (ExpiresAt, whole Unix seconds, decoded in UTC). It is
// given out of band, as one line of text; whoever holds it can join until it
// is used or expires, so it is as secret as a password. Home keeps Secret and
// ExpiresAt under ID and marks the invite used on the first join.
//
// Binary encoding (frozen, version 1; pinned by testdata/invite.json):
//
//	u8      version = 1
//	u16     len(gateway URL)   big-endian, as every length and integer below
//	bytes   gateway URL        1..MaxURLLen printable ASCII, http or https with a host
//	[32]    home public key (Ed25519)
//	u16     len(crow id)
//	bytes   crow id            1..MaxIDLen printable ASCII
//	[32]    secret
//	i64     expires_at         Unix seconds, 0..253402300799
//
// and nothing after. The invite is not signed: it is a bearer capability,
// and what it carries is checked by the join (see the package
// documentation). Text form: "crowinv1." + base64url (no padding, strict).
// Compatibility rules as for [Certificate]; a version 2 is "crowinv2.".
type Invite struct {
	GatewayURL    string
	HomePublicKey ed25519.PublicKey
	CrowID        string
	Secret        [SecretSize]byte
	ExpiresAt     time.Time
}

// InviteID is the public name of an invite: SHA-256("crow-invite-id-v1" ||
// 0x00 || secret). It is what crosses the wire in a join request, and what
// home files the invite under; it reveals nothing of the secret.
func InviteID(secret [SecretSize]byte) [32]byte {
	return sha256.Sum256(signed(inviteIDDomain, secret[:]))
}

// ID is InviteID(inv.Secret).
func (inv Invite) ID() [32]byte { return InviteID(inv.Secret) }

// NewInvite makes an invite to join crowID through home's gateway at
// gatewayURL, answered by homePub, valid until expiresAt (truncated to the
// second), with a secret read from rand (crypto/rand.Reader in production).
func NewInvite(gatewayURL string, homePub ed25519.PublicKey, crowID string, expiresAt time.Time, rand io.Reader) (Invite, error) {
	inv := Invite{GatewayURL: gatewayURL, HomePublicKey: append(ed25519.PublicKey(nil), homePub...),
		CrowID: crowID, ExpiresAt: time.Unix(expiresAt.Unix(), 0).UTC()}
	if _, err := io.ReadFull(rand, inv.Secret[:]); err != nil {
		return Invite{}, fmt.Errorf("making invite: reading secret: %w", err)
	}
	if _, err := inv.Encode(); err != nil {
		return Invite{}, fmt.Errorf("making invite: %w", err)
	}
	return inv, nil
}

func checkURL(s string) error {
	if s == "" || len(s) > MaxURLLen {
		return fmt.Errorf("%w: gateway URL is %d bytes, want 1 to %d", ErrMalformed, len(s), MaxURLLen)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return fmt.Errorf("%w: gateway URL has byte 0x%02x at %d", ErrMalformed, s[i], i)
		}
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("%w: gateway URL: %v", ErrMalformed, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("%w: gateway URL %q is not an http(s) URL with a host", ErrMalformed, s)
	}
	return nil
}

// Encode returns the binary encoding of inv.
func (inv Invite) Encode() ([]byte, error) {
	for _, err := range []error{checkURL(inv.GatewayURL), checkKey("home public key", inv.HomePublicKey),
		checkID("crow id", inv.CrowID), checkTime("expires_at", inv.ExpiresAt)} {
		if err != nil {
			return nil, err
		}
	}
	e := make(enc, 0, 1+2+len(inv.GatewayURL)+32+2+len(inv.CrowID)+SecretSize+8)
	e.u8(Version)
	e.str(inv.GatewayURL)
	e.raw(inv.HomePublicKey)
	e.str(inv.CrowID)
	e.raw(inv.Secret[:])
	e.unix(inv.ExpiresAt)
	return e, nil
}

// DecodeInvite parses the binary encoding of an invite. It does not look at
// the expiry: ParseInvite does.
func DecodeInvite(b []byte) (Invite, error) {
	d := dec{b: b}
	d.version("invite")
	var inv Invite
	inv.GatewayURL = d.str("gateway URL")
	inv.HomePublicKey = d.key("home public key")
	inv.CrowID = d.str("crow id")
	copy(inv.Secret[:], d.fixed("secret", SecretSize))
	inv.ExpiresAt = d.unix("expires_at")
	if err := d.end(); err != nil {
		return Invite{}, fmt.Errorf("decoding invite: %w", err)
	}
	if _, err := inv.Encode(); err != nil {
		return Invite{}, fmt.Errorf("decoding invite: %w", err)
	}
	return inv, nil
}

// String returns the one-line text form, "crowinv1." + base64url; "" for an
// Invite that cannot be encoded.
func (inv Invite) String() string {
	b, err := inv.Encode()
	if err != nil {
		return ""
	}
	return toText(invitePrefix, b)
}

// ParseInvite parses the one-line text form of an invite and refuses it
// (ErrExpired) if now is at or after its expiry. Surrounding white space is
// not trimmed: callers reading a line trim it themselves. Errors:
// ErrMalformed, ErrUnknownVersion, ErrExpired.
func ParseInvite(s string, now time.Time) (Invite, error) {
	b, err := fromText(invitePrefix, s)
	if err != nil {
		return Invite{}, fmt.Errorf("parsing invite: %w", err)
	}
	inv, err := DecodeInvite(b)
	if err != nil {
		return Invite{}, fmt.Errorf("parsing invite: %w", err)
	}
	if !now.Before(inv.ExpiresAt) {
		return Invite{}, fmt.Errorf("parsing invite: %w: it expired at %s (now %s)", ErrExpired,
			inv.ExpiresAt.Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	return inv, nil
}
