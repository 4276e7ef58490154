package feeds_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/crow-sync/crow/feed"
	crowsync "github.com/crow-sync/crow/sync"
	"github.com/crow-sync/crow/sync/protocol"
	"github.com/crow-sync/crow/sync/wire"
)

// entryTag is the unique prefix appendN writes into entry k.
func entryTag(tag string, k uint64) []byte { return []byte(fmt.Sprintf("%s-%d-", tag, k)) }

// rawHolds closes in's store, scans every key and value of its badger
// directory for b and reopens the store.
func rawHolds(t *testing.T, in *inst, tags [][]byte) []int {
	t.Helper()
	in.close()
	defer in.open()
	db, err := badger.Open(badger.DefaultOptions(in.dir).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var found []int
	err = db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.DefaultIteratorOptions)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			for j, tag := range tags {
				if bytes.Contains(v, tag) || bytes.Contains(it.Item().Key(), tag) {
					found = append(found, j)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// holdsSparse reports whether in holds all of src's feed with exactly the
// entries in cleared cleared (their leaves those of src's data) and the
// others' data, proven against the head it holds.
func holdsSparse(t *testing.T, in, src *inst, orig [][]byte, cleared []uint64) bool {
	t.Helper()
	n := uint64(len(orig))
	if in.length(src.self()) != n {
		return false
	}
	data, cls, err := in.reps.ReadSparse(src.self(), 0, n)
	if err != nil {
		t.Fatal(err)
	}
	var got []uint64
	for _, c := range cls {
		got = append(got, c.Index)
		if c.Hash != feed.LeafHash(orig[c.Index]) {
			t.Fatalf("%s: leaf of cleared entry %d is not the entry's", in.name, c.Index)
		}
	}
	if !slices.Equal(got, cleared) {
		t.Fatalf("%s holds cleared %v, want %v", in.name, got, cleared)
	}
	for i, d := range data {
		if d != nil && !bytes.Equal(d, orig[i]) {
			t.Fatalf("%s: entry %d differs", in.name, i)
		}
	}
	p, err := in.reps.Proof(src.self(), 0, n, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.VerifySparse(data, cls); err != nil {
		t.Fatalf("%s: %v", in.name, err)
	}
	return true
}

// An author clears entries of its feed; a replica syncing afterwards gets
// every entry, verifies and stores the cleared ones cleared, clears one
// more of its own, and serves the feed onward to a third instance that
// never held the data: no rejection anywhere, the raw keyspaces hold no
// cleared entry, and appends after the clear replicate live.
func TestClearedEntriesReplicate(t *testing.T) {
	c := newCluster(t, 64, "a", "b", "c")
	a, b, cc := c.n("a"), c.n("b"), c.n("c")
	a.appendN(600, 60, 50, "a")
	orig, err := a.log.Read(0, 600)
	if err != nil {
		t.Fatal(err)
	}
	byA := []uint64{0, 15, 16, 100, 101, 102, 103, 104, 105, 599}
	if err := a.log.Clear(byA...); err != nil {
		t.Fatal(err)
	}
	c.start("a", "b")
	c.start("b", "a")
	c.waitFor("b has a", func() bool { return holdsSparse(t, b, a, orig, byA) })
	byB := append(slices.Clone(byA), 300)
	slices.Sort(byB)
	if err := b.reps.Clear(a.self(), 300); err != nil {
		t.Fatal(err)
	}
	a.stop()
	b.stop()
	c.start("b", "c")
	c.start("c", "b")
	c.waitFor("c has a through b", func() bool { return holdsSparse(t, cc, a, orig, byB) })
	noTrouble(t, a, b, cc)
	b.stop()
	cc.stop()

	var tags [][]byte
	for _, i := range byB {
		tags = append(tags, entryTag("a", i))
	}
	if found := rawHolds(t, cc, tags); len(found) != 0 {
		t.Fatalf("c's store holds cleared entries %v", found)
	}
	if found := rawHolds(t, b, tags); len(found) != 0 {
		t.Fatalf("b's store holds cleared entries %v", found)
	}
	// a did not clear 300 (b did, on its own replica).
	if found := rawHolds(t, a, tags); len(found) != 1 || found[0] != slices.Index(byB, 300) {
		t.Fatalf("a's store holds %v of the entries it cleared", found)
	}

	// Appends after the clear replicate (a → b → c).
	c.start("a", "b")
	c.start("b", "a", "c")
	c.start("c", "b")
	more := make([]byte, 60)
	copy(more, "a-600-")
	if _, err := a.feeds.Append([][]byte{more}); err != nil {
		t.Fatal(err)
	}
	c.waitFor("c has the new entry", func() bool {
		return holdsSparse(t, cc, a, append(slices.Clone(orig), more), byB)
	})
	noTrouble(t, a, b, cc)
}

// A range whose cleared claim does not carry the entry's leaf is rejected
// like tampered data and nothing of it is stored; a relay lying that way is
// rejected over the network too.
func TestForgedClearedRejected(t *testing.T) {
	c := newCluster(t, 64, "a", "b", "c")
	a, b, cc := c.n("a"), c.n("b"), c.n("c")
	a.appendN(200, 40, 50, "a")
	if err := a.log.Clear(10, 11); err != nil {
		t.Fatal(err)
	}
	r, err := a.feeds.ReadRange(wire.FeedKey(a.self()), 0, 200, 1<<20)
	if err != nil || len(r.Cleared) != 2 || r.Entries[10] != nil {
		t.Fatalf("range %v: %d cleared", err, len(r.Cleared))
	}
	if got := wire.Encode(&wire.Data{Range: r})[1]; got != wire.TypeDataCleared {
		t.Fatalf("sent as type %#x", got)
	}
	forge := map[string]func(r *wire.Range){
		"wrong leaf": func(r *wire.Range) { r.Cleared[1].Leaf[0] ^= 1 },
		"wrong size": func(r *wire.Range) { r.Cleared[0].Size-- },
		"claim on an entry with another's leaf": func(r *wire.Range) {
			r.Cleared = append(r.Cleared, wire.Cleared{Index: 50, Size: r.Cleared[0].Size, Leaf: r.Cleared[0].Leaf})
			r.Entries[50] = nil
		},
		"cleared data dropped without a leaf": func(r *wire.Range) { r.Cleared = r.Cleared[:1] },
	}
	for name, f := range forge {
		fr := r
		fr.Entries = slices.Clone(r.Entries)
		fr.Cleared = slices.Clone(r.Cleared)
		f(&fr)
		if _, err := b.feeds.VerifyAndStore(fr); !errors.Is(err, crowsync.ErrRejected) {
			t.Errorf("%s: %v", name, err)
		}
		if n := b.length(a.self()); n != 0 {
			t.Fatalf("%s: %d entries stored", name, n)
		}
	}
	if _, err := b.feeds.VerifyAndStore(r); err != nil {
		t.Fatalf("the genuine range: %v", err)
	}
	// Over the network: b relays a's feed with a forged leaf.
	lying := &forgingLeaves{Feeds: b.feeds}
	b.serving = lying
	c.start("b", "c")
	c.start("c", "b")
	c.waitFor("rejection", func() bool { return cc.eventsOf(protocol.EventRejected) > 0 })
	if n := cc.length(a.self()); n != 0 {
		t.Fatalf("c stored %d entries from a lying relay", n)
	}
}

// forgingLeaves serves ranges with the first cleared entry's leaf altered.
type forgingLeaves struct{ crowsync.Feeds }

func (f *forgingLeaves) ReadRange(k wire.FeedKey, start, end uint64, maxBytes int) (wire.Range, error) {
	r, err := f.Feeds.ReadRange(k, start, end, maxBytes)
	if err == nil && len(r.Cleared) > 0 {
		r.Cleared = slices.Clone(r.Cleared)
		r.Cleared[0].Leaf[0] ^= 1
	}
	return r, err
}

// Cleared entries replicate over real libp2p hosts on loopback.
func TestClearedOverLibp2p(t *testing.T) {
	k1, k2 := newKey(t), newKey(t)
	a, b := newInst(t, "a", k1, k1), newInst(t, "b", k2, k2)
	ha, hb := newHost(t, a, b.id), newHost(t, b, a.id)
	a.appendN(3000, 200, 500, "a")
	orig, err := a.log.Read(0, 3000)
	if err != nil {
		t.Fatal(err)
	}
	var cl []uint64
	for i := uint64(7); i < 3000; i += 97 {
		cl = append(cl, i)
	}
	if err := a.log.Clear(cl...); err != nil {
		t.Fatal(err)
	}
	o := nodeOpts{batch: 1000, tick: 50 * time.Millisecond}
	a.start(ha, o, crowsync.Peer{ID: b.id, Addrs: hb.Addrs()})
	b.start(hb, o)
	waitReal(t, func() bool { return b.length(a.self()) == 3000 })
	holdsSparse(t, b, a, orig, cl)
	noTrouble(t, a, b)
}
