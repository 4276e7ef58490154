package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// limitBody caps the request body at n bytes (every route has a cap; see
// route.maxBody). A declared Content-Length over the cap is refused with a
// 413 at once; a longer body without one fails when read: decodeJSON reports
// it as a bodyTooLargeError (413, writeDecodeError), mcpWire as a 413.
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

// bodyTooLargeError is decodeJSON's error for a body over its cap.
type bodyTooLargeError struct{ limit int64 }

func (e *bodyTooLargeError) Error() string {
	return fmt.Sprintf("request body larger than %d bytes", e.limit)
}

// writeDecodeError answers a decodeJSON error: 413 for a body over the cap,
// else 400.
func writeDecodeError(w http.ResponseWriter, err error) {
	var tooBig *bodyTooLargeError
	if errors.As(err, &tooBig) {
		writeError(w, http.StatusRequestEntityTooLarge, "%s", err.Error())
		return
	}
	writeError(w, http.StatusBadRequest, "%s", err.Error())
}

// decodeEmptyJSON accepts an empty body or a JSON object with no fields (the
// body of POST /v1/apikey/rotate); anything else is an error for the client.
func decodeEmptyJSON(w http.ResponseWriter, r *http.Request) error {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return &bodyTooLargeError{limit: tooBig.Limit}
		}
		return fmt.Errorf("reading the request body: %v", err)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	var none struct{}
	return decodeJSON(w, r, &none)
}
