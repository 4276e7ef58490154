package store

import (
	"testing"

	"github.com/dgraph-io/badger/v4/options"
)

// The sizing Open gives badger (docs/BENCHMARKS.md, session 9: memory and disk sizing):
// what a change here does to the daemon's peak memory and disk is measured there, so a
// change should be measured again.
func TestBadgerOptionsSizing(t *testing.T) {
	bo := badgerOptions(t.TempDir(), Options{})
	for _, c := range []struct {
		name      string
		got, want int64
	}{
		{"MemTableSize", bo.MemTableSize, 8 << 20},
		{"NumMemtables", int64(bo.NumMemtables), 3},
		{"BaseTableSize", bo.BaseTableSize, 1 << 20},
		{"TableSizeMultiplier", int64(bo.TableSizeMultiplier), 1},
		{"ValueThreshold", bo.ValueThreshold, 64 << 10},
		{"ValueLogFileSize", bo.ValueLogFileSize, 4 << 20},
		{"NumCompactors", int64(bo.NumCompactors), 2},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	// Durability and erasure checks do not change with the sizing: every commit is
	// fsynced, and blocks stay Snappy (forget's tests scan the files for erased text).
	if !bo.SyncWrites {
		t.Error("SyncWrites is off")
	}
	if bo.Compression != options.Snappy {
		t.Errorf("Compression = %v, want Snappy", bo.Compression)
	}
	if got := badgerOptions(t.TempDir(), Options{MemTableSize: 1 << 20}).MemTableSize; got != 1<<20 {
		t.Errorf("MemTableSize with Options.MemTableSize 1 MiB = %d", got)
	}
}
