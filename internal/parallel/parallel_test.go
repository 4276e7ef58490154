package parallel

import (
	"runtime"
	"sync"
	"testing"
)

// Every index is visited exactly once, in parts no shorter than asked (but the last).
func TestRangeVisitsEachIndexOnce(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	for _, n := range []int{0, 1, 7, 63, 64, 128, 129, 1000, 1001} {
		for _, minPart := range []int{0, 1, 16, 64, 2000} {
			seen := make([]int, n)
			var mu sync.Mutex
			var parts [][2]int
			Range(n, minPart, func(lo, hi int) {
				mu.Lock()
				parts = append(parts, [2]int{lo, hi})
				mu.Unlock()
				for i := lo; i < hi; i++ {
					seen[i]++
				}
			})
			for i, c := range seen {
				if c != 1 {
					t.Fatalf("n=%d min=%d: index %d visited %d times", n, minPart, i, c)
				}
			}
			if len(parts) > 4 {
				t.Fatalf("n=%d min=%d: %d parts on 4 cores", n, minPart, len(parts))
			}
			if len(parts) > 1 {
				for _, p := range parts {
					if p[1]-p[0] < minPart && p[1] != n {
						t.Fatalf("n=%d min=%d: part %v shorter than asked", n, minPart, p)
					}
				}
			}
		}
	}
}

// With one core nothing runs beside the caller.
func TestRangeOneCoreRunsInline(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	calls := 0
	Range(10000, 1, func(lo, hi int) {
		calls++ // no lock: a second goroutine would race (go test -race)
		if lo != 0 || hi != 10000 {
			t.Errorf("part [%d, %d), want [0, 10000)", lo, hi)
		}
	})
	if calls != 1 {
		t.Fatalf("%d calls, want 1", calls)
	}
}
