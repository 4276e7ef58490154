package feed

import (
	"bytes"
	"math/rand/v2"
	"runtime"
	"testing"
)

// TestLargeBatchSameAsOneByOne: a batch large enough to be hashed and packed on several
// cores (buildLocked's leaves, stageData's chunks) gives the same head, the same records
// and the same entries as the same entries appended one at a time, which never share out
// work; its proofs verify.
func TestLargeBatchSameAsOneByOne(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	db := openBadger(t, t.TempDir())
	defer func() { db.Close() }()
	rng := rand.New(rand.NewPCG(7, 8))
	entries, _ := hashEntries(rng, 1200)
	entries[5], entries[700] = nil, []byte{}
	// Starting mid-chunk: the first batch leaves the tree with several roots.
	kv, mem := newBadgerStorage(db), NewMemStorage()
	big, err := OpenLog(kv, testKey(3))
	if err != nil {
		t.Fatal(err)
	}
	one, err := OpenLog(mem, testKey(3))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := big.Append(entries[:37]); err != nil {
		t.Fatal(err)
	}
	if _, err := big.Append(entries[37:]); err != nil {
		t.Fatal(err)
	}
	for i := range entries {
		if _, err := one.Append(entries[i : i+1]); err != nil {
			t.Fatal(err)
		}
	}
	hb, ho := big.Head(), one.Head()
	if hb.Length != ho.Length || hb.TreeHash != ho.TreeHash {
		t.Fatalf("head after a large batch: length %d tree %x; one by one: length %d tree %x",
			hb.Length, hb.TreeHash, ho.Length, ho.TreeHash)
	}
	checkSameRecords(t, "a large batch against one by one", kv, mem, big.Key(), uint64(len(entries)))
	got, err := big.Read(0, uint64(len(entries)))
	if err != nil {
		t.Fatal(err)
	}
	for i := range entries {
		if !bytes.Equal(got[i], entries[i]) {
			t.Fatalf("entry %d read back as %q, want %q", i, got[i], entries[i])
		}
	}
	for _, r := range [][2]uint64{{0, 1}, {36, 38}, {500, 900}, {0, uint64(len(entries))}} {
		p, err := big.Proof(r[0], r[1], 0)
		if err != nil {
			t.Fatal(err)
		}
		if p.Head.TreeHash != hb.TreeHash {
			t.Fatalf("proof of [%d, %d) against another head", r[0], r[1])
		}
		if err := p.Verify(got[r[0]:r[1]]); err != nil {
			t.Fatalf("proof of [%d, %d): %v", r[0], r[1], err)
		}
	}
}
