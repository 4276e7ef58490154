package registry

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/crow-sync/crow/identity/member"
)

// Enrollment by invitation (SPEC §7): home makes a one-time invite for a
// name; the new machine generates its key and sends a join request that
// proves it holds the invite's secret and binds its key (identity/member
// documents the protocol); home checks it, marks the invite used and answers
// a certificate signed by the root key. The new instance then registers home
// and announces itself at its first start, the normal registration path, so
// its row is written by the standard challenge registration on both sides.

// Invite lifetimes.
const (
	DefaultInviteTTL = time.Hour
	MinInviteTTL     = time.Minute
	MaxInviteTTL     = 7 * 24 * time.Hour
)

// Invite errors. Each is what the joiner is told.
var (
	// ErrInviteUnknown: home holds no invite with this id (forged, made
	// by another home, or pruned long after it expired).
	ErrInviteUnknown = errors.New("registry: invite not recognised by this home (forged, or made by another home)")
	// ErrInviteUsed: the invite was already used (invites are single use).
	ErrInviteUsed = errors.New("registry: invite already used (invites are single use: make a new one on home)")
	// ErrInviteExpired: the invite's lifetime is over.
	ErrInviteExpired = errors.New("registry: invite expired (make a new one on home)")
	// ErrBadJoin: the join request does not verify (wrong secret, a key
	// swapped in transit, another crow) or asks for another name.
	ErrBadJoin = errors.New("registry: join request refused")
)

// InviteRecord is what home keeps of an invite (local-only, never
// replicated: it holds the secret).
type InviteRecord struct {
	ID        string    `json:"id"` // hex member.InviteID
	Name      string    `json:"name"`
	Secret    string    `json:"secret"` // hex
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	UsedAt    time.Time `json:"used_at,omitzero"`
	UsedBy    string    `json:"used_by,omitempty"` // the instance id it enrolled
}

// InviteStore keeps home's invites. Implementations must be safe for
// concurrent use; StoreInvites keeps them in the store under a local-only key
// prefix, registrytest.MemInvites in memory.
type InviteStore interface {
	// Add stores a new invite.
	Add(ctx context.Context, rec InviteRecord) error
	// Get returns the invite id, or an error wrapping ErrInviteUnknown.
	Get(ctx context.Context, id string) (InviteRecord, error)
	// Claim marks invite id used by instance by at now, atomically: it fails
	// with ErrInviteUnknown, ErrInviteUsed or ErrInviteExpired (checked in
	// the same transaction) and then changes nothing.
	Claim(ctx context.Context, id string, now time.Time, by string) error
}

// CheckClaim is the rule InviteStore.Claim implementations apply (and
// Enroll checks before verifying a request): the invite is unused and
// unexpired at now.
func CheckClaim(rec InviteRecord, now time.Time) error {
	switch {
	case !rec.UsedAt.IsZero():
		return fmt.Errorf("%w (by instance %s at %s)", ErrInviteUsed, rec.UsedBy, rfc3339(rec.UsedAt))
	case !now.Before(rec.ExpiresAt):
		return fmt.Errorf("%w (at %s)", ErrInviteExpired, rfc3339(rec.ExpiresAt))
	}
	return nil
}

// MadeInvite is a new invite and what home filed of it.
type MadeInvite struct {
	Invite member.Invite
	Record InviteRecord
}

// CreateInvite makes a one-time invite for a machine to be called name,
// valid for ttl (0: DefaultInviteTTL), carrying homeURL (the gateway URL the
// new machine reaches home at), home's key and the crow id. It needs the root
// key (ErrNotHome) and an InviteStore.
func (r *Registry) CreateInvite(ctx context.Context, name string, ttl time.Duration, homeURL string) (MadeInvite, error) {
	if r.rootKey == nil || r.invites == nil {
		return MadeInvite{}, fmt.Errorf("making an invite: %w: invites are made on home", ErrNotHome)
	}
	if ttl == 0 {
		ttl = DefaultInviteTTL
	}
	if ttl < MinInviteTTL || ttl > MaxInviteTTL {
		return MadeInvite{}, fmt.Errorf("making an invite: %w: lifetime %v is not between %v and %v", ErrInvalidInstance, ttl, MinInviteTTL, MaxInviteTTL)
	}
	if err := member.CheckName(name); err != nil {
		return MadeInvite{}, fmt.Errorf("making an invite: %w: %w", ErrInvalidInstance, err)
	}
	base, err := NormalizeGatewayURL(homeURL)
	if err != nil {
		return MadeInvite{}, fmt.Errorf("making an invite: %w", err)
	}
	now := r.clock.Now()
	inv, err := member.NewInvite(base, r.selfKey.Public().(ed25519.PublicKey), r.crowID, now.Add(ttl), r.rand)
	if err != nil {
		return MadeInvite{}, fmt.Errorf("making an invite: %w", err)
	}
	id := inv.ID()
	rec := InviteRecord{
		ID: hex.EncodeToString(id[:]), Name: name, Secret: hex.EncodeToString(inv.Secret[:]),
		CreatedAt: now.UTC().Truncate(time.Second), ExpiresAt: inv.ExpiresAt,
	}
	if err := r.invites.Add(ctx, rec); err != nil {
		return MadeInvite{}, fmt.Errorf("making an invite: %w", err)
	}
	r.log.Info("invite made", "invite", rec.ID[:16], "name", name, "expires_at", rfc3339(rec.ExpiresAt))
	return MadeInvite{Invite: inv, Record: rec}, nil
}

