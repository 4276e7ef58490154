package clock

import (
	"context"
	"sync/atomic"
	"time"
)

// Quiet lets background work wait for a pause in foreground work. The parts
// that serve the user (API writes, replication) call Touch; a background
// worker calls Wait before each expensive step, so its bursts of CPU and I/O
// land between the user's requests instead of in front of them. Wait is
// bounded: under constant foreground load the background work still runs, one
// step per maxDefer at least.
//
// The nil *Quiet never waits and ignores Touch (no pacing). Safe for
// concurrent use.
type Quiet struct {
	clk      Clock
	pause    time.Duration
	maxDefer time.Duration
	last     atomic.Int64 // UnixNano of the last Touch, or of the end of a TouchFor; 0: none yet
	waited   atomic.Int64 // nanoseconds spent in Wait beyond an immediate return
}

// NewQuiet returns a Quiet on c (nil: the system clock): Wait returns once
// pause has passed without a Touch, or once it has waited maxDefer.
func NewQuiet(c Clock, pause, maxDefer time.Duration) *Quiet {
	return &Quiet{clk: Or(c), pause: pause, maxDefer: maxDefer}
}

// Touch records foreground activity now.
func (q *Quiet) Touch() { q.TouchFor(0) }

// TouchFor records foreground activity that goes on for d from now (the rest
// of a catch-up a peer is fetching): until then Idle is 0, and Wait returns
// pause after it at the earliest (or after maxDefer). A Touch never shortens
// it.
func (q *Quiet) TouchFor(d time.Duration) {
	if q == nil {
		return
	}
	until := q.clk.Now().Add(d).UnixNano()
	for {
		last := q.last.Load()
		if last >= until || q.last.CompareAndSwap(last, until) {
			return
		}
	}
}

// Wait blocks until pause has passed since the last Touch, or until it has
// waited maxDefer, or until ctx ends (it then returns ctx.Err()).
func (q *Quiet) Wait(ctx context.Context) error {
	if q == nil {
		return ctx.Err()
	}
	start := q.clk.Now()
	defer func() { q.waited.Add(int64(q.clk.Since(start))) }()
	return q.wait(ctx, q.clk, q.pause, q.maxDefer, nil)
}

// WaitIdle is Wait with the caller's own bounds, timed on clk (nil: the system clock): it
// blocks until the foreground has paused for pause (never touched: at once), until most has
// passed, until hurry receives (nil: never), or until ctx ends (its error). A nil Quiet
// returns at once. Background work that runs in steps and must not fall far behind (the
// search indexer, home's numberer) calls it before each step. Its time is not counted in
// Waited.
func (q *Quiet) WaitIdle(ctx context.Context, clk Clock, pause, most time.Duration, hurry <-chan struct{}) error {
	if q == nil {
		return nil
	}
	return q.wait(ctx, Or(clk), pause, most, hurry)
}

// wait is Wait's and WaitIdle's loop.
func (q *Quiet) wait(ctx context.Context, clk Clock, pause, most time.Duration, hurry <-chan struct{}) error {
	deadline := clk.Now().Add(most)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		idle, touched := q.since()
		left := deadline.Sub(clk.Now())
		if !touched || idle >= pause || left <= 0 {
			return nil
		}
		t := clk.NewTimer(min(pause-idle, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-hurry:
			t.Stop()
			return nil
		case <-t.C():
		}
	}
}

// Idle returns how long ago the last Touch was, and false if there has been
// none (a nil Quiet: none).
func (q *Quiet) Idle() (time.Duration, bool) {
	if q == nil {
		return 0, false
	}
	idle, touched := q.since()
	return max(0, idle), touched
}

// since is Idle's value before clamping: negative while a TouchFor lasts.
func (q *Quiet) since() (time.Duration, bool) {
	last := q.last.Load()
	if last == 0 {
		return 0, false
	}
	return q.clk.Now().Sub(time.Unix(0, last)), true
}

// Waited is the total time Wait has spent waiting for pauses.
func (q *Quiet) Waited() time.Duration {
	if q == nil {
		return 0
	}
	return time.Duration(q.waited.Load())
}
