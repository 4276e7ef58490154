// Package testhold lets a test stop a goroutine at one point of the code
// under test, observe the rest of the system while it is held there, then let
// it go: a wrapper of an interface the code calls (a storage, a feed set)
// calls Here at the point to hold.
package testhold

import "sync"

// Point is one place to hold. The zero value is not usable: use New.
type Point struct {
	armed   chan struct{}
	entered chan struct{}
	release chan struct{}
	enter   sync.Once
	free    sync.Once
}

// New returns a Point that does not hold until Arm.
func New() *Point {
	return &Point{armed: make(chan struct{}), entered: make(chan struct{}), release: make(chan struct{})}
}

// Arm makes every later Here block until Release. Call it once.
func (p *Point) Arm() { close(p.armed) }

// Here is called at the point: once armed, it blocks until Release (the
// first call to block closes Entered).
func (p *Point) Here() {
	select {
	case <-p.armed:
	default:
		return
	}
	p.enter.Do(func() { close(p.entered) })
	<-p.release
}

// Entered is closed once a goroutine is held at the point.
func (p *Point) Entered() <-chan struct{} { return p.entered }

// Release lets every held and later Here go. It may be called more than once
// (a test's cleanup calls it too, so a failing test does not leave a
// goroutine held).
func (p *Point) Release() { p.free.Do(func() { close(p.release) }) }
