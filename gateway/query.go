package gateway

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// param is one query parameter a route accepts. checkQuery validates it
// before the handler runs, so every endpoint refuses bad query strings the
// same way; the OpenAPI document lists it.
type param struct {
	name     string
	kind     string // "string", "integer" or "boolean"
	min, max int    // integer bounds (inclusive)
	enum     []string
	multi    bool // may repeat (and may hold a comma-separated list)
	required bool // documented as required; the handler says what is missing
	desc     string
}

// The query parameters of the route table.
var (
	pChallenge     = param{name: "challenge", kind: "string", desc: "16 to 64 bytes of hex; the answer then carries an Ed25519 signature over (crow-health-v1, challenge, instance id)"}
	pProject       = param{name: "project", kind: "string", desc: "only memories of this project"}
	pCategory      = param{name: "category", kind: "string", desc: "only memories of this category"}
	pMinImportance = param{name: "min_importance", kind: "integer", min: 1, max: 10, desc: "only memories at least this important"}
	pTags          = param{name: "tags", kind: "string", multi: true, desc: "only memories carrying every one of these tags (comma-separated, or the parameter repeated)"}
	pLimit         = param{name: "limit", kind: "integer", min: 1, max: 1000, desc: "page size"}
	pListLimit     = param{name: "limit", kind: "integer", min: 1, max: 1000, desc: "page size; absent: the whole list"}
	pCursor        = param{name: "cursor", kind: "string", desc: "next_cursor of the previous page; absent for the first page"}
	pOrder         = param{name: "order", kind: "string", enum: []string{"newest", "oldest"}, desc: "newest first (default) or oldest first"}
	pRowOrder      = param{name: "order", kind: "string", enum: []string{"asc", "desc"}, desc: "row id order: asc (default) or desc"}
	pQ             = param{name: "q", kind: "string", required: true, desc: "the text to search for"}
	pInstances     = param{name: "instances", kind: "string", desc: "which instances to search: local (the default), all, or a comma-separated list of instance ids"}
	pVersion       = param{name: "version", kind: "integer", min: 1, max: 1_000_000_000, desc: "the state version (default: the newest)"}
	pTable         = param{name: "table", kind: "string", desc: "only conflicts of this table"}
	pRowID         = param{name: "row_id", kind: "string", desc: "only conflicts of this row (needs table)"}
	pUnresolved    = param{name: "unresolved", kind: "boolean", desc: "only conflicts not resolved yet"}
	pDeleted       = param{name: "deleted", kind: "boolean", desc: "include deleted rows (tombstones)"}
)

// check validates the values given for p.
func (p param) check(vals []string) error {
	if len(vals) > 1 && !p.multi {
		return fmt.Errorf("query parameter %s is given %d times; give it once", p.name, len(vals))
	}
	for _, v := range vals {
		if v == "" {
			continue // an empty value counts as absent
		}
		switch p.kind {
		case "integer":
			n, err := strconv.Atoi(v)
			if err != nil || n < p.min || n > p.max {
				return fmt.Errorf("%s must be a whole number from %d to %d", p.name, p.min, p.max)
			}
		case "boolean":
			if _, err := strconv.ParseBool(v); err != nil {
				return fmt.Errorf("%s must be true or false", p.name)
			}
		}
		if p.enum != nil && !slices.Contains(p.enum, v) {
			return fmt.Errorf("%s must be %s", p.name, strings.Join(p.enum, " or "))
		}
	}
	return nil
}

// queryBool reads a boolean query parameter checkQuery has validated
// (absent or empty: false).
func queryBool(q url.Values, name string) bool {
	b, _ := strconv.ParseBool(q.Get(name))
	return b
}

// checkQuery refuses, with a 400, a query string naming a parameter the
// route does not take or giving one a value of the wrong type.
func checkQuery(params []param, next http.Handler) http.Handler {
	names := make([]string, len(params))
	for i, p := range params {
		names[i] = p.name
	}
	takes := "no query parameters"
	if len(names) > 0 {
		takes = "only " + strings.Join(names, ", ")
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.RawQuery != "" {
			q, err := url.ParseQuery(r.URL.RawQuery)
			if err != nil {
				writeError(w, http.StatusBadRequest, "malformed query string: %s", err.Error())
				return
			}
			for _, k := range slices.Sorted(maps.Keys(q)) {
				i := slices.Index(names, k)
				if i < 0 {
					writeError(w, http.StatusBadRequest, "unknown query parameter %q: %s %s takes %s", k, r.Method, r.URL.Path, takes)
					return
				}
				if err := params[i].check(q[k]); err != nil {
					writeError(w, http.StatusBadRequest, "%s", err.Error())
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}
