package registry

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"github.com/crow-sync/crow/identity/member"
)

// Home failover (SPEC §2, §12: `crow instance promote`).
//
// A home record (member.HomeRecord, root-signed, domain crow-home-v1) names
// the home from an epoch on, with Base, the highest memory number the new
// home held when it was promoted. It travels in the promoted instance's own
// crow_instances row (Row.HomeRecord), so it replicates like any row and a
// Reload indexes it. The rules, applied by every instance:
//
//  1. The home is the instance named by the verified record of the highest
//     epoch (ties, from two promotions made apart: the larger base, then the
//     smaller instance id). Without any record, the home is the one
//     certified as home (Home: the earliest).
//  2. An instance's term is the highest epoch of a record naming it, 0 if
//     none (the original home's term is 0).
//  3. A number n written (memory_versions, memory_numbers) by instance X is
//     refused when some record R has R.Epoch > term(X) and R.Base < n: once
//     a later home took over at base b, an earlier home's numbers above b
//     are not accepted anywhere (RefusesNumber; the apply loop parks them).
//     Numbers up to b are the earlier home's, and stay valid.
//  4. An instance that finds a record of a higher epoch than its own term
//     naming another instance is demoted: it stops numbering, consolidating
//     and anchoring, and serves as a satellite (HomeRole).
//
// A record is only indexed when it verifies under our root key and names
// exactly the row's instance id and key; anything else in home_record is
// logged and ignored (the row itself stays admitted).

// Errors returned by Promote.
var (
	// ErrAlreadyHome: this instance is home already.
	ErrAlreadyHome = errors.New("registry: this instance is home already")
	// ErrNoSeed: this instance does not hold the master seed (it joined by
	// invitation): only a satellite made with `crow init --import` can be
	// promoted.
	ErrNoSeed = errors.New("registry: this instance holds no master seed; only a satellite made with 'crow init --import' can be promoted")
	// ErrHomeReachable: the current home answers its /health as itself;
	// promote with Force to take over anyway.
	ErrHomeReachable = errors.New("registry: the home instance is still reachable")
)

// homeIndex is the verified home records of a snapshot, by epoch.
type homeIndex struct {
	records []member.HomeRecord // ascending by precedence; the last one names the home
}

// precedence orders two records: the higher epoch, then the larger base,
// then the smaller instance id wins.
func precedence(a, b member.HomeRecord) int {
	return cmp.Or(cmp.Compare(a.Epoch, b.Epoch), cmp.Compare(a.Base, b.Base), -cmp.Compare(a.InstanceID, b.InstanceID))
}

// indexHomes verifies the home records the rows carry.
func (r *Registry) indexHomes(s *snapshot) *homeIndex {
	idx := &homeIndex{}
	for _, id := range sortedIDs(s.rows) {
		row := s.rows[id]
		if row.HomeRecord == "" {
			continue
		}
		rec, err := r.verifyHomeRecord(row)
		if err != nil {
			r.log.Warn("security: ignoring a home record that does not verify", "id", row.ID, "err", err)
			continue
		}
		idx.records = append(idx.records, rec)
	}
	slices.SortFunc(idx.records, precedence)
	return idx
}

// verifyHomeRecord parses and verifies row's home record, which must name
// the row's own id and key.
func (r *Registry) verifyHomeRecord(row Row) (member.HomeRecord, error) {
	rec, err := member.ParseHomeRecord(row.HomeRecord)
	if err != nil {
		return member.HomeRecord{}, err
	}
	if err := member.VerifyHome(rec, r.crowID, r.trust.RootPublicKey); err != nil {
		return member.HomeRecord{}, err
	}
	if rec.InstanceID != row.ID || hex.EncodeToString(rec.PublicKey) != row.PublicKey {
		return member.HomeRecord{}, fmt.Errorf("the record names instance %q, it is carried by %q", rec.InstanceID, row.ID)
	}
	return rec, nil
}

// current is the record naming the home, if any.
func (h *homeIndex) current() (member.HomeRecord, bool) {
	if h == nil || len(h.records) == 0 {
		return member.HomeRecord{}, false
	}
	return h.records[len(h.records)-1], true
}

// term is rule 2: the highest epoch of a record naming id (0 if none).
func (h *homeIndex) term(id string) uint64 {
	var t uint64
	if h != nil {
		for _, rec := range h.records {
			if rec.InstanceID == id {
				t = max(t, rec.Epoch)
			}
		}
	}
	return t
}

// refuses is rule 3.
func (h *homeIndex) refuses(writer string, n uint64) (member.HomeRecord, bool) {
	if h == nil {
		return member.HomeRecord{}, false
	}
	t := h.term(writer)
	for _, rec := range slices.Backward(h.records) {
		if rec.Epoch > t && rec.Base < n {
			return rec, true
		}
	}
	return member.HomeRecord{}, false
}

func (r *Registry) homes() *homeIndex { return r.homeIdx.Load() }

// HomeRecord returns the record naming the home (the highest epoch), or
// false when no instance was ever promoted.
func (r *Registry) HomeRecord() (member.HomeRecord, bool) { return r.homes().current() }

// Epoch is the epoch of the current home record (0: the original home).
func (r *Registry) Epoch() uint64 {
	rec, _ := r.homes().current()
	return rec.Epoch
}

