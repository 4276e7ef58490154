package app

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/crow-sync/crow/store"
)

// genericTables are the synced tables written through the tables
// operations: the ones without a domain API of their own (memories,
// crow_instances and the home-written tables have theirs, with their rules).
var genericTables = map[string]bool{
	store.TableNotes: true, store.TableSettings: true, store.TableContacts: true,
	store.TableSources: true, store.TableBlogPosts: true, store.TableCrowContext: true,
}

// tableFor checks a table name for reading (any synced table) or writing
// (the generic tables only).
func tableFor(t string, write bool) error {
	switch {
	case write && !genericTables[t] && store.ValidTable(t):
		return Invalidf("table %q is written through its own API, not /v1/tables", t)
	case !store.ValidTable(t), write && !genericTables[t]:
		return Errorf(KindNotFound, "unknown table %q", t)
	}
	return nil
}

// RowsIn is the input of tables.rows.
type RowsIn struct {
	Table   string `json:"table" in:"path" required:"true" desc:"A synced table."`
	Cursor  string `json:"cursor,omitempty" in:"query" desc:"next_cursor of the previous page; absent for the first page"`
	Limit   int    `json:"limit,omitempty" in:"query" min:"1" max:"1000" desc:"page size"`
	Deleted bool   `json:"deleted,omitempty" in:"query" desc:"include deleted rows (tombstones)"`
	Order   string `json:"order,omitempty" in:"query" enum:"asc,desc" desc:"row id order: asc (default) or desc"`
}

// Rows is the answer of tables.rows.
type Rows struct {
	Rows []store.Row `json:"rows"`
	// NextCursor fetches the next page; "" when this is the last.
	NextCursor string `json:"next_cursor"`
}

// RowIn names one row.
type RowIn struct {
	Table   string `json:"table" in:"path" required:"true" desc:"A synced table."`
	RowID   string `json:"row_id" in:"path" required:"true" desc:"The row's id."`
	Deleted bool   `json:"deleted,omitempty" in:"query" desc:"include deleted rows (tombstones)"`
}

// RowPutIn is the input of tables.put: the row's data is the whole body.
type RowPutIn struct {
	Table string                     `json:"table" in:"path" required:"true" desc:"A generic table: notes, settings, contacts, sources, blog_posts or crow_context."`
	RowID string                     `json:"row_id" in:"path" required:"true" desc:"The row's id."`
	Data  map[string]json.RawMessage `json:"data" in:"body" required:"true" desc:"The row's data, a JSON object."`
}

// RowRef names one row of a generic table.
type RowRef struct {
	Table string `json:"table" in:"path" required:"true" desc:"A generic table."`
	RowID string `json:"row_id" in:"path" required:"true" desc:"The row's id."`
}

// RowDeleted is the answer of tables.delete.
type RowDeleted struct {
	Table   string `json:"table"`
	RowID   string `json:"row_id"`
	Deleted bool   `json:"deleted"`
}

var (
	TablesRows = define(&Def[RowsIn, Rows]{
		Spec: Spec{Name: "tables.rows", Method: "GET", Path: "/v1/tables/{table}/rows", Tag: "tables",
			Summary: "Rows of a synced table in row id order, a page at a time", ReadOnly: true},
		Impl: (*App).tableRows,
	})
	TablesGet = define(&Def[RowIn, store.Row]{
		Spec: Spec{Name: "tables.get", Method: "GET", Path: "/v1/tables/{table}/rows/{row_id}", Tag: "tables",
			Summary: "One row (envelope) of a synced table", ReadOnly: true},
		Impl: (*App).tableGet,
	})
	TablesPut = define(&Def[RowPutIn, store.Row]{
		Spec: Spec{Name: "tables.put", Method: "PUT", Path: "/v1/tables/{table}/rows/{row_id}", Tag: "tables",
			Summary: "Insert or replace a row of a generic table (notes, settings, contacts, sources, blog_posts, crow_context)"},
		Impl: (*App).tablePut,
	})
	TablesDelete = define(&Def[RowRef, RowDeleted]{
		Spec: Spec{Name: "tables.delete", Method: "DELETE", Path: "/v1/tables/{table}/rows/{row_id}", Tag: "tables",
			Summary: "Delete a row of a generic table (leaves a tombstone)"},
		Impl: (*App).tableDelete,
	})
)

func (a *App) tables() (*store.DB, error) {
	if a.d.DB == nil || a.d.Writer == nil {
		return nil, unavailable("store")
	}
	return a.d.DB, nil
}

func (a *App) tableRows(_ context.Context, in RowsIn) (Rows, error) {
	db, err := a.tables()
	if err != nil {
		return Rows{}, err
	}
	if err := tableFor(in.Table, false); err != nil {
		return Rows{}, err
	}
	rows, next, err := db.List(in.Table, store.ListOptions{After: in.Cursor, Limit: in.Limit, IncludeDeleted: in.Deleted, Reverse: in.Order == "desc"})
	if err != nil {
		return Rows{}, err
	}
	if rows == nil {
		rows = []store.Row{}
	}
	return Rows{Rows: rows, NextCursor: next}, nil
}

func (a *App) tableGet(_ context.Context, in RowIn) (store.Row, error) {
	db, err := a.tables()
	if err != nil {
		return store.Row{}, err
	}
	if err := tableFor(in.Table, false); err != nil {
		return store.Row{}, err
	}
	row, err := db.Get(in.Table, in.RowID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && row.Deleted && !in.Deleted) {
		return store.Row{}, Errorf(KindNotFound, "no row %s in %s", in.RowID, in.Table)
	} else if err != nil {
		return store.Row{}, err
	}
	return *row, nil
}

func (a *App) tablePut(ctx context.Context, in RowPutIn) (store.Row, error) {
	if _, err := a.tables(); err != nil {
		return store.Row{}, err
	}
	if err := tableFor(in.Table, true); err != nil {
		return store.Row{}, err
	}
	raw, err := json.Marshal(in.Data)
	if err != nil {
		return store.Row{}, err
	}
	rows, err := a.d.Writer.Write(ctx, store.Mutation{Table: in.Table, RowID: in.RowID, Op: store.OpPut, Data: raw})
	if errors.Is(err, store.ErrInvalidMutation) {
		return store.Row{}, Wrap(KindInvalid, err, "")
	} else if err != nil {
		return store.Row{}, err
	}
	return rows[0], nil
}

func (a *App) tableDelete(ctx context.Context, in RowRef) (RowDeleted, error) {
	if _, err := a.tables(); err != nil {
		return RowDeleted{}, err
	}
	if err := tableFor(in.Table, true); err != nil {
		return RowDeleted{}, err
	}
	_, err := a.d.Writer.Write(ctx, store.Mutation{Table: in.Table, RowID: in.RowID, Op: store.OpDelete})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return RowDeleted{}, Wrap(KindNotFound, err, "no row "+in.RowID+" in "+in.Table)
	case errors.Is(err, store.ErrInvalidMutation):
		return RowDeleted{}, Wrap(KindInvalid, err, "")
	case err != nil:
		return RowDeleted{}, err
	}
	return RowDeleted{Table: in.Table, RowID: in.RowID, Deleted: true}, nil
}
