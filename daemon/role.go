package daemon

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"

	sjson "github.com/segmentio/encoding/json"

	"github.com/crow-sync/crow/home"
	"github.com/crow-sync/crow/identity/member"
	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/registry"
	"github.com/crow-sync/crow/store"
)

// Home failover (SPEC §2, §12; the rules are registry's, see registry/home.go).
//
// What runs only on home (numbering, anchoring and checkpointing, the
// consolidation target, invites and revocations with the root key, the
// forgetter's rewrite of versions, the data keys of proofs) is decided when
// the tree is built, from the role. When the home role moves — this instance
// is promoted, or it learns of a home record naming another instance — the
// daemon does not rewire itself in place: the part that notices returns a
// role change, Serve stops every part (in-flight requests finish), Run
// writes the new role to $CROW_HOME (home.Home.SetRole) and builds and
// serves the daemon again in the same process. So a demoted home stops
// numbering before it does anything else, and a promoted one starts
// numbering from 1 + the highest number it holds (memory.Numberer's
// recovery), after numbering first every version it holds without a number
// (the Numberer's first-start backfill).
//
// The build checks the role too (a crash between the record's write and
// SetRole): New fails with a role change, which Run handles the same way.

// ErrRoleChanged is returned (wrapped) by New and Serve when the home role
// moved to or from this instance; Run restarts the daemon in its new role.
var ErrRoleChanged = errors.New("daemon: the home role moved")

// roleChange is the error carrying the new role.
type roleChange struct {
	role string
	why  string
}

func (c *roleChange) Error() string {
	return fmt.Sprintf("%s: now %s (%s)", ErrRoleChanged, c.role, c.why)
}
func (c *roleChange) Is(t error) bool { return t == ErrRoleChanged }

// Run is New and Serve, again after every role change (see above) and
// after a reenrollment rewrote $CROW_HOME (ErrRestart: the home is loaded
// again), until ctx ends or the daemon fails. Before each it sets the process's
// soft memory limit for the role served (memory_limit_mb, see memoryLimit): Run is
// what a process runs once.
func Run(ctx context.Context, cfg Config, deps Deps) error {
	getenv := deps.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	for {
		applyMemoryLimit(cfg.Settings, cfg.Home.Role, getenv, debug.SetMemoryLimit, deps.Logger)
		d, err := New(cfg, deps)
		if err == nil {
			err = d.Serve(ctx)
		}
		if ctx.Err() != nil {
			return err
		}
		if errors.Is(err, ErrRestart) {
			// A reenrollment rewrote $CROW_HOME: serve its new identity.
			h, lerr := home.Load(cfg.Home.Root)
			if lerr != nil {
				return lerr
			}
			cfg.Home = h
			continue
		}
		var rc *roleChange
		if !errors.As(err, &rc) {
			return err
		}
		if err := cfg.Home.SetRole(rc.role); err != nil {
			return fmt.Errorf("changing the role to %s: %w", rc.role, err)
		}
		log := deps.Logger
		if log != nil {
			log.Info("restarting in the new role", "role", rc.role, "why", rc.why)
		}
	}
}

// checkRole is the build's check: the role the home records give this
// instance is the one it was started with.
func (d *Daemon) checkRole() error {
	if role := d.reg.HomeRole(d.h.Role); role != d.h.Role {
		return &roleChange{role: role, why: d.roleWhy()}
	}
	return nil
}

func (d *Daemon) roleWhy() string {
	rec, ok := d.reg.HomeRecord()
	if !ok {
		return "no home record"
	}
	return fmt.Sprintf("home record of epoch %d names instance %s, numbers above %d are its", rec.Epoch, rec.InstanceID, rec.Base)
}

