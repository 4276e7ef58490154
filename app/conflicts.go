package app

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/crow-sync/crow/conflicts"
	"github.com/crow-sync/crow/store"
)

// ConflictList is the answer of conflicts.list.
type ConflictList struct {
	Conflicts []conflicts.Conflict `json:"conflicts"`
	// NextCursor fetches the next page; "" when this is the last.
	NextCursor string `json:"next_cursor"`
}

// ConflictListIn is the input of conflicts.list.
type ConflictListIn struct {
	Unresolved *bool  `json:"unresolved,omitempty" in:"query" mcpdefault:"true" desc:"Only conflicts not resolved yet (MCP default true; REST default false)."`
	Table      string `json:"table,omitempty" in:"query" desc:"Only conflicts of this table, e.g. \"memories\" or \"notes\"."`
	RowID      string `json:"row_id,omitempty" in:"query" desc:"Only conflicts of this row (needs table)."`
	Limit      int    `json:"limit,omitempty" in:"query" min:"1" max:"1000" mcpdefault:"50" desc:"Page size, 1-1000 (MCP default 50; REST: the whole list)."`
	Cursor     string `json:"cursor,omitempty" in:"query" desc:"The next_cursor of the previous page; omit for the first page."`
}

// Validate checks the table and that row_id comes with it.
func (in ConflictListIn) Validate() error {
	if err := validTable(in.Table); err != nil {
		return err
	}
	if in.RowID != "" && in.Table == "" {
		return Invalidf("row_id needs table")
	}
	return nil
}

// validTable refuses a table name that is not one of the synced tables.
func validTable(t string) error {
	if t != "" && !store.ValidTable(t) {
		return Invalidf("unknown table %q; tables: %s", t, strings.Join(store.Tables(), ", "))
	}
	return nil
}

// ConflictID names one conflict.
type ConflictID struct {
	ID string `json:"id" in:"path" required:"true" desc:"Id of the sync conflict (crow_list_sync_conflicts lists them)."`
}

// Restored is the answer of conflicts.restore.
type Restored struct {
	Conflict *conflicts.Conflict `json:"conflict"`
	// Row is the row as the restore wrote it (a new local edit).
	Row *store.Row `json:"row"`
}

// ResolveAllIn is the (optional) input of conflicts.resolve_all.
type ResolveAllIn struct {
	Table string `json:"table,omitempty" desc:"Only this table's conflicts, e.g. \"memories\"; omit for all."`
}

// Validate checks the table.
func (in ResolveAllIn) Validate() error { return validTable(in.Table) }

// ResolvedAll is the answer of conflicts.resolve_all.
type ResolvedAll struct {
	Resolved int `json:"resolved"`
}

var (
	ConflictsList = define(&Def[ConflictListIn, ConflictList]{
		Spec: Spec{Name: "conflicts.list", Method: "GET", Path: "/v1/sync/conflicts", Tool: "crow_list_sync_conflicts",
			Title: "List sync conflicts", Tag: "sync", Summary: "Sync conflict records, newest first",
			Description: "List sync conflicts, newest first: rows that two instances changed without seeing each other's " +
				"edit. Each record has the live (winning) and the overwritten (losing) version with their data, instance ids " +
				"and lamport timestamps, op (update, delete, insert) and whether it is resolved. Returns {conflicts, next_cursor}. " +
				"Resolve one with crow_sync_conflicts_keep_current or crow_sync_conflicts_restore_other.",
			Access: Peer, ReadOnly: true},
		Impl: (*App).conflictsList,
	})
	ConflictsGet = define(&Def[ConflictID, conflicts.Conflict]{
		Spec: Spec{Name: "conflicts.get", Method: "GET", Path: "/v1/sync/conflicts/{id}", Tag: "sync",
			Summary: "One sync conflict record", ReadOnly: true},
		Impl: (*App).conflictsGet,
	})
	ConflictsKeep = define(&Def[ConflictID, conflicts.Conflict]{
		Spec: Spec{Name: "conflicts.keep", Method: "POST", Path: "/v1/sync/conflicts/{id}/keep", Tool: "crow_sync_conflicts_keep_current",
			Title: "Keep the live version", Tag: "sync",
			Summary: "Resolve a conflict by keeping the live version (idempotent; replicates)",
			Description: "Resolve a sync conflict by keeping the live (winning) version: the overwritten version is " +
				"dismissed. Nothing in the row changes. The resolution replicates to every instance. Idempotent. " +
				"Returns the resolved conflict.",
			Idempotent: true},
		Impl: (*App).conflictsKeep,
	})
	ConflictsRestore = define(&Def[ConflictID, Restored]{
		Spec: Spec{Name: "conflicts.restore", Method: "POST", Path: "/v1/sync/conflicts/{id}/restore", Tool: "crow_sync_conflicts_restore_other",
			Title: "Restore the overwritten version", Tag: "sync",
			Summary: "Write the overwritten version back as a new edit and resolve the conflict; 409 if the row changed since (stale), for insert collisions and crow_context rows",
			Description: "Resolve a sync conflict by restoring the overwritten (losing) version: it is written back as " +
				"a new edit of the row and replicates like any edit. Refused if the row changed since the conflict was " +
				"recorded (stale: look at the row again, then keep or edit it), for insert collisions (two rows created " +
				"independently with one id: write the row you want yourself, then keep) and for crow_context rows. " +
				"Returns {conflict, row}.",
			Destructive: true},
		Impl: (*App).conflictsRestore,
	})
	ConflictsResolveAll = define(&Def[ResolveAllIn, ResolvedAll]{
		Spec: Spec{Name: "conflicts.resolve_all", Method: "POST", Path: "/v1/sync/conflicts/resolve-all", Tool: "crow_sync_conflicts_resolve_all",
			Title: "Resolve every conflict", Tag: "sync",
			Summary: "Keep the live version of every unresolved conflict (optionally of one table)",
			Description: "Resolve every unresolved sync conflict (optionally of one table) by keeping the live " +
				"versions. The resolutions replicate. Returns {resolved: how many}.",
			Idempotent: true},
		Impl: (*App).conflictsResolveAll,
	})
)

