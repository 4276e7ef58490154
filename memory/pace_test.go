package memory

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/crow-sync/crow/clock"
	"github.com/crow-sync/crow/search"
	"github.com/crow-sync/crow/store/storetest"
)

// While a search waits for the index, a write waits while the index trails the
// change queue by more than maxIndexLag changes: at most maxIndexLagWait (then
// it writes anyway), and only until the index comes within maxIndexLag. With no
// search waiting, writes are not paced.
func TestWritesPacedToIndex(t *testing.T) {
	env := storetest.Start(t, t.TempDir())
	ix, err := search.Open(filepath.Join(t.TempDir(), "index"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	fake := clock.NewFake(time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC))
	s := NewService(env.DB, env.Writer, ix, Options{Clock: fake})
	ctx := context.Background()
	// No indexer yet: the index stays at 0 while 1,100 changes are queued.
	for _, n := range []int{MaxBulk, 1100 - MaxBulk} {
		ins := make([]CreateInput, n)
		for i := range ins {
			ins[i] = CreateInput{Content: "paced", Project: "p"}
		}
		if _, err := s.AddMany(ctx, ins); err != nil {
			t.Fatal(err)
		}
	}
	add := func() <-chan error {
		done := make(chan error, 1)
		go func() {
			_, err := s.Add(ctx, CreateInput{Content: "paced", Project: "p"})
			done <- err
		}()
		return done
	}
	head := func() uint64 { h, _ := env.DB.QueueHead(); return h }

	// No search waits: the write is not paced.
	before := head()
	select {
	case err := <-add():
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a write with no search waiting waited")
	}
	// A search waits (its timeout is on the fake clock).
	searched := make(chan error, 1)
	go func() {
		_, err := s.Search(ctx, SearchOptions{Query: "paced"})
		searched <- err
	}()
	for !ix.Awaited() {
		time.Sleep(time.Millisecond)
	}
	// Nothing indexes: the write waits for maxIndexLagWait on the clock, then writes.
	before = head()
	done := add()
	fake.BlockUntil(2) // the search's timeout and the write's
	select {
	case err := <-done:
		t.Fatalf("the write did not wait for the index 1,100 changes behind (%v)", err)
	case <-time.After(50 * time.Millisecond):
	}
	if head() != before {
		t.Fatal("the waiting write was committed")
	}
	fake.Advance(maxIndexLagWait)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if head() != before+1 {
		t.Fatalf("queue head %d after the write, want %d", head(), before+1)
	}

	// The index catches up: a write waits only for that, not for the clock.
	ictx, cancel := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- search.NewIndexer(env.DB, ix).Serve(ictx) }()
	defer func() { cancel(); <-stopped }()
	select {
	case err := <-add():
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the write still waits with the index catching up")
	}
	if h, seq := head(), ix.Seq(); seq+maxIndexLag+1 < h {
		t.Fatalf("index at %d, queue at %d: the write did not wait for it to come within %d", seq, h, maxIndexLag)
	}
	if err := <-searched; err != nil {
		t.Fatal(err)
	}
}
