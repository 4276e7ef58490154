package clock

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// fired reports whether c holds a value, and which.
func fired(c <-chan time.Time) (time.Time, bool) {
	select {
	case v := <-c:
		return v, true
	default:
		return time.Time{}, false
	}
}

func TestFakeTimerFiresAtDeadline(t *testing.T) {
	f := NewFake(epoch)
	tm := f.NewTimer(10 * time.Second)
	f.Advance(9 * time.Second)
	if _, ok := fired(tm.C()); ok {
		t.Fatal("timer fired before its deadline")
	}
	f.Advance(5 * time.Second)
	v, ok := fired(tm.C())
	if !ok || !v.Equal(epoch.Add(10*time.Second)) {
		t.Fatalf("timer sent %v, %v; want its deadline", v, ok)
	}
	if got := f.Now(); !got.Equal(epoch.Add(14 * time.Second)) {
		t.Fatalf("Now = %v after advancing 14s", got)
	}
	if tm.Stop() {
		t.Fatal("Stop on a fired timer reported it active")
	}
	if _, ok := fired(tm.C()); ok {
		t.Fatal("a fired timer fired twice")
	}
}

func TestFakeTimerStopAndReset(t *testing.T) {
	f := NewFake(epoch)
	tm := f.NewTimer(time.Second)
	if !tm.Stop() {
		t.Fatal("Stop on an active timer reported it inactive")
	}
	f.Advance(time.Hour)
	if _, ok := fired(tm.C()); ok {
		t.Fatal("a stopped timer fired")
	}
	if tm.Reset(2 * time.Second) {
		t.Fatal("Reset of a stopped timer reported it active")
	}
	f.Advance(time.Second)
	if _, ok := fired(tm.C()); ok {
		t.Fatal("a reset timer fired early")
	}
	f.Advance(time.Second)
	if _, ok := fired(tm.C()); !ok {
		t.Fatal("a reset timer did not fire")
	}

	// No stale value after Stop or Reset (Go 1.23+ semantics).
	f.Advance(0)
	tm.Reset(time.Second)
	f.Advance(time.Second) // fires; the value sits unread
	tm.Reset(time.Minute)
	if _, ok := fired(tm.C()); ok {
		t.Fatal("a stale value was received after Reset")
	}
	f.Advance(time.Minute)
	tm.Stop()
	if _, ok := fired(tm.C()); ok {
		t.Fatal("a stale value was received after Stop")
	}
}

func TestFakeNonPositiveTimerFiresAtOnce(t *testing.T) {
	f := NewFake(epoch)
	if v, ok := fired(f.NewTimer(0).C()); !ok || !v.Equal(epoch) {
		t.Fatalf("NewTimer(0) sent %v, %v; want now at once", v, ok)
	}
	done := make(chan struct{})
	f.AfterFunc(-time.Second, func() { close(done) })
	<-done
	if n := len(f.Pending()); n != 0 {
		t.Fatalf("%d timers pending after immediate ones", n)
	}
}

func TestFakeTicker(t *testing.T) {
	f := NewFake(epoch)
	tk := f.NewTicker(time.Second)
	for i := 1; i <= 3; i++ {
		f.Advance(time.Second)
		v, ok := fired(tk.C())
		if !ok || !v.Equal(epoch.Add(time.Duration(i)*time.Second)) {
			t.Fatalf("tick %d: got %v, %v", i, v, ok)
		}
	}
	// An unread ticker holds one tick; the rest are dropped, and the ticker
	// keeps its phase.
	f.Advance(10*time.Second + 500*time.Millisecond)
	if v, ok := fired(tk.C()); !ok || !v.Equal(epoch.Add(4*time.Second)) {
		t.Fatalf("after a long advance got %v, %v; want the first missed tick", v, ok)
	}
	if _, ok := fired(tk.C()); ok {
		t.Fatal("a ticker channel held two ticks")
	}
	if p := f.Pending(); !slices.Equal(p, []time.Duration{500 * time.Millisecond}) {
		t.Fatalf("Pending = %v; want the ticker's next tick in 500ms", p)
	}
	tk.Reset(time.Minute)
	f.Advance(59 * time.Second)
	if _, ok := fired(tk.C()); ok {
		t.Fatal("a reset ticker ticked on its old period")
	}
	f.Advance(time.Second)
	if _, ok := fired(tk.C()); !ok {
		t.Fatal("a reset ticker did not tick on its new period")
	}
	tk.Stop()
	f.Advance(time.Hour)
	if _, ok := fired(tk.C()); ok {
		t.Fatal("a stopped ticker ticked")
	}
	if n := len(f.Pending()); n != 0 {
		t.Fatalf("%d pending after Stop", n)
	}
}

func TestFakeHugeAdvanceOnFastTicker(t *testing.T) {
	f := NewFake(epoch)
	tk := f.NewTicker(time.Nanosecond)
	defer tk.Stop()
	f.Advance(24 * time.Hour) // must not loop once per nanosecond
	if _, ok := fired(tk.C()); !ok {
		t.Fatal("no tick")
	}
}

