package gateway

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/memory"
)

// writeDomainError maps the domain packages' errors to HTTP answers.
func (s *Server) writeDomainError(w http.ResponseWriter, r *http.Request, err error) {
	s.writeOpError(w, r, &app.Spec{Name: r.Pattern}, err)
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

// searchResponse is the answer of GET /v1/memories/search.
func (s *Server) handleMemorySearch(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	query := strings.TrimSpace(q.Get("q"))
	if query == "" {
		writeError(w, http.StatusBadRequest, "q is required: the text to search for")
		return
	}
	if _, err := s.parseScope(q.Get("instances")); err != nil {
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
