package registry

import "time"

// Clock is the time source of the registry and the prober; tests use
// registrytest.Clock.
type Clock interface {
	Now() time.Time
	// NewTicker behaves like time.NewTicker.
	NewTicker(d time.Duration) Ticker
}

// Ticker is the part of *time.Ticker the prober needs.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

// SystemClock is the real Clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// NewTicker wraps time.NewTicker.
func (SystemClock) NewTicker(d time.Duration) Ticker { return sysTicker{time.NewTicker(d)} }

type sysTicker struct{ t *time.Ticker }

func (t sysTicker) C() <-chan time.Time { return t.t.C }
func (t sysTicker) Stop()               { t.t.Stop() }
