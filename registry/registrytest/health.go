package registrytest

import (
	"encoding/hex"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/crow-sync/crow/identity"
	"github.com/crow-sync/crow/registry"
)

// HealthServer is an honest /health handler for an instance of a seed: it
// signs challenges with the key the seed derives for ID, as the gateway
// does. Tamper lets a test corrupt the answer. Fields may be changed between
// requests through Update.
type HealthServer struct {
	mu        sync.Mutex // guards the fields below
	seed      identity.Seed
	doc       registry.HealthDoc
	down      bool
	tamper    func(doc *registry.HealthDoc)
	requests  int
	signingID string // id whose key signs (normally doc.InstanceID)
}

// NewHealthServer returns a handler for instance id of seed.
func NewHealthServer(seed identity.Seed, id, name, role string, syncAddrs ...string) *HealthServer {
	if syncAddrs == nil {
		syncAddrs = []string{}
	}
	return &HealthServer{
		seed: seed, signingID: id,
		doc: registry.HealthDoc{
			Status: "ok", InstanceID: id, Name: name, Role: role, CrowID: seed.CrowID(),
			PublicKey: hex.EncodeToString(seed.InstancePublicKey(id)), Version: "test", SyncAddrs: syncAddrs,
		},
	}
}

// Update changes the served document (before signing and tampering).
func (h *HealthServer) Update(fn func(doc *registry.HealthDoc)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	fn(&h.doc)
}

// Tamper sets a function applied to every answer after it is signed.
func (h *HealthServer) Tamper(fn func(doc *registry.HealthDoc)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tamper = fn
}

// SetDown makes the handler answer 503 (down) or normally (up).
func (h *HealthServer) SetDown(down bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.down = down
}

// Requests returns how many requests were served.
func (h *HealthServer) Requests() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.requests
}

// ServeHTTP answers /health like the gateway (SPEC §8).
func (h *HealthServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.requests++
	if r.URL.Path != "/health" {
		http.NotFound(w, r)
		return
	}
	if h.down {
		http.Error(w, `{"error":"down"}`, http.StatusServiceUnavailable)
		return
	}
	doc := h.doc
	doc.SyncAddrs = append([]string{}, h.doc.SyncAddrs...)
	if c := r.URL.Query().Get("challenge"); c != "" {
		raw, err := hex.DecodeString(c)
		if err != nil || len(raw) < 16 || len(raw) > 64 {
			http.Error(w, `{"error":"bad challenge"}`, http.StatusBadRequest)
			return
		}
		doc.Challenge = c
		doc.Signature = hex.EncodeToString(identity.SignChallenge(h.seed.InstanceKey(h.signingID), raw, doc.InstanceID))
	}
	if h.tamper != nil {
		h.tamper(&doc)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(doc)
}
