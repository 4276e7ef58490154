package registrytest

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/crow-sync/crow/identity"
	"github.com/crow-sync/crow/identity/member"
	"github.com/crow-sync/crow/registry"
)

// HealthServer is an honest /health handler for a certified instance: it
// presents its membership certificate and signs challenges with its key, as
// the gateway does. Tamper lets a test corrupt the answer. Fields may be
// changed between requests through Update.
type HealthServer struct {
	mu       sync.Mutex // guards the fields below
	key      ed25519.PrivateKey
	doc      registry.HealthDoc
	down     bool
	tamper   func(doc *registry.HealthDoc)
	requests int
}

// NewHealthServer returns a handler for instance id of seed: its key is the
// one the seed derives for id and its certificate is issued by the seed's
// root key for role and name (at a fixed time, so it is deterministic).
func NewHealthServer(seed identity.Seed, id, name, role string, syncAddrs ...string) *HealthServer {
	key := seed.InstanceKey(id)
	return NewCertifiedHealthServer(key, Certify(seed, id, key.Public().(ed25519.PublicKey), role, name), syncAddrs...)
}

// NewCertifiedHealthServer returns a handler for the instance certified by
// cert, whose private key is key (cert need not be valid: tests use it to
// present forged ones).
func NewCertifiedHealthServer(key ed25519.PrivateKey, cert member.Certificate, syncAddrs ...string) *HealthServer {
	if syncAddrs == nil {
		syncAddrs = []string{}
	}
	return &HealthServer{
		key: key,
		doc: registry.HealthDoc{
			Status: "ok", InstanceID: cert.InstanceID, Name: cert.Name, Role: string(cert.Role), CrowID: cert.CrowID,
			PublicKey: hex.EncodeToString(key.Public().(ed25519.PublicKey)), Version: "test", SyncAddrs: syncAddrs,
			Certificate: cert.String(),
		},
	}
}

// CertTime is the issued_at of the certificates Certify makes.
var CertTime = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// Certify issues, with seed's root key, a certificate for instance id with
// key pub, role and name (issued at CertTime). It panics on invalid input.
func Certify(seed identity.Seed, id string, pub ed25519.PublicKey, role, name string) member.Certificate {
	c, err := member.Issue(seed.RootKey(), member.Fields{
		CrowID: seed.CrowID(), InstanceID: id, PublicKey: pub, Role: member.Role(role), Name: name, IssuedAt: CertTime,
	})
	if err != nil {
		panic(err)
	}
	return c
}

// CertifiedRow is the crow_instances row data of instance id of seed with
// role: the key the seed derives for id and a certificate of seed's root
// key (name "name-"+id), as replication would deliver it. It panics on
// invalid input.
func CertifiedRow(seed identity.Seed, id, role string) json.RawMessage {
	pub := seed.InstancePublicKey(id)
	data, err := json.Marshal(registry.Row{
		ID: id, Name: "name-" + id, Role: role,
		GatewayURL: "http://127.0.0.1:3001", SyncAddrs: []string{"/ip4/127.0.0.1/tcp/3002"},
		PublicKey: hex.EncodeToString(pub), CreatedAt: CertTime.Format(time.RFC3339),
		Certificate: Certify(seed, id, pub, role, "name-"+id).String(),
	})
	if err != nil {
		panic(err)
	}
	return data
}

// SetKey changes the key challenges are signed with (not the presented one).
func (h *HealthServer) SetKey(key ed25519.PrivateKey) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.key = key
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
		doc.Signature = hex.EncodeToString(identity.SignChallenge(h.key, raw, doc.InstanceID))
	}
	if h.tamper != nil {
		h.tamper(&doc)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(doc)
}

// SeedConfig is a registry.Config for instance id of seed, with role and
// name, over fresh in-memory tables: the shape of a home (it holds the root
// key) for tests outside the registry.
func SeedConfig(seed identity.Seed, id, role, name string) registry.Config {
	key := seed.InstanceKey(id)
	return registry.Config{
		Trust: registry.TrustOfSeed(seed), RootKey: seed.RootKey(),
		SelfID: id, SelfKey: key, SelfCert: Certify(seed, id, key.Public().(ed25519.PublicKey), role, name),
		Table: &MemTable{}, Revocations: &MemTable{}, Invites: &MemInvites{}, Observations: &MemObservations{},
	}
}
