package gateway

import (
	"net/http"
)

// limitBody caps the request body at n bytes (every route has a cap; see
// route.maxBody). A declared Content-Length over the cap is refused with a
// 413 at once; a longer body without one fails when read: the REST adapter
// (ops.go) and mcpWire answer that with a 413 too.
func limitBody(n int64, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > n {
			writeError(w, http.StatusRequestEntityTooLarge, "request body of %d bytes is larger than the %d bytes %s accepts", r.ContentLength, n, r.URL.Path)
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = http.MaxBytesReader(w, r.Body, n)
		}
		next.ServeHTTP(w, r)
	})
}
