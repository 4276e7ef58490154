package registry

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"
	"unicode/utf8"

	"github.com/crow-sync/crow/clock"
	"github.com/crow-sync/crow/identity/member"
)

// putAttempts bounds retries when the table changes under a write (a
// replicated row arriving between our read and our write).
const putAttempts = 3

// Register adds (or refreshes) the instance whose gateway is at gatewayURL,
// after proving it belongs to our identity (SPEC §7):
//
//  1. the URL is validated (ErrInvalidURL);
//  2. GET /health must answer an "ok" document (ErrUnhealthy);
//  3. GET /health?challenge=<32 random bytes> must echo the challenge with the
//     same instance id and key (ErrChallengeMismatch), carry our crow id and
//     the public key our seed derives for its instance id
//     (ErrForeignIdentity), and a signature that verifies (ErrBadSignature);
//  4. a revoked id is refused (ErrRevoked) and a second home is refused
//     (ErrSecondHome);
//  5. the row is inserted, or updated if the name, role, URL or sync
//     addresses changed (re-registering is idempotent: nothing is written
//     when nothing changed).
//
// The row records the URL the instance advertises for itself (/health
// "gateway_url") when that URL answers as the same instance from here, else
// gatewayURL; and, for a new row, the instance's own "created_at" when it
// reports one, else now. The row is then exactly the one the instance's own
// RegisterSelf writes, so the two inserts, made on two machines before they
// sync, are equivalent and do not raise an insert-collision conflict.
//
// Each request is bounded by Config.HealthTimeout. On success the instance
// is recorded as online and its merged view is returned.
func (r *Registry) Register(ctx context.Context, gatewayURL string) (Instance, error) {
	base, err := NormalizeGatewayURL(gatewayURL)
	if err != nil {
		return Instance{}, fmt.Errorf("registering instance: %w", err)
	}
	first, err := r.health(ctx, base, nil)
	if err != nil {
		return Instance{}, fmt.Errorf("registering %s: health check: %w", base, err)
	}
	challenge, err := r.newChallenge()
	if err != nil {
		return Instance{}, fmt.Errorf("registering %s: %w", base, err)
	}
	doc, err := r.health(ctx, base, challenge)
	if err != nil {
		return Instance{}, fmt.Errorf("registering %s: challenge: %w", base, err)
	}
	if doc.InstanceID != first.InstanceID || doc.PublicKey != first.PublicKey {
		return Instance{}, fmt.Errorf("registering %s: %w: instance id or key changed between requests (%q then %q)",
			base, ErrChallengeMismatch, first.InstanceID, doc.InstanceID)
	}
	pub, cert, err := r.verifyHealth(doc, challenge)
	if err != nil {
		return Instance{}, fmt.Errorf("registering %s: %w", base, err)
	}
	row, err := factsRow(doc.InstanceID, doc.Name, doc.Role, r.advertisedURL(ctx, base, doc), doc.SyncAddrs)
	if err != nil {
		return Instance{}, fmt.Errorf("registering %s: %w", base, err)
	}
	row.PublicKey = hex.EncodeToString(pub)
	row.Certificate = cert.String()
	row.CreatedAt = r.reportedCreatedAt(doc)
	if _, err := r.upsert(ctx, row); err != nil {
		return Instance{}, fmt.Errorf("registering %s: %w", base, err)
	}
	if row.ID != r.selfID {
		r.observe(ctx, row.ID, Observation{Status: StatusOnline, LastSeen: r.clock.Now().Unix()})
	}
	return r.Get(row.ID)
}

// advertisedURL returns the gateway URL the instance advertises if it is
// valid and answers a fresh challenge as the same instance from here;
// otherwise base, the URL we reached it at.
func (r *Registry) advertisedURL(ctx context.Context, base string, doc HealthDoc) string {
	if doc.GatewayURL == "" {
		return base
	}
	adv, err := NormalizeGatewayURL(doc.GatewayURL)
	if err != nil || adv == base {
		return base
	}
	challenge, err := r.newChallenge()
	if err != nil {
		return base
	}
	d, err := r.health(ctx, adv, challenge)
	if err == nil && d.InstanceID != doc.InstanceID {
		err = fmt.Errorf("%w: answers as instance %q", ErrUnhealthy, d.InstanceID)
	}
	if err == nil {
		_, _, err = r.verifyHealth(d, challenge)
	}
	if err != nil {
		r.log.Info("advertised gateway URL not usable from here; keeping the given one",
			"id", doc.InstanceID, "advertised", adv, "given", base, "err", err)
		return base
	}
	return adv
}

// reportedCreatedAt returns the instance's reported creation time in
// canonical form, or "" when it reports none or an unusable one (then now is
// used).
func (r *Registry) reportedCreatedAt(doc HealthDoc) string {
	if doc.CreatedAt == "" {
		return ""
	}
	t, err := time.Parse(time.RFC3339, doc.CreatedAt)
	if err != nil || t.After(r.clock.Now().Add(24*time.Hour)) {
		return ""
	}
	return rfc3339(t)
}

