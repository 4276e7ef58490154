package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"testing"
)

// fakeJournal writes entries into the txn under x/j/<index BE>, like the feed would, and
// advances its in-memory head only through the commit func.
type fakeJournal struct {
	mu   sync.Mutex // guards next and fail
	next uint64
	fail error
}

func (j *fakeJournal) Stage(txn *Txn, entries [][]byte) (func(), error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.fail != nil {
		return nil, j.fail
	}
	for i, e := range entries {
		k := binary.BigEndian.AppendUint64([]byte("x/j/"), j.next+uint64(i))
		if err := txn.Set(k, e); err != nil {
			return nil, err
		}
	}
	n := uint64(len(entries))
	return func() {
		j.mu.Lock()
		defer j.mu.Unlock()
		j.next += n
	}, nil
}

func (j *fakeJournal) head() uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.next
}

func (j *fakeJournal) setFail(err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.fail = err
}

// entries reads the journal entries stored in db.
func journalEntries(t *testing.T, db *DB) [][]byte {
	t.Helper()
	var out [][]byte
	err := db.View(func(txn *Txn) error {
		return txn.Iterate([]byte("x/j/"), nil, func(_, v []byte) error {
			out = append(out, bytes.Clone(v))
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func openTest(t *testing.T, dir string) *DB {
	t.Helper()
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// startWriter runs a Writer on db until the test ends.
func startWriter(t *testing.T, db *DB, j Journal) *Writer {
	t.Helper()
	w, err := NewWriter(db, WriterOptions{InstanceID: "inst-a", Journal: j})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- w.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("serve: %v", err)
		}
	})
	return w
}
