package sync

import "github.com/crow-sync/crow/clock"

// Clock is the time source of a Node, injected so tests control time.
type Clock = clock.Clock

// Ticker is the subset of time.Ticker a Node uses.
type Ticker = clock.Ticker

// SystemClock is the real clock.
type SystemClock = clock.System

// Timer is the subset of time.Timer FollowPeers uses.
type Timer = clock.Timer
