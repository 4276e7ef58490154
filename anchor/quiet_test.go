package anchor

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/crow-sync/crow/clock"
	"github.com/crow-sync/crow/store"
	"github.com/crow-sync/crow/store/storetest"
)

// numbered writes memories m<from>… with numbered versions #from… (n of them).
func (h *workerHome) numbered(from, n int) {
	h.t.Helper()
	for num := from; num < from+n; num++ {
		id := fmt.Sprintf("m%d", num)
		h.put(store.TableMemories, id, map[string]any{"content": "text of " + id, "category": "fact", "importance": 5})
		eh := HashHex(hashOf(fmt.Sprint("event ", num)))
		h.put(store.TableMemoryVersions, fmt.Sprintf("%020d", num), map[string]any{"number": num, "memory_id": id,
			"content": "text of " + id, "content_hash": "h" + id, "category": "fact", "importance": 5, "event_hash": eh})
		h.put(store.TableMemoryNumbers, id, map[string]any{"number": num, "event_hash": eh})
	}
}

// TestWorkerDrainsABacklogWithoutWaitingForTheInterval: a round that stops
// at MaxMemoriesPerRound is followed by the next one at once, not an
// interval later, until the backlog is anchored (each transaction still
// paced by the Quiet, idle here).
func TestWorkerDrainsABacklogWithoutWaitingForTheInterval(t *testing.T) {
	env := storetest.Start(t, t.TempDir())
	seed := goldenSeed()
	ch := openEmbedded(t, t.TempDir(), seed.AnchorKey())
	clk := clock.NewFake(time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC))
	h := newWorkerHome(t, env)
	h.numbered(1, 7)
	w := NewWorker(WorkerConfig{DB: env.DB, Writer: env.Writer, Chain: ch, Seed: seed, Clock: clk, Interval: time.Hour,
		MaxMemoriesPerRound: 3, Quiet: clock.NewQuiet(clk, 250*time.Millisecond, 10*time.Second)})
	ctx, cancel := context.WithCancel(testCtx(t))
	done := make(chan error, 1)
	go func() { done <- w.Serve(ctx) }()
	deadline := time.Now().Add(time.Minute)
	for w.Stats().Memories < 7 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := w.Stats().Memories; got != 7 {
		t.Fatalf("%d of 7 memories anchored with the clock stopped (rounds of 3, an hour apart)", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestWorkerSendsInPausesOfForegroundWork runs the worker on a real store and
// the embedded chain with a Quiet on a fake clock: while foreground work keeps
// touching the Quiet, nothing is sent; the memories go out once it pauses for
// the Quiet's pause, and under constant touching once the bound is reached.
func TestWorkerSendsInPausesOfForegroundWork(t *testing.T) {
	env := storetest.Start(t, t.TempDir())
	seed := goldenSeed()
	ch := openEmbedded(t, t.TempDir(), seed.AnchorKey())
	ctx := testCtx(t)
	h := newWorkerHome(t, env)
	clk := clock.NewFake(time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC))
	const pause, bound = 250 * time.Millisecond, 10 * time.Second
	q := clock.NewQuiet(clk, pause, bound)
	w := NewWorker(WorkerConfig{DB: env.DB, Writer: env.Writer, Chain: ch, Seed: seed, Clock: clk, Interval: time.Hour, Quiet: q})

	next := 1
	write := func(n int) {
		t.Helper()
		h.numbered(next, n)
		next += n
	}
	round := func() <-chan error {
		done := make(chan error, 1)
		go func() { done <- w.Round(ctx) }()
		return done
	}
	pending := func(done <-chan error, what string) {
		t.Helper()
		select {
		case err := <-done:
			t.Fatalf("%s: the round ended (%v) with %d memories anchored", what, err, w.Stats().Memories)
		case <-time.After(100 * time.Millisecond):
		}
		if got := w.Stats().Memories; got != 0 {
			t.Fatalf("%s: %d memories anchored", what, got)
		}
	}
	finished := func(done <-chan error, want uint64) {
		t.Helper()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(time.Minute):
			t.Fatal("the round did not end")
		}
		if got := w.Stats().Memories; got != want {
			t.Fatalf("%d memories anchored, want %d", got, want)
		}
	}

	// Foreground work 100 ms ago, more 200 ms into the wait: the send waits
	// for 250 ms without any.
	write(3)
	q.Touch()
	clk.Advance(100 * time.Millisecond)
	done := round()
	clk.BlockUntil(1)
	pending(done, "150 ms after a write")
	clk.Advance(100 * time.Millisecond)
	q.Touch()
	clk.Advance(150 * time.Millisecond)
	pending(done, "150 ms after the second write")
	clk.BlockUntil(1)
	clk.Advance(100 * time.Millisecond)
	finished(done, 3)
	if got, want := q.Waited(), 350*time.Millisecond; got != want {
		t.Fatalf("Waited = %v, want %v", got, want)
	}

	// Constant foreground work (a touch every 100 ms): the send goes out at
	// the bound, not later.
	write(2)
	q.Touch()
	done = round()
	start := clk.Now()
	for clk.Since(start) < bound-100*time.Millisecond {
		clk.BlockUntil(1)
		clk.Advance(100 * time.Millisecond)
		q.Touch()
	}
	if got := w.Stats().Memories; got != 3 {
		t.Fatalf("%d memories anchored before the bound, want the first 3", got)
	}
	clk.BlockUntil(1)
	clk.Advance(100 * time.Millisecond)
	finished(done, 5)

	// Quiet for longer than the pause already: no wait at all.
	write(1)
	clk.Advance(time.Second)
	before := q.Waited()
	finished(round(), 6)
	if q.Waited() != before {
		t.Fatalf("the worker waited %v after a long pause", q.Waited()-before)
	}

	// A memory forgotten (its data key shredded) while its sealed batch
	// waits is not sent: the batch waits for the next round, which anchors
	// the others without it.
	write(3) // #7, #8, #9
	q.Touch()
	done = round()
	clk.BlockUntil(1) // sealed, waiting
	if err := ShredMemoryKey(env.DB, "m8"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(pause)
	finished(done, 6)
	finished(round(), 8)
	if _, ok, err := ReadRecord(env.DB, VersionRecordID(8)); err != nil || ok {
		t.Fatalf("record of the forgotten #8: %v %v; want none", ok, err)
	}
	for _, n := range []uint64{7, 9} {
		if _, ok, err := ReadRecord(env.DB, VersionRecordID(n)); err != nil || !ok {
			t.Fatalf("record of #%d: %v %v", n, ok, err)
		}
	}
}
