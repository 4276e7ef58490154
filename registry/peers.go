package registry

import (
	"crypto/ed25519"
	"fmt"
)

// Endpoint is how another instance is reached: what replication and
// federation need of a peer.
type Endpoint struct {
	ID, Name   string
	Role       string
	Key        ed25519.PublicKey // its instance key; the sync peer id derives from it
	GatewayURL string
	SyncAddrs  []string
	// Online is false only once a probe of the instance failed: one never
	// probed yet ("unknown") counts as online, so calls to it are made and
	// bounded by their own deadlines rather than skipped.
	Online bool
}

// Endpoints is the peer filter of replication and federation: every
// registered, non-revoked instance but this one, in List order. An instance
// whose key does not decode (it cannot be dialled or trusted) is left out
// and logged.
func (r *Registry) Endpoints() []Endpoint {
	peers := r.Peers()
	out := make([]Endpoint, 0, len(peers))
	for _, in := range peers {
		key, err := in.PublicKeyBytes()
		if err != nil {
			r.log.Warn("peer with unusable key", "instance", in.ID, "err", err)
			continue
		}
		out = append(out, Endpoint{
			ID: in.ID, Name: in.Name, Role: in.Role, Key: key, GatewayURL: in.GatewayURL,
			SyncAddrs: in.SyncAddrs, Online: in.Status != StatusOffline,
		})
	}
	return out
}

// AllowsFeed is the revoked-feed rule of the sync layer: the feed whose
// author key is key takes new ranges unless that key is revoked, whoever
// relays it. A key the registry does not know is stored (its entries verify
// against the key, and its certificate may simply not have replicated here
// yet) but not applied: the apply loop parks feeds whose KeyStatus is not
// KeyCertified.
func (r *Registry) AllowsFeed(key []byte) bool {
	st, _ := r.KeyStatus(key)
	return st != KeyRevoked
}

// PeerKey returns the key a federation token issued by instance id must
// verify with: the certified key of id, if id is registered, certified and
// not revoked. Otherwise it returns an error wrapping ErrNotFound or
// ErrRevoked.
func (r *Registry) PeerKey(id string) (ed25519.PublicKey, error) {
	snap := r.snap.Load()
	row, ok := snap.rows[id]
	if !ok {
		return nil, fmt.Errorf("instance %s: %w", id, ErrNotFound)
	}
	if row.Revoked || snap.keyRevoked(row.PublicKey) {
		return nil, fmt.Errorf("instance %s: %w", id, ErrRevoked)
	}
	return decodeKey(row.PublicKey)
}

// DescribeKey names the instance whose key is key for operator messages,
// as "name (id)"; ok is false when no registered instance has that key.
func (r *Registry) DescribeKey(key []byte) (name string, ok bool) {
	in, err := r.LookupKey(key)
	if err != nil {
		return "", false
	}
	return in.Name + " (" + in.ID + ")", true
}