// health fetches /health with the per-request timeout.
func (r *Registry) health(ctx context.Context, base string, challenge []byte) (HealthDoc, error) {
	ctx, cancel := clock.WithTimeout(ctx, r.clock, r.timeout)
	defer cancel()
	return fetchHealth(ctx, r.client, base, challenge)
}

// SelfInfo is what this instance knows of itself at start-up.
type SelfInfo struct {
	Name       string
	Role       string   // RoleHome or RoleSatellite
	GatewayURL string   // the URL peers reach our gateway at (as /health advertises it)
	SyncAddrs  []string // multiaddrs peers dial
	// CreatedAt is when this instance was initialised (as /health reports
	// it); zero means now. It only matters for a new row.
	CreatedAt time.Time
}

// RegisterSelf puts this instance's own row in the table (or updates it when
// its name, role, URL or sync addresses changed; nothing is written when
// nothing changed), so the table always contains self. The daemon calls it at
// start, once the gateway and the sync listener are bound. It fails with
// ErrRevoked if this instance has been revoked (the daemon should stop) and
// with ErrSecondHome if it claims to be home while another home is registered.
func (r *Registry) RegisterSelf(ctx context.Context, self SelfInfo) (Instance, error) {
	base, err := NormalizeGatewayURL(self.GatewayURL)
	if err != nil {
		return Instance{}, fmt.Errorf("registering self: %w", err)
	}
	row, err := factsRow(r.selfID, self.Name, self.Role, base, self.SyncAddrs)
	if err != nil {
		return Instance{}, fmt.Errorf("registering self: %w", err)
	}
	row.PublicKey = hex.EncodeToString(r.selfKey.Public().(ed25519.PublicKey))
	row.Certificate = r.selfCert.String()
	if !self.CreatedAt.IsZero() {
		row.CreatedAt = rfc3339(self.CreatedAt)
	}
	if _, err := r.upsert(ctx, row); err != nil {
		return Instance{}, fmt.Errorf("registering self: %w", err)
	}
	return r.Get(r.selfID)
}

// factsRow validates and builds the identity facts of a row (no key, no
// created_at).
func factsRow(id, name, role, gatewayURL string, addrs []string) (Row, error) {
	if err := validateID(id); err != nil {
		return Row{}, err
	}
	if !validRole(role) {
		return Row{}, fmt.Errorf("%w: instance %q has role %q (want %q or %q)", ErrInvalidInstance, id, role, RoleHome, RoleSatellite)
	}
	if len(name) > maxNameLen || !utf8.ValidString(name) {
		return Row{}, fmt.Errorf("%w: instance %q: name is not valid UTF-8 of at most %d bytes", ErrInvalidInstance, id, maxNameLen)
	}
	norm, err := normalizeSyncAddrs(addrs)
	if err != nil {
		return Row{}, fmt.Errorf("instance %q: %w", id, err)
	}
	return Row{ID: id, Name: name, Role: role, GatewayURL: gatewayURL, SyncAddrs: norm}, nil
}

// upsert writes the identity facts of want (everything but revocation)
// unless the stored row already holds them. want.CreatedAt is used for a new
// row (empty means now); an existing row keeps its created_at.
func (r *Registry) upsert(ctx context.Context, want Row) (Row, error) {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	for attempt := 1; ; attempt++ {
		prevRaw, err := r.table.Get(ctx, want.ID)
		insert := errors.Is(err, ErrNotFound)
		if err != nil && !insert {
			return Row{}, fmt.Errorf("reading instance %q: %w", want.ID, err)
		}
		row := want
		if row.CreatedAt == "" {
			row.CreatedAt = rfc3339(r.clock.Now())
		}
		if !insert {
			prev, err := decodeRow(prevRaw)
			if err != nil {
				return Row{}, fmt.Errorf("instance %q: %w", want.ID, err)
			}
			if prev.Revoked {
				return Row{}, fmt.Errorf("instance %q (revoked %s): %w", want.ID, prev.RevokedAt, ErrRevoked)
			}
			row.CreatedAt = cmp.Or(prev.CreatedAt, row.CreatedAt)
			row.HomeRecord = cmp.Or(row.HomeRecord, prev.HomeRecord) // a home record stays (home.go)
			if sameFacts(prev, row) {
				r.installRowLocked(row) // the snapshot may not have caught up yet
				return row, nil
			}
		}
		if row.Role == RoleHome && !r.homeByRecord(row) {
			if homes := homesOf(r.snap.Load(), row.ID); len(homes) > 0 {
				return Row{}, fmt.Errorf("instance %q says it is home: %w (%q)", row.ID, ErrSecondHome, homes[0].ID)
			}
		}
		data, err := encodeRow(row, prevRaw)
		if err != nil {
			return Row{}, err
		}
		err = r.table.Put(ctx, row.ID, insert, data)
		if err == nil {
			r.installRowLocked(row)
			return row, nil
		}
		raced := (insert && errors.Is(err, ErrExists)) || (!insert && errors.Is(err, ErrNotFound))
		if !raced || attempt == putAttempts {
			return Row{}, fmt.Errorf("writing instance %q: %w", row.ID, err)
		}
	}
}

