package clock

import (
	"context"
	"errors"
	"testing"
	"time"
)

// waitAsync runs q.Wait in a goroutine and returns its result channel.
func waitAsync(ctx context.Context, q *Quiet) <-chan error {
	done := make(chan error, 1)
	go func() { done <- q.Wait(ctx) }()
	return done
}

func returned(t *testing.T, done <-chan error) (error, bool) {
	t.Helper()
	select {
	case err := <-done:
		return err, true
	case <-time.After(50 * time.Millisecond):
		return nil, false
	}
}

func TestQuietWaitsForAPauseAfterTheLastTouch(t *testing.T) {
	f := NewFake(epoch)
	q := NewQuiet(f, 200*time.Millisecond, time.Minute)

	// No foreground activity yet: nothing to wait for.
	if err, ok := returned(t, waitAsync(context.Background(), q)); !ok || err != nil {
		t.Fatalf("Wait before any Touch: returned %v, %v; want at once with nil", ok, err)
	}
	if q.Waited() != 0 {
		t.Fatalf("Waited = %v after an immediate return", q.Waited())
	}

	q.Touch()
	done := waitAsync(context.Background(), q)
	f.BlockUntil(1)
	f.Advance(150 * time.Millisecond)
	q.Touch() // more foreground work: the pause starts again from here
	f.Advance(60 * time.Millisecond)
	if _, ok := returned(t, done); ok {
		t.Fatal("Wait returned 60 ms after a Touch; the pause is 200 ms")
	}
	f.BlockUntil(1)
	f.Advance(140 * time.Millisecond)
	if err, ok := returned(t, done); !ok || err != nil {
		t.Fatalf("Wait 200 ms after the last Touch: returned %v, %v; want nil", ok, err)
	}
	if got, want := q.Waited(), 350*time.Millisecond; got != want {
		t.Fatalf("Waited = %v, want %v", got, want)
	}

	// Already quiet for longer than the pause: no wait.
	f.Advance(time.Second)
	if err, ok := returned(t, waitAsync(context.Background(), q)); !ok || err != nil {
		t.Fatalf("Wait after a long pause: returned %v, %v", ok, err)
	}
}

func TestQuietWaitIsBoundedUnderConstantLoad(t *testing.T) {
	f := NewFake(epoch)
	q := NewQuiet(f, 200*time.Millisecond, time.Second)
	q.Touch()
	done := waitAsync(context.Background(), q)
	// A Touch every 100 ms: never a 200 ms pause.
	for range 9 {
		f.BlockUntil(1)
		f.Advance(100 * time.Millisecond)
		q.Touch()
		if _, ok := returned(t, done); ok {
			t.Fatalf("Wait returned at %v, before its 1 s bound", f.Since(epoch))
		}
	}
	f.BlockUntil(1)
	f.Advance(100 * time.Millisecond)
	if err, ok := returned(t, done); !ok || err != nil {
		t.Fatalf("Wait at its 1 s bound: returned %v, %v; want nil", ok, err)
	}
	if got := f.Since(epoch); got != time.Second {
		t.Fatalf("Wait returned at %v, want 1s", got)
	}
}

func TestQuietWaitEndsWithItsContext(t *testing.T) {
	f := NewFake(epoch)
	q := NewQuiet(f, time.Second, time.Minute)
	q.Touch()
	ctx, cancel := context.WithCancel(context.Background())
	done := waitAsync(ctx, q)
	f.BlockUntil(1)
	cancel()
	if err, ok := returned(t, done); !ok || !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait after cancel: returned %v, %v; want context.Canceled", ok, err)
	}
}

func TestNilQuietNeverWaits(t *testing.T) {
	var q *Quiet
	q.Touch()
	if err := q.Wait(context.Background()); err != nil {
		t.Fatalf("nil Quiet Wait = %v", err)
	}
	if q.Waited() != 0 {
		t.Fatal("nil Quiet waited")
	}
}

// TouchFor holds the foreground busy for its duration: Idle is 0 until it
// ends, Wait returns a pause after its end, and a Touch inside it does not
// shorten it.
func TestQuietTouchForHoldsUntilItsEndAndAPause(t *testing.T) {
	f := NewFake(epoch)
	q := NewQuiet(f, 200*time.Millisecond, time.Minute)
	q.TouchFor(time.Second)
	done := waitAsync(context.Background(), q)
	f.BlockUntil(1)
	f.Advance(300 * time.Millisecond)
	q.Touch() // a request inside the hold
	if idle, ok := q.Idle(); !ok || idle != 0 {
		t.Fatalf("Idle inside the hold = %v, %v; want 0, true", idle, ok)
	}
	for f.Since(epoch) < 1100*time.Millisecond {
		f.BlockUntil(1)
		f.Advance(100 * time.Millisecond)
		if _, ok := returned(t, done); ok {
			t.Fatalf("Wait returned at %v, inside the hold or its pause (1 s + 200 ms)", f.Since(epoch))
		}
	}
	f.BlockUntil(1)
	f.Advance(100 * time.Millisecond)
	if err, ok := returned(t, done); !ok || err != nil {
		t.Fatalf("Wait at 1.2 s: returned %v, %v; want nil", ok, err)
	}
	if idle, _ := q.Idle(); idle != 200*time.Millisecond {
		t.Fatalf("Idle after the hold = %v, want 200ms", idle)
	}
	// A shorter hold later does not move the end back, a longer one extends it.
	q.TouchFor(time.Second)
	q.TouchFor(10 * time.Millisecond)
	f.Advance(500 * time.Millisecond)
	if idle, _ := q.Idle(); idle != 0 {
		t.Fatalf("Idle 500 ms into a 1 s hold after a 10 ms one = %v, want 0", idle)
	}
}
