package registry

import "github.com/crow-sync/crow/clock"

// Clock is the time source of the registry and the prober; tests use
// clock.Fake.
type Clock = clock.Clock

// Ticker is the part of *time.Ticker the prober needs.
type Ticker = clock.Ticker

// SystemClock is the real Clock.
type SystemClock = clock.System