// Enroll answers a join request (SPEC §7): the invite it names must be
// known, unused and unexpired; the request must verify under its secret, our
// key and crow id, and ask for the invite's name; its key and id must be
// neither revoked nor registered. The invite is then marked used, and the
// answer carries a satellite certificate signed by the root key. Errors wrap
// ErrInviteUnknown, ErrInviteUsed, ErrInviteExpired, ErrBadJoin, ErrRevoked
// or ErrNotHome; a refused request changes nothing (a bad request does not
// burn the invite: it is claimed only once the request verified).
func (r *Registry) Enroll(ctx context.Context, req member.JoinRequest) (member.JoinAnswer, error) {
	if r.rootKey == nil || r.invites == nil {
		return member.JoinAnswer{}, fmt.Errorf("enrolling: %w: join by an invite made on home", ErrNotHome)
	}
	id := hex.EncodeToString(req.InviteID[:])
	rec, err := r.invites.Get(ctx, id)
	if err != nil {
		return member.JoinAnswer{}, fmt.Errorf("enrolling: %w", err)
	}
	now := r.clock.Now()
	if err := CheckClaim(rec, now); err != nil {
		return member.JoinAnswer{}, fmt.Errorf("enrolling: %w", err)
	}
	secretBytes, err := hex.DecodeString(rec.Secret)
	if err != nil || len(secretBytes) != member.SecretSize {
		return member.JoinAnswer{}, fmt.Errorf("enrolling: invite %s: stored secret is unreadable", id[:16])
	}
	secret := [member.SecretSize]byte(secretBytes)
	selfPub := r.selfKey.Public().(ed25519.PublicKey)
	if err := member.VerifyJoinRequest(secret, selfPub, r.crowID, req); err != nil {
		r.log.Warn("security: join request refused", "invite", id[:16], "err", err)
		return member.JoinAnswer{}, fmt.Errorf("enrolling: %w: %w", ErrBadJoin, err)
	}
	if req.Name != rec.Name {
		return member.JoinAnswer{}, fmt.Errorf("enrolling: %w: the invite is for %q, not %q (use --name %s)", ErrBadJoin, rec.Name, req.Name, rec.Name)
	}
	if err := r.checkNotRevoked(req.InstanceID, req.PublicKey); err != nil {
		r.log.Warn("security: join request of a revoked key or id refused", "invite", id[:16], "instance", req.InstanceID)
		return member.JoinAnswer{}, fmt.Errorf("enrolling: %w", err)
	}
	snap := r.snap.Load()
	if _, ok := snap.rows[req.InstanceID]; ok || req.InstanceID == r.selfID {
		return member.JoinAnswer{}, fmt.Errorf("enrolling: %w: instance id %s is already registered", ErrBadJoin, req.InstanceID)
	}
	if other, ok := snap.byKey[hex.EncodeToString(req.PublicKey)]; ok || selfPub.Equal(req.PublicKey) {
		return member.JoinAnswer{}, fmt.Errorf("enrolling: %w: the key is already registered (instance %s)", ErrBadJoin, other)
	}
	cert, err := member.Issue(r.rootKey, member.Fields{
		CrowID: r.crowID, InstanceID: req.InstanceID, PublicKey: req.PublicKey,
		Role: member.RoleSatellite, Name: req.Name, IssuedAt: now,
	})
	if err != nil {
		return member.JoinAnswer{}, fmt.Errorf("enrolling: %w: %w", ErrBadJoin, err)
	}
	answer, err := member.NewJoinAnswer(r.selfKey, r.trust.RootPublicKey, req, cert)
	if err != nil {
		return member.JoinAnswer{}, fmt.Errorf("enrolling: %w", err)
	}
	if err := r.invites.Claim(ctx, id, now, req.InstanceID); err != nil {
		return member.JoinAnswer{}, fmt.Errorf("enrolling: %w", err)
	}
	r.log.Info("instance enrolled by invite", "invite", id[:16], "instance", req.InstanceID, "name", req.Name)
	return answer, nil
}
