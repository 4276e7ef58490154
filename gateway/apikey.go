package gateway

import (
	"crypto/sha256"
	"net/http"
)

// rotateResponse is the answer of POST /v1/apikey/rotate.
type rotateResponse struct {
	// APIKey is the new owner key; the daemon has also written it to
	// $CROW_HOME/api-key (mode 0600).
	APIKey string `json:"api_key"`
}

// handleAPIKeyRotate replaces the owner API key: Config.RotateAPIKey writes
// the new key to disk, then the checker accepts only it, so the key that made
// this call stops working at once.
func (s *Server) handleAPIKeyRotate(w http.ResponseWriter, r *http.Request) {
	if s.cfg.RotateAPIKey == nil {
		writeError(w, http.StatusServiceUnavailable, "this gateway cannot rotate the API key (no data directory)")
		return
	}
	// The request takes no fields: an empty body or {}.
	if err := decodeEmptyJSON(w, r); err != nil {
		writeDecodeError(w, err)
		return
	}
	// Held across the write and SetHash so two concurrent rotations cannot
	// leave the checker accepting a key other than the one on disk.
	s.rotateMu.Lock()
	key, err := s.cfg.RotateAPIKey()
	if err == nil {
		s.keys.SetHash(sha256.Sum256([]byte(key)))
	}
	s.rotateMu.Unlock()
	if err != nil {
		s.writeDomainError(w, r, err)
		return
	}
	s.log.Info("owner API key rotated", "request_id", r.Context().Value(requestIDKey))
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, rotateResponse{APIKey: key})
}
