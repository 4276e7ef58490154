package conflicts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/crow-sync/crow/store"
)

// Recovery errors (SPEC §6). Each is wrapped with the conflict's id and a
// sentence the operator can act on.
var (
	// ErrResolved: the conflict was already resolved (here or on another
	// instance; resolutions replicate).
	ErrResolved = errors.New("already resolved")
	// ErrStale: the live row changed since the conflict was recorded, so
	// restoring the overwritten version would silently drop that change.
	ErrStale = errors.New("stale: the row changed since the conflict was recorded")
	// ErrRestoreRefused: this kind of conflict cannot be restored (an insert
	// collision, a crow_context or registry row).
	ErrRestoreRefused = errors.New("restore refused")
	// ErrResolvedByRestore: Recovery.Keep of a conflict already resolved by
	// a restore (here or on another instance): the overwritten version is
	// live again, so there is nothing to keep. It wraps ErrResolved; the
	// message names the instance and the time of the restore.
	ErrResolvedByRestore = fmt.Errorf("%w by restore", ErrResolved)
)

// Action is how a conflict was resolved.
type Action string

// Resolution actions.
const (
	// ActionKeep: the live (winning) version stays; the overwritten one is
	// dismissed. Resolve-all keeps too.
	ActionKeep Action = "keep"
	// ActionRestore: the overwritten version was written back as a new edit.
	ActionRestore Action = "restore"
)

// resolution is the data of a sync_conflicts row: the synced resolution of
// the record with the same id. The table is last-write-wins (package
// sync/apply), so resolving one conflict on two machines at once never
// raises a conflict of its own.
type resolution struct {
	Action     Action    `json:"action"`
	ResolvedAt time.Time `json:"resolved_at"`
	InstanceID string    `json:"instance_id"`
}