// HomeRole is rule 4: the role this instance has, given configured, the
// role it was started with. The record of the highest epoch decides when
// there is one: home if it names this instance, else satellite.
func (r *Registry) HomeRole(configured string) string {
	rec, ok := r.homes().current()
	switch {
	case !ok:
		return configured
	case rec.InstanceID == r.selfID:
		return RoleHome
	}
	return RoleSatellite
}

// RefusesNumber is rule 3 for the apply loop: whether a memory number n
// written by instance writer must be refused, and why.
func (r *Registry) RefusesNumber(writer string, n uint64) (string, bool) {
	rec, ok := r.homes().refuses(writer, n)
	if !ok {
		return "", false
	}
	return fmt.Sprintf("number %d written by instance %s, which is not home for numbers above %d since epoch %d (home %s)",
		n, writer, rec.Base, rec.Epoch, rec.InstanceID), true
}

// Promotion is what Promote needs: the root key (the promoted instance holds
// the seed), this instance's new certificate as home, and Base, the highest
// memory number it holds.
type Promotion struct {
	RootKey ed25519.PrivateKey
	Cert    member.Certificate
	Base    uint64
	// Force promotes even when the current home answers (by default that
	// is refused with ErrHomeReachable, naming it). A home that is still
	// running numbers until it learns of the record: its numbers above Base
	// are then refused everywhere (rule 3).
	Force bool
}

// Promote makes this instance home (rule 1): it signs a home record of the
// next epoch naming this instance and its key with base p.Base, and writes
// its own row with role home, p.Cert and the record. The row replicates;
// every instance follows it from its next Reload. It fails with
// ErrAlreadyHome when this instance is home by the records already, and
// with ErrUncertified when p.Cert is not a home certificate of this
// instance and key.
func (r *Registry) Promote(ctx context.Context, p Promotion) (member.HomeRecord, error) {
	if len(p.RootKey) != ed25519.PrivateKeySize || !r.trust.RootPublicKey.Equal(p.RootKey.Public()) {
		return member.HomeRecord{}, fmt.Errorf("promoting: %w", ErrNotHome)
	}
	pub := r.selfKey.Public().(ed25519.PublicKey)
	if _, err := r.trust.certify(p.Cert.String(), r.selfID, pub, RoleHome); err != nil {
		return member.HomeRecord{}, fmt.Errorf("promoting: %w", err)
	}
	cur, ok := r.homes().current()
	if ok && cur.InstanceID == r.selfID {
		return member.HomeRecord{}, fmt.Errorf("promoting: %w (epoch %d)", ErrAlreadyHome, cur.Epoch)
	}
	if home, err := r.Home(); err == nil && home.ID == r.selfID {
		return member.HomeRecord{}, fmt.Errorf("promoting: %w", ErrAlreadyHome)
	} else if err == nil && !p.Force {
		if err := r.answers(ctx, home); err == nil {
			return member.HomeRecord{}, fmt.Errorf("promoting: %w: %s (%s) answers at %s; if it must stop being home, promote with --force",
				ErrHomeReachable, home.Name, home.ID, home.GatewayURL)
		}
	}
	rec, err := member.IssueHome(p.RootKey, member.HomeFields{CrowID: r.crowID, InstanceID: r.selfID, PublicKey: pub,
		Epoch: cur.Epoch + 1, Base: p.Base, IssuedAt: r.clock.Now()})
	if err != nil {
		return member.HomeRecord{}, fmt.Errorf("promoting: %w", err)
	}
	self, ok := r.snap.Load().rows[r.selfID]
	if !ok {
		return member.HomeRecord{}, fmt.Errorf("promoting: our own row is not registered yet: %w", ErrNotFound)
	}
	row := self
	row.Role, row.Certificate, row.HomeRecord = RoleHome, p.Cert.String(), rec.String()
	if _, err := r.upsert(ctx, row); err != nil {
		return member.HomeRecord{}, fmt.Errorf("promoting: %w", err)
	}
	r.log.Info("promoted: this instance is home", "epoch", rec.Epoch, "base", rec.Base)
	return rec, nil
}

// homeByRecord reports whether row may say it is home although another
// certified home is registered: it carries (or is named by) the record of
// the highest epoch.
func (r *Registry) homeByRecord(row Row) bool {
	if cur, ok := r.homes().current(); ok && cur.InstanceID == row.ID {
		return true
	}
	if row.HomeRecord == "" {
		return false
	}
	rec, err := r.verifyHomeRecord(row)
	if err != nil {
		return false
	}
	cur, ok := r.homes().current()
	return !ok || precedence(rec, cur) > 0
}

// answers reports (nil) whether in answers a fresh challenge at its gateway
// URL as itself, certified by our root key.
func (r *Registry) answers(ctx context.Context, in Instance) error {
	challenge, err := r.newChallenge()
	if err != nil {
		return err
	}
	doc, err := r.health(ctx, in.GatewayURL, challenge)
	if err != nil {
		return err
	}
	if doc.InstanceID != in.ID {
		return fmt.Errorf("%w: %s answers as instance %q", ErrUnhealthy, in.GatewayURL, doc.InstanceID)
	}
	_, _, err = r.verifyHealth(doc, challenge)
	return err
}
