package gateway

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
	"sync"
)

// KeyChecker checks the owner API key. The key itself is never held: only its
// SHA-256, compared in constant time. It is safe for concurrent use.
type KeyChecker struct {
	mu   sync.RWMutex
	hash [32]byte // guarded by mu
}

// NewKeyChecker returns a checker for the key whose SHA-256 is hash.
func NewKeyChecker(hash [32]byte) *KeyChecker { return &KeyChecker{hash: hash} }

// SetHash replaces the accepted key's hash (after a rotation).
func (k *KeyChecker) SetHash(hash [32]byte) {
	k.mu.Lock()
	k.hash = hash
	k.mu.Unlock()
}

// Check reports whether key is the owner key.
func (k *KeyChecker) Check(key string) bool {
	if key == "" {
		return false
	}
	got := sha256.Sum256([]byte(key))
	k.mu.RLock()
	want := k.hash
	k.mu.RUnlock()
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1
}

// presentedKey returns the key a request carries as `Authorization: Bearer`
// or `x-api-key`.
func presentedKey(r *http.Request) string {
	if h := r.Header.Get("Authorization"); h != "" {
		if scheme, rest, ok := strings.Cut(h, " "); ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(rest)
		}
		return ""
	}
	return r.Header.Get("x-api-key")
}

// requireOwner wraps h so only requests carrying the owner key reach it.
func (s *Server) requireOwner(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.keys.Check(presentedKey(r)) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="crow"`)
			if presentedKey(r) == "" {
				writeError(w, http.StatusUnauthorized, "missing API key: send Authorization: Bearer <key> (the key is in $CROW_HOME/api-key)")
			} else {
				writeError(w, http.StatusUnauthorized, "wrong API key")
			}
			return
		}
		h.ServeHTTP(w, r)
	})
}