// Revoke revokes instance id (SPEC §2): it signs a revocation of the id and
// its key with the root key, writes it to crow_revocations (row id = the key)
// and marks the instance's row revoked with it. Both replicate; every
// instance that applies either refuses the key from then on, under any id —
// in the gater, on federation tokens, at registration and announcement, and
// for new feed entries. The row is kept, not deleted, so the id cannot come
// back. Revoking a revoked instance re-writes what is missing (a crash
// between the two writes) and is otherwise a no-op.
//
// It fails with ErrNotHome without the root key, ErrRevokeSelf for this
// instance and ErrNotFound for an unknown id. Subscribers get an
// EventRevoked.
func (r *Registry) Revoke(ctx context.Context, id string) (Instance, error) {
	if id == r.selfID {
		return Instance{}, fmt.Errorf("revoking instance %q: %w", id, ErrRevokeSelf)
	}
	if r.rootKey == nil {
		return Instance{}, fmt.Errorf("revoking instance %q: %w: run 'crow instance revoke' on home", id, ErrNotHome)
	}
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	raw, err := r.table.Get(ctx, id)
	if err != nil {
		return Instance{}, fmt.Errorf("revoking instance %q: %w", id, err)
	}
	row, err := decodeRow(raw)
	if err != nil {
		return Instance{}, fmt.Errorf("revoking instance %q: %w", id, err)
	}
	pub, err := decodeKey(row.PublicKey)
	if err != nil {
		return Instance{}, fmt.Errorf("revoking instance %q: %w", id, err)
	}
	at := r.clock.Now()
	if row.Revoked {
		if t, err := time.Parse(time.RFC3339, row.RevokedAt); err == nil {
			at = t
		}
	}
	rv, err := member.Revoke(r.rootKey, member.RevocationFields{CrowID: r.crowID, InstanceID: id, PublicKey: pub, RevokedAt: at})
	if err != nil {
		return Instance{}, fmt.Errorf("revoking instance %q: %w", id, err)
	}
	if row.Revocation != "" {
		if old, err := r.trust.verifyRevocation(row.Revocation); err == nil && old.InstanceID == id {
			rv = old
		}
	}
	if err := r.putRevocation(ctx, rv); err != nil {
		return Instance{}, fmt.Errorf("revoking instance %q: %w", id, err)
	}
	if !row.Revoked || row.Revocation != rv.String() {
		row.Revoked = true
		row.RevokedAt = rfc3339(rv.RevokedAt)
		row.Revocation = rv.String()
		data, err := encodeRow(row, raw)
		if err != nil {
			return Instance{}, fmt.Errorf("revoking instance %q: %w", id, err)
		}
		if err := r.table.Put(ctx, id, false, data); err != nil {
			return Instance{}, fmt.Errorf("revoking instance %q: writing: %w", id, err)
		}
	}
	r.mu.Lock()
	r.revoked.add(rv)
	r.mu.Unlock()
	r.installRowLocked(row)
	return r.instance(row), nil
}

// putRevocation writes rv's crow_revocations row unless it is there.
func (r *Registry) putRevocation(ctx context.Context, rv member.Revocation) error {
	key := hex.EncodeToString(rv.PublicKey)
	if _, err := r.revTable.Get(ctx, key); err == nil {
		return nil
	} else if !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("reading revocation: %w", err)
	}
	data, err := json.Marshal(RevocationRow{InstanceID: rv.InstanceID, PublicKey: key, RevokedAt: rfc3339(rv.RevokedAt), Revocation: rv.String()})
	if err != nil {
		return err
	}
	if err := r.revTable.Put(ctx, key, true, data); err != nil && !errors.Is(err, ErrExists) {
		return fmt.Errorf("writing revocation: %w", err)
	}
	return nil
}

// installRowLocked installs a snapshot with row replaced. writeMu must be
// held. A row that fails validation is logged and not installed.
func (r *Registry) installRowLocked(row Row) {
	if err := r.validateRow(row); err != nil {
		r.log.Warn("not indexing invalid crow_instances row", "id", row.ID, "err", err)
		return
	}
	prev := r.snap.Load()
	if old, ok := prev.rows[row.ID]; ok && sameFacts(old, row) {
		return
	}
	r.mu.Lock()
	revoked := r.revoked.clone()
	r.mu.Unlock()
	next := &snapshot{rows: maps.Clone(prev.rows), byKey: maps.Clone(prev.byKey), revoked: revoked}
	next.put(row)
	r.installLocked(next)
}
