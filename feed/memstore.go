package feed

import (
	"fmt"
	"sort"
	"sync"
)

// MemStorage is an in-memory Storage for tests and benchmarks. It keeps the
// record slices it is given (no copies).
type MemStorage struct {
	mu    sync.RWMutex
	feeds map[PublicKey]*memFeed // guarded by mu
}

type memFeed struct {
	state    State
	hasState bool
	records  [][]byte
	nodes    map[uint64]Node
	fork     []byte
}

// NewMemStorage returns an empty in-memory storage.
func NewMemStorage() *MemStorage { return &MemStorage{feeds: make(map[PublicKey]*memFeed)} }

// View implements Storage. Writes wait until fn returns.
func (m *MemStorage) View(fn func(Reader) error) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return fn(memReader{m})
}

// Write implements Storage; the batch is applied atomically.
func (m *MemStorage) Write(b *Batch) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	f := m.feeds[b.Key]
	for _, i := range b.Clear {
		if f == nil || i >= uint64(len(f.records)) || f.records[i] == nil {
			return fmt.Errorf("clearing record %d of %s: %w", i, b.Key, ErrCorrupt)
		}
	}
	if f == nil {
		f = &memFeed{nodes: make(map[uint64]Node)}
		m.feeds[b.Key] = f
	}
	if len(b.Records) > 0 {
		if b.Start > uint64(len(f.records)) {
			grown := make([][]byte, b.Start)
			copy(grown, f.records)
			f.records = grown
		}
		f.records = append(f.records[:b.Start], b.Records...)
	}
	for _, n := range b.Nodes {
		f.nodes[n.Index] = n
	}
	for _, i := range b.Clear {
		if rec := f.records[i]; len(rec) > recordHeader(i) {
			clear(rec[recordHeader(i):]) // the storage owns it
			f.records[i] = append([]byte(nil), rec[:recordHeader(i)]...)
		}
	}
	if b.Fork != nil {
		f.fork = b.Fork
	}
	if b.State != nil {
		f.state, f.hasState = *b.State, true
	}
	return nil
}

// Delete implements Storage.
func (m *MemStorage) Delete(key PublicKey) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.feeds, key)
	return nil
}

type memReader struct{ m *MemStorage }

func (r memReader) State(key PublicKey) (State, bool, error) {
	f := r.m.feeds[key]
	if f == nil || !f.hasState {
		return State{}, false, nil
	}
	return f.state, true, nil
}

func (r memReader) Record(key PublicKey, i uint64) ([]byte, error) {
	f := r.m.feeds[key]
	if f == nil || i >= uint64(len(f.records)) || f.records[i] == nil {
		return nil, fmt.Errorf("record %d of %s: %w", i, key, ErrCorrupt)
	}
	return f.records[i], nil
}

func (r memReader) Records(key PublicKey, start, end uint64, fn func(uint64, []byte) error) error {
	for i := start; i < end; i++ {
		rec, err := r.Record(key, i)
		if err != nil {
			return err
		}
		if err := fn(i, rec); err != nil {
			return err
		}
	}
	return nil
}

func (r memReader) Node(key PublicKey, index uint64) (Node, bool, error) {
	f := r.m.feeds[key]
	if f == nil {
		return Node{}, false, nil
	}
	n, ok := f.nodes[index]
	return n, ok, nil
}

func (r memReader) Fork(key PublicKey) ([]byte, bool, error) {
	f := r.m.feeds[key]
	if f == nil || f.fork == nil {
		return nil, false, nil
	}
	return f.fork, true, nil
}

func (r memReader) Feeds(fn func(PublicKey, State) error) error {
	keys := make([]PublicKey, 0, len(r.m.feeds))
	for k, f := range r.m.feeds {
		if f.hasState {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return string(keys[i][:]) < string(keys[j][:]) })
	for _, k := range keys {
		if err := fn(k, r.m.feeds[k].state); err != nil {
			return err
		}
	}
	return nil
}
