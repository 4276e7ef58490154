package apply

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crow-sync/crow/store"
)

// On a full disk the apply loop stops before writing (the checkpoint stays, nothing is
// parked) and applies the same entries once space returns.
func TestApplyStopsOnFullDisk(t *testing.T) {
	a := newNode(t, "a", t.TempDir(), nil)
	var free atomic.Uint64
	free.Store(8 << 30)
	var now atomic.Int64
	now.Store(testEpoch.UnixNano())
	b := &node{tb: t, id: "b", dir: t.TempDir(),
		statfs: func(string) (uint64, uint64, error) { return free.Load(), 10 << 30, nil },
		now:    func() time.Time { return time.Unix(0, now.Load()).UTC() }}
	b.open()
	t.Cleanup(b.close)

	a.put("notes", "n1", `{"text":"one"}`)
	pull(t, b, a, a.log.Key(), ^uint64(0))
	free.Store(1 << 20)
	now.Add(int64(time.Second))

	// The replica append of a newer entry is refused too, and leaves the replica as it was.
	a.put("notes", "n2", `{"text":"two"}`)
	key := a.log.Key()
	have, _ := b.length(key)
	p, err := a.rs.Proof(key, have, have+1, 0)
	if err != nil {
		t.Fatal(err)
	}
	entries, cleared, err := a.rs.ReadSparse(key, have, have+1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.rs.ApplySparse(p, entries, cleared); !errors.Is(err, store.ErrDiskFull) {
		t.Fatalf("replica append on a full disk: %v, want ErrDiskFull", err)
	}
	if got, _ := b.length(key); got != have {
		t.Fatalf("replica grew from %d to %d on a full disk", have, got)
	}

	if _, err := b.ap.CatchUp(context.Background()); !errors.Is(err, store.ErrDiskFull) {
		t.Fatalf("catch up on a full disk: %v, want ErrDiskFull", err)
	}
	if r := b.get("notes", "n1"); r != nil {
		t.Fatalf("row applied on a full disk: %+v", r)
	}

	free.Store(8 << 30)
	now.Add(int64(time.Second))
	if n := b.catchUp(); n != 1 {
		t.Fatalf("catch up after space returned applied %d entries, want 1", n)
	}
	pull(t, b, a, key, ^uint64(0))
	if n := b.catchUp(); n != 1 {
		t.Fatalf("the entry refused on the full disk: applied %d entries, want 1", n)
	}
	if r := b.get("notes", "n2"); r == nil {
		t.Fatal("n2 missing after space returned")
	}
	if r := b.get("notes", "n1"); r == nil || r.Deleted {
		t.Fatalf("row after space returned: %+v", r)
	}
}
