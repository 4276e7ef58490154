package store

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/badger/v4/y"
	"github.com/dgraph-io/ristretto/v2/z"
)

// TestTableBuilderKeepsOnlyCompressedBlocks checks crow's patch of badger's
// table builder (third_party/badger/CROW.md, "Table builders keep the
// compressed blocks only"): with compression on, a block being built keeps its
// compressed bytes only, at their size. Upstream kept every uncompressed block
// and, beside it, an allocation of the compression bound (larger than the
// block), so a table of 2 MiB held ~2.2× its uncompressed size in memory until
// it was written — most of a satellite's heap during a sync. The table must
// read back whole.
func TestTableBuilderKeepsOnlyCompressedBlocks(t *testing.T) {
	pool := z.NewAllocatorPool(1)
	defer pool.Release()
	opts := table.Options{
		BlockSize:          4 << 10,
		TableSize:          2 << 20,
		BloomFalsePositive: 0.01,
		Compression:        options.Snappy,
		ChkMode:            options.OnTableAndBlockRead,
		AllocPool:          pool,
	}
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"sync", "tailscale", "satellite", "chain", "ledger", "lamport", "conflict", "vector", "replica", "anchor"}
	type kv struct{ k, v []byte }
	var kvs []kv
	raw := 0
	for i := 0; raw < 16<<20; i++ {
		var v bytes.Buffer
		fmt.Fprintf(&v, `{"row_id":"%026d","table":"memories","data":{"content":"`, i)
		for range 30 {
			v.WriteString(words[rng.IntN(len(words))])
			v.WriteByte(' ')
		}
		fmt.Fprintf(&v, `"},"lamport_ts":%d}`, i)
		k := y.KeyWithTs(fmt.Appendf(nil, "t/memories/%026d", i), 1)
		kvs = append(kvs, kv{k, v.Bytes()})
		raw += len(k) + v.Len()
	}

	b := table.NewTableBuilder(opts)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for _, e := range kvs {
		b.Add(e.k, y.ValueStruct{Value: e.v}, 0)
	}
	runtime.ReadMemStats(&after)
	grew := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d entries, %.1f MiB uncompressed: the builder allocated %.1f MiB while adding them", len(kvs), float64(raw)/(1<<20), float64(grew)/(1<<20))
	if grew > uint64(raw)*3/4 {
		t.Errorf("the builder allocated %.1f MiB for %.1f MiB of entries: it keeps the uncompressed blocks (is the patch in third_party/badger/table/builder.go gone?)",
			float64(grew)/(1<<20), float64(raw)/(1<<20))
	}

	tbl, err := table.CreateTable(filepath.Join(t.TempDir(), "000001.sst"), b)
	b.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tbl.DecrRef() }()
	it := tbl.NewIterator(0)
	defer it.Close()
	i := 0
	for it.Rewind(); it.Valid(); it.Next() {
		if i >= len(kvs) {
			t.Fatalf("the table holds more than the %d entries added", len(kvs))
		}
		if !bytes.Equal(it.Key(), kvs[i].k) || !bytes.Equal(it.Value().Value, kvs[i].v) {
			t.Fatalf("entry %d reads back as %q = %.40q…, want %q = %.40q…", i, it.Key(), it.Value().Value, kvs[i].k, kvs[i].v)
		}
		i++
	}
	if i != len(kvs) {
		t.Fatalf("the table holds %d of the %d entries added", i, len(kvs))
	}
}

// TestTableIndexBuilderIsSizedForTheIndex builds small tables and counts what building them
// allocated: upstream's index builder started at a fixed 3 MiB per table (a 2 MiB table's
// index is tens of KiB), 1.2 GB of a satellite's allocations in a 200k sync
// (third_party/badger/CROW.md).
func TestTableIndexBuilderIsSizedForTheIndex(t *testing.T) {
	pool := z.NewAllocatorPool(1) // as the daemon's badger: builders reuse their allocator
	defer pool.Release()
	opts := table.Options{
		AllocPool:          pool,
		BlockSize:          32 << 10,
		TableSize:          2 << 20,
		BloomFalsePositive: 0.01,
		Compression:        options.Snappy,
		ChkMode:            options.OnTableAndBlockRead,
	}
	dir := t.TempDir()
	const tables, entries = 16, 2000
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for n := range tables {
		b := table.NewTableBuilder(opts)
		for i := range entries {
			b.Add(y.KeyWithTs(fmt.Appendf(nil, "t/memories/%04d%022d", n, i), 1), y.ValueStruct{Value: []byte(`{"content":"x"}`)}, 0)
		}
		tbl, err := table.CreateTable(filepath.Join(dir, fmt.Sprintf("%06d.sst", n+1)), b)
		b.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got := tbl.KeyCount(); got != entries {
			t.Fatalf("table %d holds %d keys, want %d", n, got, entries)
		}
		_ = tbl.DecrRef()
	}
	runtime.ReadMemStats(&after)
	per := float64(after.TotalAlloc-before.TotalAlloc) / tables / (1 << 20)
	t.Logf("building a table of %d entries allocated %.2f MiB", entries, per)
	if per > 2 {
		t.Errorf("building a table of %d small entries allocated %.2f MiB: is the index builder back to a fixed 3 MiB (third_party/badger/table/builder.go, buildIndex)?", entries, per)
	}
}