// serveRole watches the registry and returns a role change as soon as the
// home records move the role (a promotion here, or a later home elsewhere).
func (d *Daemon) serveRole(ctx context.Context) error {
	wake := newSignal()
	unsub := d.reg.Subscribe(func(registry.Event) { wake.Notify() })
	defer unsub()
	for {
		if role := d.reg.HomeRole(d.h.Role); role != d.h.Role {
			if role == registry.RoleSatellite {
				rec, _ := d.reg.HomeRecord()
				d.log.Warn("demoted: a later home took over; this instance stops numbering, consolidating and anchoring and serves as a satellite",
					"home", rec.InstanceID, "epoch", rec.Epoch, "base", rec.Base)
				// No Numberer runs here any more: its queue position must not
				// hold back the pruning of q/.
				if err := d.db.DropConsumer(memory.NumbererConsumer); err != nil {
					d.log.Warn("dropping the numberer's queue position", "err", err)
				}
				// Numbers this instance wrote above the base before it heard
				// of the record may have met the new home's numbers of the
				// same versions while neither was refused here, and kept the
				// live row. The new home's feed is applied again from its
				// start: now each of our refused numbers gives way to its.
				if err := d.reapplyFeedOf(ctx, rec.InstanceID); err != nil {
					d.log.Warn("re-applying the new home's feed", "err", err)
				}
			}
			return &roleChange{role: role, why: d.roleWhy()}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wake.c:
		}
	}
}

// reapplyFeedOf moves the apply checkpoint of instance id's feed back to
// its start (re-applying is idempotent for every row already decided).
func (d *Daemon) reapplyFeedOf(ctx context.Context, id string) error {
	in, err := d.reg.Get(id)
	if err != nil {
		return err
	}
	key, err := hex.DecodeString(in.PublicKey)
	if err != nil || len(key) != ed25519.PublicKeySize {
		return fmt.Errorf("instance %s has a bad public key %q", id, in.PublicKey)
	}
	return d.db.Update(ctx, func(txn *store.Txn) error { return txn.SetApplied(key, 0) })
}

// PromoteResult is the answer of a promotion.
type PromoteResult struct {
	Record       member.HomeRecord
	PreviousHome string // the id of the home it replaces ("" if none was known)
}

// promote makes this instance home (`crow instance promote`): it needs the
// master seed (the root key signs the record and the new certificate); the
// base is the highest number held here. The role watcher then restarts the
// daemon as home.
func (d *Daemon) promote(ctx context.Context, force bool) (PromoteResult, error) {
	if !d.h.HasSeed() {
		return PromoteResult{}, fmt.Errorf("promoting %s: %w", d.h.Name, registry.ErrNoSeed)
	}
	var prev string
	if in, err := d.reg.Home(); err == nil {
		prev = in.ID
	}
	base, err := memory.HighestNumber(d.db)
	if err != nil {
		return PromoteResult{}, err
	}
	seed := d.h.Seed()
	cert, err := member.Issue(seed.RootKey(), member.Fields{CrowID: d.h.CrowID, InstanceID: d.h.InstanceID,
		PublicKey: d.h.PublicKey, Role: member.RoleHome, Name: d.h.Name, IssuedAt: d.clk.Now()})
	if err != nil {
		return PromoteResult{}, fmt.Errorf("promoting: %w", err)
	}
	rec, err := d.reg.Promote(ctx, registry.Promotion{RootKey: seed.RootKey(), Cert: cert, Base: base, Force: force})
	if err != nil {
		return PromoteResult{}, err
	}
	return PromoteResult{Record: rec, PreviousHome: prev}, nil
}

// refuseNumber is the apply loop's rule over numbering records
// (registry.RefusesNumber): the number of a memory_versions row (its row id,
// and the superseded_by it sets) or of a memory_numbers row (its data).
func (d *Daemon) refuseNumber(rec *store.ChangeRecord) string {
	var n uint64
	switch rec.Table {
	case store.TableMemoryVersions:
		n, _ = strconv.ParseUint(rec.RowID, 10, 64)
		var v struct {
			SupersededBy uint64 `json:"superseded_by"`
		}
		if jsonObject(rec.Data, &v) {
			n = max(n, v.SupersededBy)
		}
	case store.TableMemoryNumbers:
		var v struct {
			Number uint64 `json:"number"`
		}
		if jsonObject(rec.Data, &v) {
			n = v.Number
		}
	default:
		return ""
	}
	if n == 0 {
		return ""
	}
	why, _ := d.reg.RefusesNumber(rec.InstanceID, n)
	return why
}

// jsonObject decodes data into v; false if it is not a JSON object of v's shape.
func jsonObject(data json.RawMessage, v any) bool {
	return len(data) > 0 && sjson.Unmarshal(data, v) == nil // segmentio's (every numbering record applied)
}

// promoted reports whether this instance is home by a home record (it was
// promoted), not as the original home.
func (d *Daemon) promoted() bool {
	rec, ok := d.reg.HomeRecord()
	return ok && rec.InstanceID == d.h.InstanceID
}
