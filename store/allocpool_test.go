package store

import (
	"testing"

	"github.com/dgraph-io/ristretto/v2/z"
)

// TestGrownTableBuilderAllocatorsAreNotPooled checks that the build uses the
// patched ristretto (third_party/ristretto, go.mod's replace): badger builds
// every table in an allocator from one z.AllocatorPool, and upstream's pool
// keeps an allocator with all it ever grew to (up to 400 MiB each, 8 of them),
// which was most of the daemon's heap during a sync. A small allocator is
// still reused.
func TestGrownTableBuilderAllocatorsAreNotPooled(t *testing.T) {
	p := z.NewAllocatorPool(2)
	defer p.Release()

	small := p.Get(4<<20, "test")
	small.Allocate(3 << 20)
	p.Return(small)
	again := p.Get(4<<20, "test")
	if again != small {
		t.Errorf("a 4 MiB allocator was not reused from the pool")
	}

	again.Allocate(64 << 20) // as a memtable flush's builder grows
	grown := again.Allocated()
	p.Return(again)
	next := p.Get(4<<20, "test")
	defer p.Return(next)
	if next == again || next.Allocated() > 16<<20 {
		t.Fatalf("an allocator grown to %d MiB came back from the pool holding %d MiB: is go.mod's replace of ristretto (third_party/ristretto) gone?",
			grown>>20, next.Allocated()>>20)
	}
}