func conflictKey(c conflicts.Conflict) (time.Time, string) { return c.CreatedAt, c.ID }

func (a *App) conflictStore() (*conflicts.Store, error) {
	if a.d.Conflicts == nil {
		return nil, unavailable("conflict store")
	}
	return a.d.Conflicts, nil
}

func (a *App) recovery() (*conflicts.Recovery, error) {
	if a.d.Recovery == nil {
		return nil, unavailable("conflict recovery")
	}
	return a.d.Recovery, nil
}

func (a *App) conflictsList(_ context.Context, in ConflictListIn) (ConflictList, error) {
	cs, err := a.conflictStore()
	if err != nil {
		return ConflictList{}, err
	}
	f := conflicts.Filter{Table: in.Table, RowID: in.RowID, Unresolved: in.Unresolved != nil && *in.Unresolved}
	list, err := cs.List(f)
	if err != nil {
		return ConflictList{}, err
	}
	list, next, err := conflicts.PageNewest(list, conflictKey, in.Cursor, in.Limit)
	if err != nil {
		return ConflictList{}, Wrap(KindInvalid, err, "")
	}
	if list == nil {
		list = []conflicts.Conflict{}
	}
	return ConflictList{Conflicts: list, NextCursor: next}, nil
}

// conflictError says what to do about the recovery errors.
func conflictError(id string, err error) error {
	if errors.Is(err, conflicts.ErrNotFound) {
		return Wrap(KindNotFound, err, "no sync conflict with id "+id+"; crow_list_sync_conflicts (GET /v1/sync/conflicts) lists them")
	}
	return err
}

func (a *App) conflictsGet(_ context.Context, in ConflictID) (conflicts.Conflict, error) {
	cs, err := a.conflictStore()
	if err != nil {
		return conflicts.Conflict{}, err
	}
	c, err := cs.Get(in.ID)
	if err != nil {
		return conflicts.Conflict{}, conflictError(in.ID, err)
	}
	return *c, nil
}

func (a *App) conflictsKeep(ctx context.Context, in ConflictID) (conflicts.Conflict, error) {
	rc, err := a.recovery()
	if err != nil {
		return conflicts.Conflict{}, err
	}
	c, err := rc.Keep(ctx, in.ID)
	if err != nil {
		return conflicts.Conflict{}, conflictError(in.ID, err)
	}
	return *c, nil
}

func (a *App) conflictsRestore(ctx context.Context, in ConflictID) (Restored, error) {
	rc, err := a.recovery()
	if err != nil {
		return Restored{}, err
	}
	c, row, err := rc.Restore(ctx, in.ID)
	if err != nil {
		return Restored{}, conflictError(in.ID, err)
	}
	return Restored{Conflict: c, Row: row}, nil
}

func (a *App) conflictsResolveAll(ctx context.Context, in ResolveAllIn) (ResolvedAll, error) {
	rc, err := a.recovery()
	if err != nil {
		return ResolvedAll{}, err
	}
	n, err := rc.ResolveAll(ctx, conflicts.Filter{Table: in.Table})
	if err != nil {
		return ResolvedAll{}, err
	}
	return ResolvedAll{Resolved: n}, nil
}
