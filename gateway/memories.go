package gateway

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/crow-sync/crow/memory"
)

// writeDomainError maps the domain packages' errors to HTTP answers.
func (s *Server) writeDomainError(w http.ResponseWriter, r *http.Request, err error) {
	var verr *memory.ValidationError
	var terr *toolError
	switch {
	case errors.As(err, &verr):
		writeError(w, http.StatusBadRequest, "%s", verr.Error())
	case errors.As(err, &terr): // a message fit for the caller
		writeError(w, http.StatusBadRequest, "%s", terr.msg)
	case errors.Is(err, memory.ErrNotFound):
		writeError(w, http.StatusNotFound, "not found: %s", r.PathValue("id"))
	case errors.Is(err, r.Context().Err()) && r.Context().Err() != nil:
		writeError(w, http.StatusServiceUnavailable, "request cancelled")
	default:
		s.log.Error("request failed", "path", r.URL.Path, "request_id", r.Context().Value(requestIDKey), "err", err)
		writeError(w, http.StatusInternalServerError, "internal error (request id %v)", r.Context().Value(requestIDKey))
	}
}

func (s *Server) handleMemoryCreate(w http.ResponseWriter, r *http.Request) {
	var in memory.CreateInput
	if err := decodeJSON(w, r, &in); err != nil {
		writeError(w, http.StatusBadRequest, "%s", err.Error())
		return
	}
	if in.Source == "" {
		in.Source = "api"
	}
	m, err := s.cfg.Memories.Add(r.Context(), in)
	if err != nil {
		s.writeDomainError(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/memory/"+url.PathEscape(m.ID))
	writeJSON(w, http.StatusCreated, m)
}

func (s *Server) handleMemoryGet(w http.ResponseWriter, r *http.Request) {
	m, err := s.cfg.Memories.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		s.writeDomainError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, m)
}

func (s *Server) handleMemoryPatch(w http.ResponseWriter, r *http.Request) {
	var p memory.PatchInput
	if err := decodeJSON(w, r, &p); err != nil {
		writeError(w, http.StatusBadRequest, "%s", err.Error())
		return
	}
	m, err := s.cfg.Memories.Update(r.Context(), r.PathValue("id"), p)
	if err != nil {
		s.writeDomainError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, m)
}

func (s *Server) handleMemoryDelete(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := s.cfg.Memories.Delete(r.Context(), id); err != nil {
		s.writeDomainError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, deleteResponse{ID: id, Deleted: true})
}

// parseFilter reads the shared list/search filters from the query string.
func parseFilter(q url.Values) (memory.Filter, error) {
	f := memory.Filter{Project: q.Get("project"), Category: q.Get("category")}
	if v := q.Get("min_importance"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10 {
			return f, errors.New("min_importance must be a whole number from 1 to 10")
		}
		f.MinImportance = n
	}
	for _, t := range q["tags"] {
		for _, p := range strings.Split(t, ",") {
			if p = strings.TrimSpace(p); p != "" {
				f.Tags = append(f.Tags, p)
			}
		}
	}
	return f, nil
}

// parseLimit reads ?limit= (0 when absent).
func parseLimit(q url.Values) (int, error) {
	v := q.Get("limit")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 1000 {
		return 0, errors.New("limit must be a whole number from 1 to 1000")
	}
	return n, nil
}

// parseFilterLimit reads the filters and the limit that list and search share.
func parseFilterLimit(q url.Values) (memory.Filter, int, error) {
	f, err := parseFilter(q)
	if err != nil {
		return f, 0, err
	}
	limit, err := parseLimit(q)
	return f, limit, err
}

func (s *Server) handleMemoryList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f, limit, err := parseFilterLimit(q)
	if err != nil {
		writeError(w, http.StatusBadRequest, "%s", err.Error())
		return
	}
	order := q.Get("order")
	if order != "" && order != "newest" && order != "oldest" {
		writeError(w, http.StatusBadRequest, "order must be newest or oldest")
		return
	}
	page, err := s.cfg.Memories.List(r.Context(), memory.ListOptions{
		Filter: f, Cursor: q.Get("cursor"), Limit: limit, Oldest: order == "oldest",
	})
	if err != nil {
		var verr *memory.ValidationError
		if errors.As(err, &verr) {
			writeError(w, http.StatusBadRequest, "%s", verr.Error())
			return
		}
		s.writeDomainError(w, r, err)
		return
	}
	if page.Memories == nil {
		page.Memories = []memory.Memory{}
	}
	writeJSON(w, http.StatusOK, page)
}

// searchResponse is the answer of GET /v1/memories/search.
func (s *Server) handleMemorySearch(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	query := strings.TrimSpace(q.Get("q"))
	if query == "" {
		writeError(w, http.StatusBadRequest, "q is required: the text to search for")
		return
	}
	if err := s.checkScope(q.Get("instances")); err != nil {
		writeError(w, http.StatusBadRequest, "%s", err.Error())
		return
	}
	f, limit, err := parseFilterLimit(q)
	if err != nil {
		writeError(w, http.StatusBadRequest, "%s", err.Error())
		return
	}
	res, err := s.search(r.Context(), q.Get("instances"), query, f, limit)
	if err != nil {
		s.writeDomainError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}
