// Package registrytest provides in-memory implementations of the registry's
// storage interfaces, a fake clock and an honest /health handler for tests.
package registrytest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/crow-sync/crow/registry"
)

// MemTable is an in-memory registry.Table. The zero value is ready to use.
type MemTable struct {
	mu   sync.Mutex                 // guards rows and puts
	rows map[string]json.RawMessage // by id
	puts int
}

var _ registry.Table = (*MemTable)(nil)

// Get implements registry.Table.
func (t *MemTable) Get(_ context.Context, id string) (json.RawMessage, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	d, ok := t.rows[id]
	if !ok {
		return nil, fmt.Errorf("memtable: %q: %w", id, registry.ErrNotFound)
	}
	return slices.Clone(d), nil
}

// List implements registry.Table.
func (t *MemTable) List(context.Context) ([]json.RawMessage, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]json.RawMessage, 0, len(t.rows))
	for _, id := range slices.Sorted(maps.Keys(t.rows)) {
		out = append(out, slices.Clone(t.rows[id]))
	}
	return out, nil
}

// Put implements registry.Table.
func (t *MemTable) Put(_ context.Context, id string, insert bool, data json.RawMessage) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, exists := t.rows[id]
	switch {
	case insert && exists:
		return fmt.Errorf("memtable: %q: %w", id, registry.ErrExists)
	case !insert && !exists:
		return fmt.Errorf("memtable: %q: %w", id, registry.ErrNotFound)
	}
	t.setLocked(id, data)
	t.puts++
	return nil
}

// Set stores a row directly, as replication would (it does not count as a
// Put).
func (t *MemTable) Set(id string, data json.RawMessage) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.setLocked(id, data)
}

func (t *MemTable) setLocked(id string, data json.RawMessage) {
	if t.rows == nil {
		t.rows = map[string]json.RawMessage{}
	}
	t.rows[id] = slices.Clone(data)
}

// Puts returns how many Puts succeeded (each would be one feed entry).
func (t *MemTable) Puts() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.puts
}

// MemObservations is an in-memory registry.Observations. The zero value is
// ready to use.
type MemObservations struct {
	mu  sync.Mutex // guards obs
	obs map[string]registry.Observation
}

var _ registry.Observations = (*MemObservations)(nil)

// Load implements registry.Observations.
func (o *MemObservations) Load(context.Context) (map[string]registry.Observation, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return maps.Clone(o.obs), nil
}

// Store implements registry.Observations.
func (o *MemObservations) Store(_ context.Context, obs map[string]registry.Observation) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.obs == nil {
		o.obs = map[string]registry.Observation{}
	}
	maps.Copy(o.obs, obs)
	return nil
}

// MemInvites is an in-memory registry.InviteStore. The zero value is ready
// to use.
type MemInvites struct {
	mu   sync.Mutex
	recs map[string]registry.InviteRecord
}

var _ registry.InviteStore = (*MemInvites)(nil)

// Add implements registry.InviteStore.
func (m *MemInvites) Add(_ context.Context, rec registry.InviteRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.recs == nil {
		m.recs = map[string]registry.InviteRecord{}
	}
	m.recs[rec.ID] = rec
	return nil
}

// Get implements registry.InviteStore.
func (m *MemInvites) Get(_ context.Context, id string) (registry.InviteRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, ok := m.recs[id]
	if !ok {
		return registry.InviteRecord{}, registry.ErrInviteUnknown
	}
	return rec, nil
}

// Claim implements registry.InviteStore.
func (m *MemInvites) Claim(_ context.Context, id string, now time.Time, by string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, ok := m.recs[id]
	if !ok {
		return registry.ErrInviteUnknown
	}
	if err := registry.CheckClaim(rec, now); err != nil {
		return err
	}
	rec.UsedAt, rec.UsedBy = now.UTC().Truncate(time.Second), by
	m.recs[id] = rec
	return nil
}

// Delete removes row id (as a replicated tombstone would make it vanish).
func (t *MemTable) Delete(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.rows, id)
}
