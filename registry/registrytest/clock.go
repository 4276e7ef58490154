package registrytest

import (
	"sync"
	"time"

	"github.com/crow-sync/crow/registry"
)

// Clock is a fake registry.Clock that moves only when Advance is called.
type Clock struct {
	mu      sync.Mutex // guards now and tickers
	now     time.Time
	tickers []*fakeTicker
}

var _ registry.Clock = (*Clock)(nil)

// NewClock returns a clock reading start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now implements registry.Clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTicker implements registry.Clock. Like a real ticker, its channel holds
// at most one pending tick.
func (c *Clock) NewTicker(d time.Duration) registry.Ticker {
	if d <= 0 {
		panic("registrytest: non-positive ticker interval")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTicker{c: c, ch: make(chan time.Time, 1), period: d, next: c.now.Add(d)}
	c.tickers = append(c.tickers, t)
	return t
}

// Advance moves the clock forward by d and fires every ticker that came
// due (once per due tick, dropping ticks the channel has no room for).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for _, t := range c.tickers {
		for !t.stopped && !t.next.After(c.now) {
			select {
			case t.ch <- t.next:
			default:
			}
			t.next = t.next.Add(t.period)
		}
	}
}

// Tickers returns how many tickers are running.
func (c *Clock) Tickers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.tickers {
		if !t.stopped {
			n++
		}
	}
	return n
}

type fakeTicker struct {
	c      *Clock
	ch     chan time.Time
	period time.Duration
	next   time.Time // guarded by c.mu
	// stopped is guarded by c.mu.
	stopped bool
}

func (t *fakeTicker) C() <-chan time.Time { return t.ch }

func (t *fakeTicker) Stop() {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	t.stopped = true
}