func TestFakeAfterFuncOrderAndChaining(t *testing.T) {
	f := NewFake(epoch)
	var got []string
	at := func(name string) func() {
		return func() { got = append(got, name+"@"+f.Since(epoch).String()) }
	}
	f.AfterFunc(3*time.Second, at("c"))
	f.AfterFunc(time.Second, func() {
		at("a")()
		// Started during the Advance: counts from its end, so it is not
		// due until one more second has passed.
		f.AfterFunc(time.Second, at("b"))
	})
	stopped := f.AfterFunc(2500*time.Millisecond, at("never"))
	if !stopped.Stop() {
		t.Fatal("Stop on a pending AfterFunc reported it inactive")
	}
	if stopped.C() != nil {
		t.Fatal("an AfterFunc timer has a channel")
	}
	f.Advance(5 * time.Second)
	if want := []string{"a@5s", "c@5s"}; !slices.Equal(got, want) {
		t.Fatalf("callbacks ran as %v; want %v (in deadline order)", got, want)
	}
	if p := f.Pending(); !slices.Equal(p, []time.Duration{time.Second}) {
		t.Fatalf("Pending = %v; want the chained timer in 1s", p)
	}
	f.Advance(time.Second)
	if want := []string{"a@5s", "c@5s", "b@6s"}; !slices.Equal(got, want) {
		t.Fatalf("callbacks ran as %v; want %v", got, want)
	}
}

// A goroutine woken by a tick starts a timer while Advance is still firing:
// the timer counts from the end of the Advance, not from the tick.
func TestFakeReactionCountsFromAdvanceEnd(t *testing.T) {
	f := NewFake(epoch)
	tk := f.NewTicker(time.Minute)
	defer tk.Stop()
	started := make(chan Timer)
	go func() {
		<-tk.C()
		started <- f.NewTimer(10 * time.Second)
	}()
	f.Advance(time.Hour)
	tm := <-started
	if _, ok := fired(tm.C()); ok {
		t.Fatal("a timer started after the tick fired within the same Advance")
	}
	f.Advance(10 * time.Second)
	if v, ok := fired(tm.C()); !ok || !v.Equal(epoch.Add(time.Hour+10*time.Second)) {
		t.Fatalf("timer sent %v, %v; want an hour and 10s", v, ok)
	}
}

func TestFakeSet(t *testing.T) {
	f := NewFake(epoch)
	tm := f.NewTimer(time.Hour)
	f.Set(epoch.Add(-time.Hour)) // backwards: nothing fires, the deadline stays
	if !f.Now().Equal(epoch.Add(-time.Hour)) {
		t.Fatalf("Set backwards: Now = %v", f.Now())
	}
	if p := f.Pending(); !slices.Equal(p, []time.Duration{2 * time.Hour}) {
		t.Fatalf("Pending after Set backwards = %v; want 2h", p)
	}
	f.Set(epoch.Add(time.Hour))
	if v, ok := fired(tm.C()); !ok || !v.Equal(epoch.Add(time.Hour)) {
		t.Fatalf("Set forward: timer sent %v, %v", v, ok)
	}
}

func TestFakeBlockUntil(t *testing.T) {
	f := NewFake(epoch)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := f.BlockUntilContext(ctx, 1); err == nil {
		t.Fatal("BlockUntilContext returned with nothing pending")
	}
	tm := f.NewTimer(time.Second)
	gone := make(chan error, 1)
	go func() { gone <- f.WaitPending(context.Background(), func(n int) bool { return n == 0 }) }()
	tm.Stop()
	if err := <-gone; err != nil {
		t.Fatalf("WaitPending = %v", err)
	}

	woke := make(chan error, 1)
	go func() { woke <- Wait(context.Background(), f, time.Minute) }()
	f.BlockUntil(1) // the goroutine's timer exists
	f.Advance(time.Minute)
	if err := <-woke; err != nil {
		t.Fatalf("Wait = %v", err)
	}

	ctx, cancel = context.WithCancel(context.Background())
	go func() { woke <- Wait(ctx, f, time.Minute) }()
	f.BlockUntil(1)
	cancel()
	if err := <-woke; err != context.Canceled {
		t.Fatalf("Wait after cancel = %v", err)
	}
}

// TestFakeConcurrent is for -race: goroutines make, stop, reset and wait on
// timers while others advance and read the clock.
func TestFakeConcurrent(t *testing.T) {
	f := NewFake(epoch)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for i := range 8 {
		wg.Go(func() {
			d := time.Duration(i+1) * time.Millisecond
			for {
				select {
				case <-stop:
					return
				default:
				}
				tm := f.NewTimer(d)
				tk := f.NewTicker(d)
				af := f.AfterFunc(d, func() { _ = f.Now() })
				select {
				case <-tm.C():
				case <-tk.C():
				case <-stop:
				}
				tm.Reset(d)
				tm.Stop()
				tk.Stop()
				af.Stop()
				_ = f.Pending()
			}
		})
	}
	wg.Go(func() {
		for range 2000 {
			f.Advance(time.Millisecond)
			_ = f.Since(epoch)
		}
		close(stop)
	})
	wg.Wait()
	if got := f.Since(epoch); got != 2000*time.Millisecond {
		t.Fatalf("advanced %v; want 2s", got)
	}
}

func TestSystemTimers(t *testing.T) {
	c := Or(nil)
	if _, ok := c.(System); !ok {
		t.Fatalf("Or(nil) = %T; want System", c)
	}
	if err := Wait(context.Background(), c, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	c.AfterFunc(time.Millisecond, func() { close(done) })
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("system AfterFunc never ran")
	}
	tm := c.NewTimer(time.Hour)
	if !tm.Stop() || tm.Reset(time.Hour) {
		t.Fatal("system timer Stop/Reset misreported")
	}
	tm.Stop()
	if c.Since(c.Now()) < 0 {
		t.Fatal("Since went negative")
	}
}
