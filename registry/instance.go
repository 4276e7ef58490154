package registry

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	ma "github.com/multiformats/go-multiaddr"
)

// Roles (SPEC §7). Exactly one non-revoked home.
const (
	RoleHome      = "home"
	RoleSatellite = "satellite"
)

// Statuses shown in the merged view (SPEC §7).
const (
	StatusOnline  = "online"
	StatusSyncing = "syncing"
	StatusOffline = "offline"
	StatusUnknown = "unknown" // never probed yet
	StatusRevoked = "revoked"
	// StatusForked: the instance's feed has two signed histories (a restored
	// or cloned copy of its data); its own copy refuses local writes until
	// `crow instance reenroll`.
	StatusForked = "forked"
)

// Limits on what a peer may tell us.
const (
	maxSyncAddrs   = 16
	maxSyncAddrLen = 256
	maxNameLen     = 200
	maxIDLen       = 128
)

// Instance is the merged view of one registered instance: the synced identity
// facts of its crow_instances row plus this machine's own observations
// (status, last_seen). It is what List, Get, the REST API and
// $CROW_HOME/instances.json show. Field names are fixed by SPEC §7.
type Instance struct {
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	Role       string   `json:"role"`
	GatewayURL string   `json:"gateway_url"`
	SyncAddrs  []string `json:"sync_addrs"`
	PublicKey  string   `json:"public_key"` // hex Ed25519
	// LastSeen is the Unix time (seconds) of this machine's last successful
	// probe of the instance, 0 if never.
	LastSeen int64 `json:"last_seen"`
	// Status is one of the Status constants.
	Status    string `json:"status"`
	CreatedAt string `json:"created_at"` // RFC 3339, UTC
	// RevokedAt is set (RFC 3339) when Status is "revoked".
	RevokedAt string `json:"revoked_at,omitempty"`
}

// PublicKeyBytes decodes PublicKey.
func (in Instance) PublicKeyBytes() (ed25519.PublicKey, error) { return decodeKey(in.PublicKey) }

// Revoked reports whether the instance has been revoked.
func (in Instance) Revoked() bool { return in.Status == StatusRevoked }

// Row is the data of one synced crow_instances row (row_id = ID). It holds
// only identity facts, which change rarely, so replication carries a feed
// entry only when an instance is registered, changes address or is revoked.
// Probe observations are never written here (see Observations).
//
// Compatibility: fields are only ever added; unknown fields found in a stored
// row are preserved when the registry rewrites it. Revoked never goes back to
// false and a row is never deleted, so a revoked id cannot return. Example
// (pinned by TestSyncedRowJSON):
//
//	{"id":"sat-1","name":"laptop","role":"satellite","gateway_url":"http://100.64.0.2:3001",
//	 "sync_addrs":["/ip4/100.64.0.2/tcp/3002"],"public_key":"<64 hex>",
//	 "created_at":"2026-11-29T21:00:00Z","revoked":false}
//
// and once revoked: …,"revoked":true,"revoked_at":"2026-12-01T08:00:00Z"}.
type Row struct {
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	Role       string   `json:"role"`
	GatewayURL string   `json:"gateway_url"`
	SyncAddrs  []string `json:"sync_addrs"`
	PublicKey  string   `json:"public_key"`
	CreatedAt  string   `json:"created_at"`
	Revoked    bool     `json:"revoked"`
	RevokedAt  string   `json:"revoked_at,omitempty"`
	// Certificate is the instance's membership certificate (text form): the
	// root key's signature over its id, key, role and name. A row without a
	// valid one is never indexed.
	Certificate string `json:"certificate,omitempty"`
	// Revocation is the root-signed revocation (text form) once revoked by
	// home; a revoked row written before revocations were signed has none.
	Revocation string `json:"revocation,omitempty"`
	// HomeRecord is the root-signed home record (member.HomeRecord's text
	// form) that made this instance home (home.go); it is kept when the
	// row is rewritten.
	HomeRecord string `json:"home_record,omitempty"`
}

// Observation is what this machine saw of an instance in its health probes.
// It is local-only state and never replicated.
type Observation struct {
	Status   string `json:"status"`    // StatusOnline or StatusOffline
	LastSeen int64  `json:"last_seen"` // Unix seconds of the last success, 0 if never
}

// sameFacts reports whether two rows carry the same identity facts.
func sameFacts(a, b Row) bool {
	if a.ID != b.ID || a.Name != b.Name || a.Role != b.Role || a.GatewayURL != b.GatewayURL ||
		a.PublicKey != b.PublicKey || a.CreatedAt != b.CreatedAt || a.Revoked != b.Revoked ||
		a.RevokedAt != b.RevokedAt || a.Certificate != b.Certificate || a.Revocation != b.Revocation ||
		a.HomeRecord != b.HomeRecord ||
		len(a.SyncAddrs) != len(b.SyncAddrs) {
		return false
	}
	for i := range a.SyncAddrs {
		if a.SyncAddrs[i] != b.SyncAddrs[i] {
			return false
		}
	}
	return true
}

