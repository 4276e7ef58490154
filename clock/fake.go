package clock

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Fake is a Clock that moves only when Advance or Set is called. It is safe
// for concurrent use; the zero value reads the zero time.
//
// Advance and Set first move the time, then fire every timer that came due,
// in deadline order: channel timers and tickers by a non-blocking send of
// their deadline (channels hold one value, like the real ones; a ticker sends
// at most one tick per Advance), AfterFunc timers by calling f on the
// advancing goroutine after the Fake's lock is released (so f may use the
// Fake), before Advance returns. Timers started meanwhile, by those callbacks
// or by goroutines the ticks woke, count from the new time. A timer made with a
// non-positive duration fires at once: its channel holds the current time, or
// f runs on a new goroutine, as with the time package.
//
// Tests that must not advance before the code under test is waiting use
// BlockUntil (or BlockUntilContext); Pending shows what is waiting.
type Fake struct {
	mu      sync.Mutex    // guards the fields below and every fakeTimer's fields
	now     time.Time     //
	pending []*fakeTimer  // active timers, tickers and AfterFuncs, in creation order
	changed chan struct{} // closed (and replaced) when pending changes; nil until needed
}

var _ Clock = (*Fake)(nil)

// NewFake returns a Fake reading start.
func NewFake(start time.Time) *Fake { return &Fake{now: start} }

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Since returns f.Now().Sub(t).
func (f *Fake) Since(t time.Time) time.Duration { return f.Now().Sub(t) }

// NewTimer returns a timer that fires once the fake time reaches Now()+d.
func (f *Fake) NewTimer(d time.Duration) Timer {
	t := &fakeTimer{f: f, ch: make(chan time.Time, 1)}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.startLocked(t, d)
	return t
}

// NewTicker returns a ticker firing every d of fake time. It panics if d is
// not positive, like time.NewTicker.
func (f *Fake) NewTicker(d time.Duration) Ticker {
	if d <= 0 {
		panic("clock: non-positive interval for Fake.NewTicker")
	}
	t := &fakeTimer{f: f, ch: make(chan time.Time, 1), period: d}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.startLocked(t, d)
	return fakeTicker{t}
}

// AfterFunc returns a timer that calls fn once the fake time reaches Now()+d.
func (f *Fake) AfterFunc(d time.Duration, fn func()) Timer {
	t := &fakeTimer{f: f, fn: fn}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.startLocked(t, d)
	return t
}

// Advance moves the fake time forward by d (d < 0 panics), firing every timer
// that comes due on the way, including timers that AfterFunc callbacks start.
func (f *Fake) Advance(d time.Duration) {
	if d < 0 {
		panic("clock: negative duration for Fake.Advance")
	}
	f.mu.Lock()
	target := f.now.Add(d)
	f.mu.Unlock()
	f.advanceTo(target)
}

// Set moves the fake time to t. Forward, it fires the timers that come due as
// Advance does; backward, it fires nothing and pending timers keep their
// deadlines (in fake time), so they fire later.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	if !t.After(f.now) {
		f.now = t
		f.mu.Unlock()
		return
	}
	f.mu.Unlock()
	f.advanceTo(t)
}

// Pending returns, in deadline order, how long until each active timer,
// ticker and AfterFunc next fires.
func (f *Fake) Pending() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]time.Duration, 0, len(f.pending))
	for _, t := range f.pending {
		out = append(out, t.when.Sub(f.now))
	}
	slices.Sort(out)
	return out
}

// BlockUntil waits until at least n timers, tickers and AfterFuncs are
// active: the code under test is waiting on the Fake.
func (f *Fake) BlockUntil(n int) { _ = f.BlockUntilContext(context.Background(), n) }

// BlockUntilContext is BlockUntil that gives up, returning ctx.Err(), when
// ctx ends.
func (f *Fake) BlockUntilContext(ctx context.Context, n int) error {
	return f.WaitPending(ctx, func(pending int) bool { return pending >= n })
}

