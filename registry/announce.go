package registry

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/crow-sync/crow/clock"
	"github.com/crow-sync/crow/identity/member"
)

// An instance that registers a peer also asks that peer to register it back
// (SPEC §12: "crow instance add URL — run it on either side"). Without this,
// the peer's connection gater would refuse the new instance until the
// registry row reached it by sync, which needs that very connection.
//
// The request is authenticated by the caller's instance key and membership
// certificate: only an instance certified by our root key, and not revoked,
// can ask; the peer still runs the full challenge registration against the
// announced gateway URL.

// AnnouncePath is the public gateway path announcements are posted to.
const AnnouncePath = "/v1/instances/announce"

// MaxAnnounceSkew is how far an announcement's issued_at may be from the
// receiver's clock.
const MaxAnnounceSkew = 5 * time.Minute

// ErrBadAnnouncement is returned by AcceptAnnouncement for an announcement
// that is malformed, expired, uncertified, or not signed by the key its
// certificate names for its instance id.
var ErrBadAnnouncement = errors.New("registry: bad announcement")

// Announcement asks the receiving instance to register the sender.
// Its signing format is frozen: see announceSignable.
type Announcement struct {
	InstanceID string `json:"instance_id"`
	GatewayURL string `json:"gateway_url"`
	Audience   string `json:"audience"`  // the receiver's instance id
	IssuedAt   int64  `json:"issued_at"` // Unix seconds
	Signature  string `json:"signature"` // hex Ed25519
	// Certificate is the sender's membership certificate (text form). It
	// is not covered by Signature: it is signed by the root key itself,
	// and the signature must verify under the key it certifies.
	Certificate string `json:"certificate,omitempty"`
}

// announceSignable returns the signed bytes:
// "crow-announce-v1" ‖ 0x00 ‖ for each of id, url, audience: uint32BE(len) ‖ bytes ‖ uint64BE(issued_at).
func announceSignable(a Announcement) []byte {
	var b bytes.Buffer
	b.WriteString("crow-announce-v1")
	b.WriteByte(0)
	for _, s := range []string{a.InstanceID, a.GatewayURL, a.Audience} {
		_ = binary.Write(&b, binary.BigEndian, uint32(len(s)))
		b.WriteString(s)
	}
	_ = binary.Write(&b, binary.BigEndian, uint64(a.IssuedAt))
	return b.Bytes()
}

// SignAnnouncement fills in IssuedAt and Signature.
func SignAnnouncement(a Announcement, priv ed25519.PrivateKey, now time.Time) Announcement {
	a.IssuedAt = now.Unix()
	a.Signature = hex.EncodeToString(ed25519.Sign(priv, announceSignable(a)))
	return a
}

// AcceptAnnouncement verifies a and registers its sender through the normal
// challenge registration of a.GatewayURL; the registered id must be the
// announced one.
func (r *Registry) AcceptAnnouncement(ctx context.Context, a Announcement) (Instance, error) {
	if err := validateID(a.InstanceID); err != nil {
		return Instance{}, fmt.Errorf("accepting announcement: %w: %v", ErrBadAnnouncement, err)
	}
	if a.Audience != r.selfID {
		return Instance{}, fmt.Errorf("accepting announcement: %w: addressed to %q, not to this instance", ErrBadAnnouncement, a.Audience)
	}
	now := r.clock.Now()
	if d := now.Sub(time.Unix(a.IssuedAt, 0)); d > MaxAnnounceSkew || d < -MaxAnnounceSkew {
		return Instance{}, fmt.Errorf("accepting announcement: %w: issued %v from now", ErrBadAnnouncement, -d)
	}
	cert, err := member.ParseCertificate(a.Certificate)
	if err != nil {
		return Instance{}, fmt.Errorf("accepting announcement: %w: %w: %w", ErrBadAnnouncement, ErrUncertified, err)
	}
	if _, err := r.trust.certify(a.Certificate, a.InstanceID, cert.PublicKey, string(cert.Role)); err != nil {
		return Instance{}, fmt.Errorf("accepting announcement: %w: %w", ErrBadAnnouncement, err)
	}
	sig, err := hex.DecodeString(a.Signature)
	if err != nil || !ed25519.Verify(cert.PublicKey, announceSignable(a), sig) {
		return Instance{}, fmt.Errorf("accepting announcement: %w: signature does not verify for instance %s", ErrBadAnnouncement, a.InstanceID)
	}
	if err := r.checkNotRevoked(a.InstanceID, cert.PublicKey); err != nil {
		return Instance{}, fmt.Errorf("accepting announcement of %s: %w", a.InstanceID, err)
	}
	in, err := r.Register(ctx, a.GatewayURL)
	if err != nil {
		return Instance{}, err
	}
	if in.ID != a.InstanceID {
		return Instance{}, fmt.Errorf("accepting announcement: %w: %s answers as instance %s, not %s",
			ErrBadAnnouncement, a.GatewayURL, in.ID, a.InstanceID)
	}
	return in, nil
}

// Announce asks the instance at peerURL (whose id is peerID) to register this
// instance, reachable at selfURL.
func (r *Registry) Announce(ctx context.Context, peerURL, peerID, selfURL string) error {
	base, err := NormalizeGatewayURL(peerURL)
	if err != nil {
		return fmt.Errorf("announcing to %s: %w", peerURL, err)
	}
	a := SignAnnouncement(Announcement{InstanceID: r.selfID, GatewayURL: selfURL, Audience: peerID}, r.selfKey, r.clock.Now())
	a.Certificate = r.selfCert.String()
	body, _ := json.Marshal(a)
	ctx, cancel := clock.WithTimeout(ctx, r.clock, 2*r.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+AnnouncePath, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("announcing to %s: %w", base, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		return fmt.Errorf("announcing to %s: %w", base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(msg, &e) == nil && e.Error != "" {
			return fmt.Errorf("announcing to %s: %s", base, e.Error)
		}
		return fmt.Errorf("announcing to %s: %s", base, resp.Status)
	}
	return nil
}

// Join registers the instance at gatewayURL and asks it to register this
// instance (reachable at selfURL) back. A failed announcement does not undo
// the local registration: it is returned as announceErr so the caller can
// tell the operator to run `crow instance add` on the other side too.
func (r *Registry) Join(ctx context.Context, gatewayURL, selfURL string) (in Instance, announceErr, err error) {
	in, err = r.Register(ctx, gatewayURL)
	if err != nil || in.ID == r.selfID {
		return in, nil, err
	}
	return in, r.Announce(ctx, gatewayURL, in.ID, selfURL), nil
}
