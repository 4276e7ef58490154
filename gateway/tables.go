package gateway

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/crow-sync/crow/store"
)

// genericTables are the synced tables written through /v1/tables: the ones
// without a domain API of their own (memories, crow_instances and the
// home-written tables have theirs, with their own rules).
var genericTables = map[string]bool{
	store.TableNotes: true, store.TableSettings: true, store.TableContacts: true,
	store.TableSources: true, store.TableBlogPosts: true, store.TableCrowContext: true,
}

// tableOf validates the {table} path value for reading (any synced table) or
// writing (genericTables only).
func tableOf(w http.ResponseWriter, r *http.Request, write bool) (string, bool) {
	t := r.PathValue("table")
	switch {
	case write && !genericTables[t] && store.ValidTable(t):
		writeError(w, http.StatusBadRequest, "table %q is written through its own API, not /v1/tables", t)
		return "", false
	case write && !genericTables[t], !store.ValidTable(t):
		writeError(w, http.StatusNotFound, "unknown table %q", t)
		return "", false
	}
	return t, true
}

// rowData is the body of PUT /v1/tables/{table}/rows/{row_id}: the row's
// data, a JSON object.
type rowData map[string]json.RawMessage

// rowsResponse is the answer of GET /v1/tables/{table}/rows.
type rowsResponse struct {
	Rows []store.Row `json:"rows"`
	// NextCursor fetches the next page; "" when this is the last.
	NextCursor string `json:"next_cursor"`
}

// rowDeletedResponse is the answer of DELETE /v1/tables/{table}/rows/{row_id}.
type rowDeletedResponse struct {
	Table   string `json:"table"`
	RowID   string `json:"row_id"`
	Deleted bool   `json:"deleted"`
}

// handleRowList pages through a synced table in row id order (?order=desc
// reverses it); tombstones only with ?deleted=true.
func (s *Server) handleRowList(w http.ResponseWriter, r *http.Request) {
	t, ok := tableOf(w, r, false)
	if !ok {
		return
	}
	q := r.URL.Query()
	limit, err := parseLimit(q)
	if err != nil {
		writeError(w, http.StatusBadRequest, "%s", err.Error())
		return
	}
	rows, next, err := s.cfg.DB.List(t, store.ListOptions{
		After: q.Get("cursor"), Limit: limit, IncludeDeleted: queryBool(q, "deleted"), Reverse: q.Get("order") == "desc",
	})
	if err != nil {
		s.writeDomainError(w, r, err)
		return
	}
	if rows == nil {
		rows = []store.Row{}
	}
	writeJSON(w, http.StatusOK, rowsResponse{Rows: rows, NextCursor: next})
}

func (s *Server) handleRowGet(w http.ResponseWriter, r *http.Request) {
	t, ok := tableOf(w, r, false)
	if !ok {
		return
	}
	row, err := s.cfg.DB.Get(t, r.PathValue("row_id"))
	if errors.Is(err, store.ErrNotFound) || (err == nil && row.Deleted && !queryBool(r.URL.Query(), "deleted")) {
		writeError(w, http.StatusNotFound, "no row %s in %s", r.PathValue("row_id"), t)
		return
	} else if err != nil {
		s.writeDomainError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, row)
}

func (s *Server) handleRowPut(w http.ResponseWriter, r *http.Request) {
	t, ok := tableOf(w, r, true)
	if !ok {
		return
	}
	var data rowData
	if err := decodeJSON(w, r, &data); err != nil {
		writeDecodeError(w, err)
		return
	}
	if data == nil {
		writeError(w, http.StatusBadRequest, "the body must be a JSON object: the row's data")
		return
	}
	raw, _ := json.Marshal(data)
	rows, err := s.cfg.Writer.Write(r.Context(), store.Mutation{Table: t, RowID: r.PathValue("row_id"), Op: store.OpPut, Data: raw})
	if errors.Is(err, store.ErrInvalidMutation) {
		writeError(w, http.StatusBadRequest, "%s", err.Error())
		return
	} else if err != nil {
		s.writeDomainError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rows[0])
}

func (s *Server) handleRowDelete(w http.ResponseWriter, r *http.Request) {
	t, ok := tableOf(w, r, true)
	if !ok {
		return
	}
	_, err := s.cfg.Writer.Write(r.Context(), store.Mutation{Table: t, RowID: r.PathValue("row_id"), Op: store.OpDelete})
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeError(w, http.StatusNotFound, "no row %s in %s", r.PathValue("row_id"), t)
	case errors.Is(err, store.ErrInvalidMutation):
		writeError(w, http.StatusBadRequest, "%s", err.Error())
	case err != nil:
		s.writeDomainError(w, r, err)
	default:
		writeJSON(w, http.StatusOK, rowDeletedResponse{Table: t, RowID: r.PathValue("row_id"), Deleted: true})
	}
}
