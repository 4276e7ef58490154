package registry

import (
	"context"
	"encoding/json"
)

// Table is the synced crow_instances table (row id = instance id). The
// integrator adapts the store to it; registrytest.MemTable is an in-memory
// implementation.
//
// Implementations must be safe for concurrent use. The registry never deletes
// a row. Data passed to Put and returned by Get/List is owned by the receiver
// (neither side mutates it after the call).
type Table interface {
	// Get returns the data of the live row id, or an error wrapping
	// ErrNotFound if there is none.
	Get(ctx context.Context, id string) (json.RawMessage, error)
	// List returns the data of every live row, in any order.
	List(ctx context.Context) ([]json.RawMessage, error)
	// Put durably writes the row (a local write that replicates through this
	// instance's feed). With insert it must create the row and return an
	// error wrapping ErrExists if it is already there; without, it must
	// update an existing row and return an error wrapping ErrNotFound if it
	// is absent. It returns only once the write is durable.
	Put(ctx context.Context, id string, insert bool, data json.RawMessage) error
}

// Observations holds this machine's probe results. It is local-only: it must
// never replicate. registrytest.MemObservations keeps them in memory; a store
// adapter can keep them under a local key prefix so last_seen survives a
// restart. Implementations must be safe for concurrent use.
type Observations interface {
	// Load returns every stored observation by instance id.
	Load(ctx context.Context) (map[string]Observation, error)
	// Store saves the given observations (one probe round), replacing
	// earlier ones for the same ids. It need not fsync.
	Store(ctx context.Context, obs map[string]Observation) error
}
