// Package storetest provides test helpers for packages built on store: a fake Journal that
// does work comparable to the feed's, and a one-call DB + Writer set-up.
package storetest

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"sync"
	"testing"

	"github.com/crow-sync/crow/store"
)

// Journal is a fake store.Journal. For each entry it computes a Merkle-style leaf hash
// (SHA-256 over 0x00 ‖ len ‖ data) and writes the entry and its hash into the transaction
// under x/journal/; once per batch it signs (Ed25519) the batch's last hash and length and
// writes that head. So it costs about what the feed costs: hashing, two keys per entry and one
// signature per batch. It is safe for concurrent use.
type Journal struct {
	key ed25519.PrivateKey

	mu   sync.Mutex // guards next and fail
	next uint64
	fail error
}

// NewJournal returns an empty fake journal.
func NewJournal() *Journal {
	return &Journal{key: ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))}
}

// Stage implements store.Journal.
func (j *Journal) Stage(txn *store.Txn, entries [][]byte) (func(), error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.fail != nil {
		return nil, j.fail
	}
	var last [32]byte
	for i, e := range entries {
		idx := j.next + uint64(i)
		h := sha256.New()
		h.Write([]byte{0})
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(e))))
		h.Write(e)
		copy(last[:], h.Sum(nil))
		if err := txn.Set(binary.BigEndian.AppendUint64([]byte("x/journal/e/"), idx), e); err != nil {
			return nil, err
		}
		if err := txn.Set(binary.BigEndian.AppendUint64([]byte("x/journal/h/"), idx), last[:]); err != nil {
			return nil, err
		}
	}
	n := uint64(len(entries))
	head := binary.BigEndian.AppendUint64(append([]byte("crow-feed-v1"), last[:]...), j.next+n)
	if err := txn.Set([]byte("x/journal/head"), ed25519.Sign(j.key, head)); err != nil {
		return nil, err
	}
	return func() {
		j.mu.Lock()
		defer j.mu.Unlock()
		j.next += n
	}, nil
}

// Len returns the number of committed entries.
func (j *Journal) Len() uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.next
}

// SetFail makes every following Stage fail with err (nil to stop failing).
func (j *Journal) SetFail(err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.fail = err
}

// Env is an open DB with a running Writer.
type Env struct {
	DB      *store.DB
	Writer  *store.Writer
	Journal *Journal
	stop    func()
}

// Start opens a DB in dir and runs a Writer (instance id "inst-test") on it. Close (also
// registered with tb.Cleanup) stops the writer and closes the DB.
func Start(tb testing.TB, dir string) *Env {
	tb.Helper()
	return StartOptions(tb, dir, store.Options{})
}

// StartOptions is Start with opts for store.Open (a fake Statfs, a clock).
func StartOptions(tb testing.TB, dir string, opts store.Options) *Env {
	tb.Helper()
	db, err := store.Open(dir, opts)
	if err != nil {
		tb.Fatal(err)
	}
	j := NewJournal()
	w, err := store.NewWriter(db, store.WriterOptions{InstanceID: "inst-test", Journal: j})
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := w.Serve(ctx); err != nil {
			tb.Errorf("writer: %v", err)
		}
	}()
	e := &Env{DB: db, Writer: w, Journal: j}
	var once sync.Once
	e.stop = func() {
		once.Do(func() {
			cancel()
			<-done
			if err := db.Close(); err != nil {
				tb.Errorf("closing db: %v", err)
			}
		})
	}
	tb.Cleanup(e.stop)
	return e
}

// Close stops the writer and closes the DB. It is idempotent.
func (e *Env) Close() { e.stop() }
