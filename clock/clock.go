// Package clock is crow's injectable time source: logic that expires tokens,
// paces probes and redials, or schedules work takes a Clock, so tests can
// advance a fake one instead of sleeping (see the fakes in the packages'
// tests, e.g. registry/registrytest.Clock).
package clock

import "time"

// Clock tells the time and makes tickers.
type Clock interface {
	Now() time.Time
	// NewTicker behaves like time.NewTicker.
	NewTicker(d time.Duration) Ticker
}

// Ticker is the part of *time.Ticker crow uses.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

// System is the real Clock.
type System struct{}

// Now returns time.Now().
func (System) Now() time.Time { return time.Now() }

// NewTicker wraps time.NewTicker.
func (System) NewTicker(d time.Duration) Ticker { return systemTicker{time.NewTicker(d)} }

type systemTicker struct{ t *time.Ticker }

func (t systemTicker) C() <-chan time.Time { return t.t.C }
func (t systemTicker) Stop()               { t.t.Stop() }
