package gateway

import (
	"maps"
	"net/http"
	"net/url"
	"slices"
)

// refuseQuery refuses, with a 400, any query string on a gateway route that
// takes none (the operations of app's table bind and check their own query
// parameters).
func refuseQuery(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.RawQuery != "" {
			q, err := url.ParseQuery(r.URL.RawQuery)
			if err != nil {
				writeError(w, http.StatusBadRequest, "malformed query string: %s", err.Error())
				return
			}
			if keys := slices.Sorted(maps.Keys(q)); len(keys) > 0 {
				writeError(w, http.StatusBadRequest, "unknown query parameter %q: %s %s takes no query parameters", keys[0], r.Method, r.URL.Path)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}