// joinTxn sets c's resolution fields from its sync_conflicts row, if any.
// Records are local derived state; resolutions are the synced part.
func (s *Store) joinTxn(txn *store.Txn, c *Conflict) error {
	row, err := txn.GetRow(store.TableSyncConflicts, c.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if row.Deleted {
		return nil
	}
	var r resolution
	if err := json.Unmarshal(row.Data, &r); err != nil || r.ResolvedAt.IsZero() {
		r.ResolvedAt = row.UpdatedAt // a resolution row of another shape still resolves
	}
	at := r.ResolvedAt.UTC()
	c.Resolved, c.ResolvedAt, c.Resolution = true, &at, r.Action
	return nil
}

// Recovery carries out the operator's recovery actions (SPEC §6): keep
// current, restore the overwritten version, resolve all. Every action is a
// write through the instance's normal write path (store.Writer), so it is
// durable, lands in the instance's feed and replicates: a restore is a new
// local edit of the row, and the resolution (a sync_conflicts row keyed by
// the conflict id) marks the conflict resolved on every instance.
type Recovery struct {
	st   *Store
	w    *store.Writer
	self string
	now  func() time.Time
}

// NewRecovery returns the recovery actions over st, writing through w.
func NewRecovery(st *Store, w *store.Writer) *Recovery {
	return &Recovery{st: st, w: w, self: w.InstanceID(), now: st.now}
}

// resolutionMutation writes the resolution of id, refusing (ErrResolved)
// if one exists by the time the write runs.
func (r *Recovery) resolutionMutation(id string, a Action) (store.Mutation, error) {
	data, err := json.Marshal(resolution{Action: a, ResolvedAt: r.now().UTC(), InstanceID: r.self})
	if err != nil {
		return store.Mutation{}, err
	}
	return store.Mutation{Table: store.TableSyncConflicts, RowID: id, Op: store.OpPut, Data: data,
		Check: func(existing *store.Row) error {
			if existing != nil && !existing.Deleted {
				return ErrResolved
			}
			return nil
		}}, nil
}

// Keep resolves conflict id by keeping the live version. It is idempotent:
// keeping a kept conflict returns it as it is. A conflict resolved by a
// restore is refused with ErrResolvedByRestore ("already resolved by restore
// on <instance> at <time>; nothing to keep"). ErrNotFound for an unknown id.
func (r *Recovery) Keep(ctx context.Context, id string) (*Conflict, error) {
	c, err := r.st.Get(id)
	if err != nil {
		return nil, err
	}
	if c.Resolved {
		if err := r.resolvedByRestore(c); err != nil {
			return nil, err
		}
		return c, nil
	}
	m, err := r.resolutionMutation(id, ActionKeep)
	if err != nil {
		return nil, err
	}
	if _, err := r.w.Write(ctx, m); err != nil && !errors.Is(err, ErrResolved) {
		return nil, fmt.Errorf("keeping current version of conflict %s: %w", id, err)
	}
	if c, err = r.st.Get(id); err != nil {
		return nil, err
	}
	if err := r.resolvedByRestore(c); err != nil {
		return nil, err // a restore won the race
	}
	return c, nil
}

// resolvedByRestore returns ErrResolvedByRestore, with who restored and
// when, if resolved c was resolved by a restore; nil otherwise.
func (r *Recovery) resolvedByRestore(c *Conflict) error {
	if c.Resolution != ActionRestore {
		return nil
	}
	at := "an unknown time"
	if c.ResolvedAt != nil {
		at = c.ResolvedAt.UTC().Format(time.RFC3339)
	}
	by := "an unknown instance"
	if row, err := r.st.db.Get(store.TableSyncConflicts, c.ID); err == nil {
		var res resolution
		if json.Unmarshal(row.Data, &res) == nil && res.InstanceID != "" {
			by = res.InstanceID
		}
	}
	return fmt.Errorf("conflict %s is %w on %s at %s; nothing to keep", c.ID, ErrResolvedByRestore, by, at)
}

// Restore writes the overwritten (losing) version of conflict id back as a
// new local edit of the row and resolves the conflict, in one write. It
// re-reads the live row inside that write and refuses with ErrStale unless
// the row is still exactly the winning version the conflict recorded; it
// refuses (ErrRestoreRefused) insert collisions, whose two versions stay
// visible for manual resolution, and crow_context and crow_instances rows;
// ErrResolved if the conflict is resolved already. The losing data is
// written as it was recorded; a losing tombstone deletes the row. It returns
// the resolved record and the row as written.
func (r *Recovery) Restore(ctx context.Context, id string) (*Conflict, *store.Row, error) {
	c, err := r.st.Get(id)
	if err != nil {
		return nil, nil, err
	}
	if c.Resolved {
		return nil, nil, fmt.Errorf("conflict %s is %w (%s, at %s)", id, ErrResolved, c.Resolution,
			c.ResolvedAt.Format(time.RFC3339))
	}
	switch {
	case c.Op == OpInsert:
		return nil, nil, fmt.Errorf("%w: conflict %s is an insert collision (two rows created independently with the id %s); "+
			"both versions stay in the record for manual resolution: write the row you want, then keep", ErrRestoreRefused, id, c.RowID)
	case c.TableName == store.TableCrowContext:
		return nil, nil, fmt.Errorf("%w: conflict %s is on crow_context, which is last-write-wins", ErrRestoreRefused, id)
	case c.TableName == store.TableCrowInstances:
		return nil, nil, fmt.Errorf("%w: conflict %s is on the instance registry, which is written through its own API", ErrRestoreRefused, id)
	}
	guard := func(live *store.Row) error {
		if live == nil || live.InstanceID != c.WinningInstanceID || live.LamportTS != c.WinningLamportTS ||
			live.Deleted != c.WinningDeleted {
			return ErrStale
		}
		if !live.Deleted {
			canon, err := Canonical(live.Data)
			if err != nil {
				return err
			}
			if !bytes.Equal(canon, c.WinningData) {
				return ErrStale
			}
		}
		return nil
	}
	row := store.Mutation{Table: c.TableName, RowID: c.RowID, Op: store.OpPut, Data: c.LosingData, Check: guard}
	if c.LosingDeleted {
		row = store.Mutation{Table: c.TableName, RowID: c.RowID, Op: store.OpDelete, Check: guard}
	}
	res, err := r.resolutionMutation(id, ActionRestore)
	if err != nil {
		return nil, nil, err
	}
	rows, err := r.w.Write(ctx, row, res)
	switch {
	case errors.Is(err, ErrStale), errors.Is(err, store.ErrNotFound):
		return nil, nil, fmt.Errorf("conflict %s on %s/%s is %w; restoring would overwrite that newer edit: keep the conflict, or edit the row",
			id, c.TableName, c.RowID, ErrStale)
	case errors.Is(err, ErrResolved):
		return nil, nil, fmt.Errorf("conflict %s is %w (on this or another instance)", id, ErrResolved)
	case err != nil:
		return nil, nil, fmt.Errorf("restoring conflict %s: %w", id, err)
	}
	c, err = r.st.Get(id)
	if err != nil {
		return nil, nil, err
	}
	written := rows[0]
	return c, &written, nil
}

// resolveAllParallelism bounds the keeps in flight in ResolveAll; the
// writer's group commit turns them into few transactions.
const resolveAllParallelism = 64

// ResolveAll keeps the live version of every unresolved conflict matching f
// (f.Unresolved is implied) and returns how many it resolved. Conflicts
// resolved meanwhile (another instance, a concurrent call) are not counted.
func (r *Recovery) ResolveAll(ctx context.Context, f Filter) (int, error) {
	f.Unresolved = true
	list, err := r.st.List(f)
	if err != nil {
		return 0, err
	}
	var (
		mu       sync.Mutex
		n        int
		firstErr error
		wg       sync.WaitGroup
		sem      = make(chan struct{}, resolveAllParallelism)
	)
	for _, c := range list {
		m, err := r.resolutionMutation(c.ID, ActionKeep)
		if err != nil {
			return 0, err
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			_, err := r.w.Write(ctx, m)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				n++
			case errors.Is(err, ErrResolved):
			case firstErr == nil:
				firstErr = fmt.Errorf("resolving conflict %s: %w", c.ID, err)
			}
		})
	}
	wg.Wait()
	return n, firstErr
}
