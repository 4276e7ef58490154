package gateway

import (
	"errors"
	"net/http"
	"time"

	"github.com/crow-sync/crow/conflicts"
	"github.com/crow-sync/crow/store"
)

// conflictsResponse is the answer of GET /v1/sync/conflicts.
type conflictsResponse struct {
	Conflicts []conflicts.Conflict `json:"conflicts"`
	// NextCursor fetches the next page; "" when this is the last.
	NextCursor string `json:"next_cursor"`
}

func conflictKey(c conflicts.Conflict) (time.Time, string)         { return c.CreatedAt, c.ID }
func notificationKey(n conflicts.Notification) (time.Time, string) { return n.CreatedAt, n.ID }

func (s *Server) handleConflictsList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := conflicts.Filter{Table: q.Get("table"), RowID: q.Get("row_id")}
	if f.Table != "" && !store.ValidTable(f.Table) {
		writeError(w, http.StatusBadRequest, "unknown table %q", f.Table)
		return
	}
	if f.RowID != "" && f.Table == "" {
		writeError(w, http.StatusBadRequest, "row_id needs table")
		return
	}
	f.Unresolved = queryBool(q, "unresolved")
	list, err := s.cfg.Conflicts.List(f)
	if err != nil {
		s.writeDomainError(w, r, err)
		return
	}
	limit, err := parseLimit(q)
	if err != nil {
		writeError(w, http.StatusBadRequest, "%s", err.Error())
		return
	}
	list, next, err := pageNewest(list, conflictKey, q.Get("cursor"), limit)
	if err != nil {
		writeError(w, http.StatusBadRequest, "%s", err.Error())
		return
	}
	if list == nil {
		list = []conflicts.Conflict{}
	}
	writeJSON(w, http.StatusOK, conflictsResponse{Conflicts: list, NextCursor: next})
}

func (s *Server) handleConflictGet(w http.ResponseWriter, r *http.Request) {
	c, err := s.cfg.Conflicts.Get(r.PathValue("id"))
	if errors.Is(err, conflicts.ErrNotFound) {
		writeError(w, http.StatusNotFound, "no sync conflict with id %s", r.PathValue("id"))
		return
	} else if err != nil {
		s.writeDomainError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, c)
}

func (s *Server) handleNotifications(w http.ResponseWriter, r *http.Request) {
	list, err := s.cfg.Conflicts.Notifications()
	if err != nil {
		s.writeDomainError(w, r, err)
		return
	}
	unread := 0
	for _, n := range list {
		if !n.Read {
			unread++
		}
	}
	q := r.URL.Query()
	limit, err := parseLimit(q)
	if err != nil {
		writeError(w, http.StatusBadRequest, "%s", err.Error())
		return
	}
	list, next, err := pageNewest(list, notificationKey, q.Get("cursor"), limit)
	if err != nil {
		writeError(w, http.StatusBadRequest, "%s", err.Error())
		return
	}
	if list == nil {
		list = []conflicts.Notification{}
	}
	writeJSON(w, http.StatusOK, notificationsResponse{Notifications: list, Unread: unread, NextCursor: next})
}

// notificationsResponse is the answer of GET /v1/notifications.
type notificationsResponse struct {
	Notifications []conflicts.Notification `json:"notifications"`
	Unread        int                      `json:"unread"` // over all notifications, not only this page
	// NextCursor fetches the next page; "" when this is the last.
	NextCursor string `json:"next_cursor"`
}

// readResponse is the answer of POST /v1/notifications/{id}/read.
type readResponse struct {
	ID   string `json:"id"`
	Read bool   `json:"read"`
}

func (s *Server) handleNotificationRead(w http.ResponseWriter, r *http.Request) {
	if err := s.cfg.Conflicts.MarkRead(r.PathValue("id")); errors.Is(err, conflicts.ErrNotFound) {
		writeError(w, http.StatusNotFound, "no notification with id %s", r.PathValue("id"))
		return
	} else if err != nil {
		s.writeDomainError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, readResponse{ID: r.PathValue("id"), Read: true})
}

// restoreResponse is the answer of POST /v1/sync/conflicts/{id}/restore.
type restoreResponse struct {
	Conflict *conflicts.Conflict `json:"conflict"`
	// Row is the row as the restore wrote it (a new local edit).
	Row *store.Row `json:"row"`
}

// resolveAllRequest is the optional body of POST /v1/sync/conflicts/resolve-all.
type resolveAllRequest struct {
	// Table limits the action to one table's conflicts (default: all).
	Table string `json:"table,omitempty"`
}

// resolveAllResponse is the answer of POST /v1/sync/conflicts/resolve-all.
type resolveAllResponse struct {
	Resolved int `json:"resolved"`
}

// writeRecoveryError maps the recovery errors: 404 unknown id, 409 for a
// resolved, stale or unrestorable conflict (the message says which and what
// to do), else the domain mapping.
func (s *Server) writeRecoveryError(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, conflicts.ErrNotFound):
		writeError(w, http.StatusNotFound, "no sync conflict with id %s", r.PathValue("id"))
	case errors.Is(err, conflicts.ErrResolved), errors.Is(err, conflicts.ErrStale), errors.Is(err, conflicts.ErrRestoreRefused):
		writeError(w, http.StatusConflict, "%s", err.Error())
	default:
		s.writeDomainError(w, r, err)
	}
}

func (s *Server) handleConflictKeep(w http.ResponseWriter, r *http.Request) {
	c, err := s.cfg.Recovery.Keep(r.Context(), r.PathValue("id"))
	if err != nil {
		s.writeRecoveryError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, c)
}

func (s *Server) handleConflictRestore(w http.ResponseWriter, r *http.Request) {
	c, row, err := s.cfg.Recovery.Restore(r.Context(), r.PathValue("id"))
	if err != nil {
		s.writeRecoveryError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, restoreResponse{Conflict: c, Row: row})
}

func (s *Server) handleConflictsResolveAll(w http.ResponseWriter, r *http.Request) {
	var in resolveAllRequest
	if r.ContentLength != 0 {
		if err := decodeJSON(w, r, &in); err != nil {
			writeDecodeError(w, err)
			return
		}
	}
	if in.Table != "" && !store.ValidTable(in.Table) {
		writeError(w, http.StatusBadRequest, "unknown table %q", in.Table)
		return
	}
	n, err := s.cfg.Recovery.ResolveAll(r.Context(), conflicts.Filter{Table: in.Table})
	if err != nil {
		s.writeRecoveryError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, resolveAllResponse{Resolved: n})
}
