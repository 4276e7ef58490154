package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// MaxBodyBytes bounds every JSON request body the gateway accepts.
const MaxBodyBytes = 256 << 10

// errorBody is the one error shape of every REST endpoint.
type errorBody struct {
	Error string `json:"error"`
}

// writeJSON writes v with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// writeError writes {"error": msg} with the given status.
func writeError(w http.ResponseWriter, status int, format string, args ...any) {
	writeJSON(w, status, errorBody{Error: fmt.Sprintf(format, args...)})
}