// WaitPending waits until ok holds for the number of active timers, tickers
// and AfterFuncs (checked now and after every change), or ctx ends.
func (f *Fake) WaitPending(ctx context.Context, ok func(pending int) bool) error {
	for {
		f.mu.Lock()
		if ok(len(f.pending)) {
			f.mu.Unlock()
			return nil
		}
		if f.changed == nil {
			f.changed = make(chan struct{})
		}
		ch := f.changed
		f.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}

// advanceTo sets the time to target (if later), then fires every timer due by
// then, in deadline order: a timer started while this runs, by an AfterFunc
// callback or by a goroutine woken by a tick, counts from target, so a
// reaction to one tick is never overtaken by the rest of the same Advance.
func (f *Fake) advanceTo(target time.Time) {
	f.mu.Lock()
	if target.After(f.now) {
		f.now = target
	}
	var due []*fakeTimer
	for _, t := range f.pending {
		if !t.when.After(f.now) {
			due = append(due, t)
		}
	}
	slices.SortStableFunc(due, func(a, b *fakeTimer) int { return a.when.Compare(b.when) })
	var fns []func()
	for _, t := range due {
		switch {
		case t.fn != nil:
			f.removeLocked(t)
			fns = append(fns, t.fn)
		case t.period > 0:
			select {
			case t.ch <- t.when:
			default: // the last tick is still unread: drop this one
			}
			// The channel is full: the ticks due up to now would all be
			// dropped, so skip to the first one after it, keeping the phase.
			t.when = t.when.Add((f.now.Sub(t.when)/t.period + 1) * t.period)
		default:
			f.removeLocked(t)
			select {
			case t.ch <- t.when:
			default:
			}
		}
	}
	f.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// startLocked (re)arms t to fire d from now, or fires it at once if d <= 0.
func (f *Fake) startLocked(t *fakeTimer, d time.Duration) {
	if d <= 0 && t.period == 0 {
		if t.fn != nil {
			go t.fn()
		} else {
			t.ch <- f.now // the channel was drained or is new
		}
		return
	}
	t.when = f.now.Add(d)
	if !t.active {
		t.active = true
		f.pending = append(f.pending, t)
		f.notifyLocked()
	}
}

func (f *Fake) removeLocked(t *fakeTimer) {
	if !t.active {
		return
	}
	t.active = false
	f.pending = slices.DeleteFunc(f.pending, func(p *fakeTimer) bool { return p == t })
	f.notifyLocked()
}

func (f *Fake) notifyLocked() {
	if f.changed != nil {
		close(f.changed)
		f.changed = nil
	}
}

// fakeTimer is a Fake's timer, ticker (period > 0) or AfterFunc (fn != nil).
// Its fields other than f, ch, fn are guarded by f.mu.
type fakeTimer struct {
	f      *Fake
	ch     chan time.Time // nil for AfterFunc
	fn     func()
	period time.Duration // ticker period; changed by Reset
	when   time.Time     // next deadline, if active
	active bool          // in f.pending
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

// Stop implements Timer.Stop and Ticker.Stop.
func (t *fakeTimer) Stop() bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	was := t.active
	t.f.removeLocked(t)
	t.drainLocked()
	return was
}

// Reset implements Timer.Reset.
func (t *fakeTimer) Reset(d time.Duration) bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	was := t.active
	t.drainLocked()
	if d <= 0 {
		t.f.removeLocked(t)
	}
	t.f.startLocked(t, d)
	return was
}

func (t *fakeTimer) drainLocked() {
	if t.ch == nil {
		return
	}
	select {
	case <-t.ch:
	default:
	}
}

// fakeTicker adapts a fakeTimer to Ticker, whose Stop returns nothing.
type fakeTicker struct{ *fakeTimer }

func (t fakeTicker) Stop() { t.fakeTimer.Stop() }

func (t fakeTicker) Reset(d time.Duration) {
	if d <= 0 {
		panic("clock: non-positive interval for Ticker.Reset")
	}
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	t.period = d
	t.drainLocked()
	t.f.startLocked(t.fakeTimer, d)
}