// decodeKey parses a hex Ed25519 public key.
func decodeKey(s string) (ed25519.PublicKey, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("%w: public key %q is not %d bytes of hex", ErrInvalidInstance, s, ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(b), nil
}

func validRole(r string) bool { return r == RoleHome || r == RoleSatellite }

// validateID checks an instance id as reported by a peer or found in a row.
func validateID(id string) error {
	if id == "" || len(id) > maxIDLen || strings.ContainsFunc(id, func(r rune) bool { return r < 0x21 || r == 0x7f }) {
		return fmt.Errorf("%w: instance id %q", ErrInvalidInstance, id)
	}
	return nil
}

// normalizeSyncAddrs checks that every address is a multiaddr and returns
// them in canonical string form (never nil).
func normalizeSyncAddrs(addrs []string) ([]string, error) {
	if len(addrs) > maxSyncAddrs {
		return nil, fmt.Errorf("%w: %d sync addresses (at most %d)", ErrInvalidInstance, len(addrs), maxSyncAddrs)
	}
	out := make([]string, 0, len(addrs))
	for _, a := range addrs {
		if len(a) > maxSyncAddrLen {
			return nil, fmt.Errorf("%w: sync address longer than %d bytes", ErrInvalidInstance, maxSyncAddrLen)
		}
		m, err := ma.NewMultiaddr(a)
		if err != nil {
			return nil, fmt.Errorf("%w: sync address %q: %w", ErrInvalidInstance, a, err)
		}
		out = append(out, m.String())
	}
	return out, nil
}

// validateRow checks a row read from the table. Beyond its shape it requires
// a membership certificate of our root key for exactly the row's id, key and
// role, so a malformed, foreign or self-made row arriving by replication is
// never admitted.
func (reg *Registry) validateRow(r Row) error {
	if err := validateID(r.ID); err != nil {
		return err
	}
	if !validRole(r.Role) {
		return fmt.Errorf("%w: instance %q has role %q", ErrInvalidInstance, r.ID, r.Role)
	}
	pub, err := decodeKey(r.PublicKey)
	if err != nil {
		return fmt.Errorf("instance %q: %w", r.ID, err)
	}
	if _, err := reg.trust.certify(r.Certificate, r.ID, pub, r.Role); err != nil {
		return err
	}
	return nil
}

// decodeRow parses row data.
func decodeRow(data json.RawMessage) (Row, error) {
	var r Row
	if err := json.Unmarshal(data, &r); err != nil {
		return Row{}, fmt.Errorf("%w: decoding row: %w", ErrInvalidInstance, err)
	}
	if r.SyncAddrs == nil {
		r.SyncAddrs = []string{}
	}
	return r, nil
}

// encodeRow marshals r on top of prev (the stored row data, possibly nil),
// keeping any fields of prev this version does not know.
func encodeRow(r Row, prev json.RawMessage) (json.RawMessage, error) {
	known, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encoding row: %w", err)
	}
	if len(prev) == 0 {
		return known, nil
	}
	var merged map[string]json.RawMessage
	if err := json.Unmarshal(prev, &merged); err != nil || merged == nil {
		return known, nil // unreadable previous data: nothing worth keeping
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(known, &fields); err != nil {
		return nil, fmt.Errorf("encoding row: %w", err)
	}
	delete(merged, "revoked_at") // omitempty: absent in fields when unset
	for k, v := range fields {
		merged[k] = v
	}
	out, err := json.Marshal(merged)
	if err != nil {
		return nil, fmt.Errorf("encoding row: %w", err)
	}
	return out, nil
}

// view merges a row with an observation into an Instance.
func view(r Row, obs Observation, haveObs, syncing bool) Instance {
	in := Instance{
		ID: r.ID, Name: r.Name, Role: r.Role, GatewayURL: r.GatewayURL,
		SyncAddrs: append([]string{}, r.SyncAddrs...), PublicKey: r.PublicKey,
		CreatedAt: r.CreatedAt, Status: StatusUnknown,
	}
	if haveObs {
		in.LastSeen = obs.LastSeen
		if obs.Status != "" {
			in.Status = obs.Status
		}
	}
	if syncing {
		in.Status = StatusSyncing
	}
	if r.Revoked {
		in.Status = StatusRevoked
		in.RevokedAt = r.RevokedAt
	}
	return in
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }
