package store

import (
	"runtime"
	"testing"
)

// A compaction builds no more key ranges at once than there are cores, and finishes no
// more tables beside them (third_party/badger/CROW.md, "A compaction as wide as its options
// say"): at least 2 of each, at most badger's own 5 and 8.
func TestCompactionWidth(t *testing.T) {
	for _, c := range []struct{ procs, splits, builders int }{
		{1, 2, 2}, {2, 2, 2}, {4, 4, 4}, {6, 5, 6}, {64, 5, 8},
	} {
		s, b := compactionWidth(c.procs)
		if s != c.splits || b != c.builders {
			t.Errorf("compactionWidth(%d) = %d, %d; want %d, %d", c.procs, s, b, c.splits, c.builders)
		}
	}
	opts := badgerOptions(t.TempDir(), Options{})
	s, b := compactionWidth(runtime.GOMAXPROCS(0))
	if opts.NumCompactionSplits != s || opts.NumCompactionBuilders != b {
		t.Errorf("badger options: %d splits, %d builders; want %d, %d", opts.NumCompactionSplits, opts.NumCompactionBuilders, s, b)
	}
}
