// Package parallel spreads the independent steps of one call over the cores: encoding
// the rows of a bulk write, hashing the entries of a feed batch. The caller keeps its
// order; only the pure work in between runs at once.
package parallel

import (
	"runtime"
	"sync"
)

// Range calls fn over [0, n) cut into contiguous parts, one per core (GOMAXPROCS), each at
// least minPart long, and returns once every call has returned. fn(lo, hi) must only touch
// what belongs to the indexes in [lo, hi). When n is too small to share (or there is one
// core) fn(0, n) runs on the caller's goroutine. The caller's goroutine runs the first part.
func Range(n, minPart int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	parts := min(runtime.GOMAXPROCS(0), n/max(minPart, 1))
	if parts <= 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	size := (n + parts - 1) / parts
	for lo := size; lo < n; lo += size {
		hi := min(lo+size, n)
		wg.Go(func() { fn(lo, hi) })
	}
	fn(0, min(size, n))
	wg.Wait()
}
