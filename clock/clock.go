// Package clock is crow's injectable time source: logic that expires tokens,
// paces probes and redials, debounces work or bounds a wait takes a Clock, so
// tests can move a Fake instead of sleeping.
//
// The shape follows tailscale's tstime.Clock: Now and Since for reading the
// time, NewTimer, NewTicker and AfterFunc for waiting on it. A nil Clock field
// in an options struct means the real clock; resolve it once with Or.
//
// Durations that only feed logs and metrics (how long a rebuild took) may use
// the same Clock; under a Fake they read as zero unless the test advances it.
package clock

import (
	"context"
	"time"
)

// Clock tells the time and makes timers. Implementations are safe for
// concurrent use.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// Since returns Now().Sub(t).
	Since(t time.Time) time.Duration
	// NewTimer behaves like time.NewTimer.
	NewTimer(d time.Duration) Timer
	// NewTicker behaves like time.NewTicker (d must be positive).
	NewTicker(d time.Duration) Ticker
	// AfterFunc behaves like time.AfterFunc: f runs once d has passed, unless
	// the returned Timer is stopped first. Its C is nil.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is the part of *time.Timer crow uses. As with Go 1.23+ timers, no
// stale value is received from C after Stop or Reset returns.
type Timer interface {
	// C is the channel the timer fires on (nil for AfterFunc timers).
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it did so.
	Stop() bool
	// Reset makes the timer fire d from now; it reports whether the timer
	// had been active.
	Reset(d time.Duration) bool
}

// Ticker is the part of *time.Ticker crow uses.
type Ticker interface {
	// C is the channel the ticks are delivered on; it holds at most one.
	C() <-chan time.Time
	// Stop turns the ticker off; no tick is received after it returns.
	Stop()
	// Reset stops the ticker and restarts it with period d from now.
	Reset(d time.Duration)
}

// Or returns c, or System{} if c is nil: the default for a Clock field.
func Or(c Clock) Clock {
	if c == nil {
		return System{}
	}
	return c
}

// System is the real Clock.
type System struct{}

var _ Clock = System{}

// Now returns time.Now().
func (System) Now() time.Time { return time.Now() }

// Since returns time.Since(t).
func (System) Since(t time.Time) time.Duration { return time.Since(t) }

// NewTimer wraps time.NewTimer.
func (System) NewTimer(d time.Duration) Timer { return systemTimer{time.NewTimer(d)} }

// NewTicker wraps time.NewTicker.
func (System) NewTicker(d time.Duration) Ticker { return systemTicker{time.NewTicker(d)} }

// AfterFunc wraps time.AfterFunc.
func (System) AfterFunc(d time.Duration, f func()) Timer {
	return systemTimer{time.AfterFunc(d, f)}
}

type systemTimer struct{ t *time.Timer }

func (t systemTimer) C() <-chan time.Time        { return t.t.C }
func (t systemTimer) Stop() bool                 { return t.t.Stop() }
func (t systemTimer) Reset(d time.Duration) bool { return t.t.Reset(d) }

type systemTicker struct{ t *time.Ticker }

func (t systemTicker) C() <-chan time.Time   { return t.t.C }
func (t systemTicker) Stop()                 { t.t.Stop() }
func (t systemTicker) Reset(d time.Duration) { t.t.Reset(d) }

// Wait blocks until d has passed on c or ctx ends, and returns ctx.Err() in
// the latter case: the pause of a retry loop.
func Wait(ctx context.Context, c Clock, d time.Duration) error {
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
		return nil
	}
}
