package gateway

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
	"sync"

	"github.com/crow-sync/crow/federation"
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

// peerKey marks a request context as a federated call from a peer instance.
type peerKey struct{}

// peerOf returns the peer instance id of a federated call (see
// requireOwnerOrPeer); ok is false for the owner.
func peerOf(ctx context.Context) (string, bool) {
	id, ok := ctx.Value(peerKey{}).(string)
	return id, ok
}

// requireOwnerOrPeer admits the owner key, or a federation token of a
// registered, non-revoked peer (Config.VerifyPeerToken); the peer's id is
// put in the request context, so the MCP tool handler can apply the
// allow-list. A token that fails is refused with the reason, and logged:
// it is either a misconfigured peer or an attack.
func (s *Server) requireOwnerOrPeer(h http.Handler) http.Handler {
	owner := s.requireOwner(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := presentedKey(r)
		if s.cfg.VerifyPeerToken == nil || !strings.HasPrefix(key, federation.TokenPrefix) {
			owner.ServeHTTP(w, r)
			return
		}
		issuer, err := s.cfg.VerifyPeerToken(key)
		if err != nil {
			s.metrics.peers.WithLabelValues("refused").Inc()
			if s.cfg.ExpectedTokenRefusal != nil && s.cfg.ExpectedTokenRefusal(key, err) {
				s.log.Info("federation token refused: its issuer is not registered here yet", "remote", r.RemoteAddr, "err", err)
			} else {
				s.log.Warn("security: federation token refused", "remote", r.RemoteAddr, "err", err)
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="crow", error="invalid_token"`)
			writeError(w, http.StatusUnauthorized, "federation token refused: %s", err.Error())
			return
		}
		s.metrics.peers.WithLabelValues("admitted").Inc()
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), peerKey{}, issuer)))
	})
}
