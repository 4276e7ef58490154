package search

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crow-sync/crow/clock"
	"github.com/crow-sync/crow/store"
	"github.com/crow-sync/crow/store/storetest"
)

// TestIndexerPausesOnFullDisk: while SpaceCheck fails the indexer writes no bleve batch
// (the index stays at its position), WaitFor does not block on what it cannot index, and
// once the check passes the index catches up from the change queue with every change.
func TestIndexerPausesOnFullDisk(t *testing.T) {
	env := storetest.Start(t, t.TempDir())
	ix, err := Open(filepath.Join(t.TempDir(), "index"), nil)
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var full atomic.Bool
	var checks atomic.Int64
	x := NewIndexer(env.DB, ix)
	x.Linger, x.Clock = 0, clk
	x.SpaceCheck = func() error {
		checks.Add(1)
		if full.Load() {
			return fmt.Errorf("%w: test", store.ErrDiskFull)
		}
		return nil
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- x.Serve(ctx) }()
	defer func() { stop(); <-served; ix.Close() }()

	ms := corpus()
	put(t, env.Writer, store.OpInsert, ms[0])
	caughtUp(t, env.DB, ix)
	at := ix.Seq()

	full.Store(true)
	var last uint64
	for _, m := range ms[1:] {
		last = put(t, env.Writer, store.OpInsert, m)
	}
	// The indexer met the full disk and waits its retry pause on the fake clock.
	clk.BlockUntil(1)
	for range 3 {
		n := checks.Load()
		clk.Advance(retryPause)
		deadline := time.Now().Add(30 * time.Second)
		for checks.Load() == n && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		clk.BlockUntil(1)
	}
	if got := ix.Seq(); got != at {
		t.Fatalf("index moved from %d to %d while the disk was full", at, got)
	}
	if got := ids(t, ix, Query{Limit: 10}); len(got) != 1 {
		t.Fatalf("index holds %v while paused, want the first memory only", got)
	}
	wctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := ix.WaitFor(wctx, last); err != nil {
		t.Fatalf("WaitFor blocked on a paused index: %v", err)
	}

	full.Store(false)
	clk.Advance(retryPause)
	deadline := time.Now().Add(30 * time.Second)
	for ix.Seq() < last && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := ids(t, ix, Query{Limit: 10}); len(got) != len(ms) || ix.Seq() != last {
		t.Fatalf("after space returned the index holds %v at %d, want %d memories at %d", got, ix.Seq(), len(ms), last)
	}
	if ix.noSpaceNow() {
		t.Error("index still marked paused")
	}
}
