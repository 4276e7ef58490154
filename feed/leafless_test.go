package feed

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// TestLeaflessRecords: a record with data is stored without its leaf node
// (no leaf hash of an entry with data is anywhere in the database), and
// every record reads back exactly as the memory storage holds it, leaf
// included, before and after clears (a cleared record keeps its leaf, which
// nothing else could give back); proofs verify; a replica stores what it
// verifies the same way.
func TestLeaflessRecords(t *testing.T) {
	db := openBadger(t, t.TempDir())
	defer func() { db.Close() }()
	rng := rand.New(rand.NewPCG(41, 42))
	orig, _ := hashEntries(rng, 100)
	orig[3], orig[50] = nil, []byte{} // empty entries: their record is the nodes only
	kv, mem := newBadgerStorage(db), NewMemStorage()
	l, err := OpenLog(kv, testKey(1))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := OpenLog(mem, testKey(1))
	if err != nil {
		t.Fatal(err)
	}
	appendBoth := func(entries [][]byte) {
		t.Helper()
		if _, err := l.Append(entries); err != nil {
			t.Fatal(err)
		}
		if _, err := ref.Append(entries); err != nil {
			t.Fatal(err)
		}
	}
	sameRecords := func(st Storage, what string) {
		t.Helper()
		checkSameRecords(t, what, st, mem, l.Key(), l.Head().Length)
	}
	leafStored := func(i int) bool {
		t.Helper()
		leaf := LeafHash(orig[i])
		return rawContains(t, db, leaf[:])
	}
	for _, part := range [][2]int{{0, 5}, {5, 40}, {40, 41}, {41, 90}} { // chunk bases and parts
		appendBoth(orig[part[0]:part[1]])
	}
	for i := range 90 {
		if stored := leafStored(i); stored != (len(orig[i]) == 0) {
			t.Fatalf("entry %d (%d bytes): leaf stored %v", i, len(orig[i]), stored)
		}
	}
	sameRecords(kv, "log")

	clearSet := []uint64{0, 5, 7, 16, 17, 40, 63, 89}
	if err := l.Clear(clearSet...); err != nil {
		t.Fatal(err)
	}
	if err := ref.Clear(clearSet...); err != nil {
		t.Fatal(err)
	}
	isCleared := map[uint64]bool{}
	for _, i := range clearSet {
		isCleared[i] = true
		if !leafStored(int(i)) {
			t.Fatalf("cleared entry %d: its leaf is not stored", i)
		}
	}
	appendBoth(orig[90:])
	sameRecords(kv, "log after clears")
	checkFeed(t, l.Read, l.ReadSparse, func(s, e uint64) (*Proof, error) { return l.Proof(s, e, 0) }, orig, isCleared)

	// A replica of it, in another database.
	db2, kv2, _ := replicate(t, l, 100)
	sameRecords(kv2, "replica")
	for i := range 100 {
		leaf := LeafHash(orig[i])
		if stored := rawContains(t, db2, leaf[:]); stored != (len(orig[i]) == 0 || isCleared[uint64(i)]) {
			t.Fatalf("replica entry %d: leaf stored %v", i, stored)
		}
	}
}

// TestLeaflessFrameFormat freezes a leafless record's bytes on disk: the
// length word with bit 30 set (and 31 when the data is packed), the nodes
// after the leaf, the data; a record whose first node is not its data's
// leaf is stored whole.
func TestLeaflessFrameFormat(t *testing.T) {
	data0 := []byte(`{"h":"` + strings.Repeat("5a", 32) + `"}`)
	data1 := []byte(`plain`)
	leaf0 := Node{Index: 0, Size: uint64(len(data0)), Hash: LeafHash(data0)}
	leaf1 := Node{Index: 2, Size: uint64(len(data1)), Hash: LeafHash(data1)}
	parent := Node{Index: 1, Size: leaf0.Size + leaf1.Size, Hash: ParentHash(leaf0.Size+leaf1.Size, leaf0.Hash, leaf1.Hash)}
	rec0 := make([]byte, nodeWireSize, nodeWireSize+len(data0))
	putNode(rec0, &leaf0)
	rec0 = append(rec0, data0...)
	rec1 := make([]byte, 2*nodeWireSize, 2*nodeWireSize+len(data1))
	putNode(rec1, &leaf1)
	putNode(rec1[nodeWireSize:], &parent)
	rec1 = append(rec1, data1...)
	got := packRecords([][]byte{rec0, rec1}, 0)
	want := "c0000028" + hex.EncodeToString([]byte(`{"h":`)) + "ff01" + strings.Repeat("5a", 32) + "7d" +
		"4000002d" + hex.EncodeToString(rec1[nodeWireSize:])
	if hex.EncodeToString(got) != want {
		t.Fatalf("leafless frames changed:\ngot  %x\nwant %s", got, want)
	}
	recs := storedRecords(t, got, 0)
	if len(recs) != 2 || !bytes.Equal(recs[0], rec0) || !bytes.Equal(recs[1], rec1) {
		t.Fatalf("read back %x", recs)
	}

	// A first node that is not the data's leaf is kept.
	wrong := bytes.Clone(rec0)
	wrong[0] ^= 1
	if got := packRecords([][]byte{wrong}, 0); binary.BigEndian.Uint32(got)&leaflessRecord != 0 {
		t.Fatalf("a record whose leaf is not its data's was stored leafless: %x", got)
	}
	// A leafless record without data cannot be restored.
	if _, err := recordOf(1, rec1[nodeWireSize:2*nodeWireSize], leaflessRecord); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("leafless record without data: %v", err)
	}
}

// replicate stores entries [0, n) of l, with their proof, in a replica in a
// new database, closed when the test ends.
func replicate(t *testing.T, l *Log, n uint64) (*badger.DB, *KVStorage, *Replicas) {
	t.Helper()
	db := openBadger(t, t.TempDir())
	t.Cleanup(func() { db.Close() })
	kv := newBadgerStorage(db)
	rs := OpenReplicas(kv, PublicKey{9})
	p, err := l.Proof(0, n, 0)
	if err != nil {
		t.Fatal(err)
	}
	data, cleared, err := l.ReadSparse(0, n)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rs.ApplySparse(p, data, cleared); err != nil {
		t.Fatal(err)
	}
	return db, kv, rs
}

// storedRecords returns the records of stored frames v (entries [first, …))
// as they were written.
func storedRecords(t *testing.T, v []byte, first uint64) [][]byte {
	t.Helper()
	var recs [][]byte
	if _, err := eachFrame(v, first, func(i uint64, rec []byte, flags uint32) error {
		r, err := recordOf(i, rec, flags)
		recs = append(recs, r)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return recs
}

// checkSameRecords fails t unless st holds records [0, n) of feed key as ref does, read one
// at a time and as a run (Reader.Records).
func checkSameRecords(t *testing.T, what string, st, ref Storage, key PublicKey, n uint64) {
	t.Helper()
	err := st.View(func(r Reader) error {
		return ref.View(func(m Reader) error {
			for i := range n {
				got, err := r.Record(key, i)
				if err != nil {
					return err
				}
				want, err := m.Record(key, i)
				if err != nil {
					return err
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("%s: record %d read back as %x, want %x", what, i, got, want)
				}
			}
			i := uint64(0)
			return r.Records(key, 0, n, func(j uint64, rec []byte) error {
				want, err := m.Record(key, j)
				if err != nil {
					return err
				}
				if j != i || !bytes.Equal(rec, want) {
					t.Fatalf("%s: Records gave record %d as %x, want %d: %x", what, j, rec, i, want)
				}
				i++
				return nil
			})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}
