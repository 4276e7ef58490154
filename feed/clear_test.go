package feed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// markedEntries returns n entries, each holding a unique marker string.
func markedEntries(rng *rand.Rand, n int) [][]byte {
	out := randEntries(rng, n, 40)
	for i := range out {
		out[i] = append(out[i], marker(i)...)
	}
	return out
}

func marker(i int) []byte { return []byte(fmt.Sprintf("<secret-%05d>", i)) }

// rawContains reports whether any value of the database contains b.
func rawContains(t *testing.T, db *badger.DB, b []byte) bool {
	t.Helper()
	found := false
	err := db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.DefaultIteratorOptions)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			if bytes.Contains(v, b) || bytes.Contains(it.Item().Key(), b) {
				found = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// checkFeed checks every entry of a feed of n entries against want (nil:
// cleared, with want's leaf): Read, ReadSparse, and a proof of each entry
// and of the whole range against the head.
func checkFeed(t *testing.T, read func(s, e uint64) ([][]byte, error), sparse func(s, e uint64) ([][]byte, []Cleared, error),
	prove func(s, e uint64) (*Proof, error), orig [][]byte, isCleared map[uint64]bool) {
	t.Helper()
	n := uint64(len(orig))
	data, cl, err := sparse(0, n)
	if err != nil {
		t.Fatal(err)
	}
	ci := 0
	for i := uint64(0); i < n; i++ {
		if isCleared[i] {
			if data[i] != nil {
				t.Fatalf("cleared entry %d read back %q", i, data[i])
			}
			if ci >= len(cl) || cl[ci].Index != i || cl[ci].Hash != LeafHash(orig[i]) || cl[ci].Size != uint64(len(orig[i])) {
				t.Fatalf("leaf of cleared entry %d: %+v", i, cl)
			}
			ci++
			if _, err := read(i, i+1); !errors.Is(err, ErrCleared) {
				t.Fatalf("Read of cleared %d: %v", i, err)
			}
		} else {
			if !bytes.Equal(data[i], orig[i]) {
				t.Fatalf("entry %d differs", i)
			}
			got, err := read(i, i+1)
			if err != nil || !bytes.Equal(got[0], orig[i]) {
				t.Fatalf("Read %d: %v", i, err)
			}
		}
		p, err := prove(i, i+1)
		if err != nil {
			t.Fatal(err)
		}
		var one []Cleared
		if isCleared[i] {
			one = []Cleared{cl[ci-1]}
		}
		if err := p.VerifySparse(data[i:i+1], one); err != nil {
			t.Fatalf("proof of entry %d: %v", i, err)
		}
	}
	if ci != len(cl) {
		t.Fatalf("%d leaves for %d cleared", len(cl), ci)
	}
	p, err := prove(0, n)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.VerifySparse(data, cl); err != nil {
		t.Fatalf("proof of the whole feed: %v", err)
	}
	if err := p.Head.Verify(); err != nil {
		t.Fatal(err)
	}
}

func TestLogClear(t *testing.T) {
	db := openBadger(t, t.TempDir())
	defer func() { db.Close() }()
	rng := rand.New(rand.NewPCG(21, 22))
	orig := markedEntries(rng, 100)
	orig[40] = []byte{} // nothing to clear
	l, err := OpenLog(newBadgerStorage(db), testKey(1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(orig[:90]); err != nil {
		t.Fatal(err)
	}
	h := l.Head()
	// The first chunk, a run across two chunks, the partial tail chunk
	// [80, 90), a duplicate.
	clearSet := []uint64{0, 3, 16, 17, 18, 31, 64, 85, 89, 3}
	if err := l.Clear(append(clearSet, 40)...); err != nil {
		t.Fatal(err)
	}
	if err := l.Clear(clearSet...); err != nil { // idempotent
		t.Fatal(err)
	}
	if l.Head() != h {
		t.Fatal("clear changed the head")
	}
	isCleared := map[uint64]bool{}
	for _, i := range clearSet {
		isCleared[i] = true
	}
	checkFeed(t, l.Read, l.ReadSparse, func(s, e uint64) (*Proof, error) { return l.Proof(s, e, 0) }, orig[:90], isCleared)
	if _, err := l.Read(0, 90); !errors.Is(err, ErrCleared) {
		t.Fatalf("Read over cleared: %v", err)
	}
	if got, err := l.Read(40, 41); err != nil || len(got[0]) != 0 {
		t.Fatalf("empty entry after clear: %q %v", got, err)
	}
	// Appends go on, continuing the cleared tail chunk.
	if _, err := l.Append(orig[90:]); err != nil {
		t.Fatal(err)
	}
	if l.Head().TreeHash != refTreeHash(orig, 100) {
		t.Fatal("tree after clear and append differs from the reference")
	}
	for i := range orig {
		if i == 40 {
			continue
		}
		if got := rawContains(t, db, marker(i)); got == isCleared[uint64(i)] {
			t.Fatalf("entry %d: marker in the KV = %v, cleared %v", i, got, isCleared[uint64(i)])
		}
	}
	// Reopen: the stored tree still matches its head; the clears stay.
	if l, err = OpenLog(newBadgerStorage(db), testKey(1)); err != nil {
		t.Fatal(err)
	}
	checkFeed(t, l.Read, l.ReadSparse, func(s, e uint64) (*Proof, error) { return l.Proof(s, e, 0) }, orig, isCleared)
	// An old head still verifies against the feed (append-only).
	p, err := l.Proof(0, 0, h.Length)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.VerifyUpgrade(&h, nil); err != nil {
		t.Fatal(err)
	}
	if err := l.Clear(100); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("clear beyond the head: %v", err)
	}
}

// A Clear between a Stage and its commit: the Stage writes a new key beyond
// the stored entries, the Clear rewrites the keys holding stored ones, so
// both take effect whichever commits first.
func TestLogClearBetweenStageAndCommit(t *testing.T) {
	db := openBadger(t, t.TempDir())
	defer db.Close()
	rng := rand.New(rand.NewPCG(5, 6))
	orig := markedEntries(rng, 20)
	l, _ := OpenLog(newBadgerStorage(db), testKey(1))
	l.Append(orig[:5])
	l.Append(orig[5:10]) // entries 5-9 in a part of chunk 0
	txn := newTxn(db)
	commit, err := l.Stage(txn, orig[10:12])
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Clear(2, 7); err != nil {
		t.Fatal(err)
	}
	if err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	commit()
	checkFeed(t, l.Read, l.ReadSparse, func(s, e uint64) (*Proof, error) { return l.Proof(s, e, 0) }, orig[:12], map[uint64]bool{2: true, 7: true})
	if l.Head().TreeHash != refTreeHash(orig, 12) {
		t.Fatal("tree differs from the reference")
	}
}

// Appends of one to a few entries fill chunks with parts; clearing entries
// in bases and in parts, across parts and chunks, drops exactly their data.
func TestLogClearInParts(t *testing.T) {
	db := openBadger(t, t.TempDir())
	defer func() { db.Close() }()
	rng := rand.New(rand.NewPCG(23, 24))
	orig := markedEntries(rng, 60)
	l, err := OpenLog(newBadgerStorage(db), testKey(1))
	if err != nil {
		t.Fatal(err)
	}
	for i, k := 0, 0; i < len(orig); i += k {
		k = min(len(orig)-i, 1+rng.IntN(4))
		if _, err := l.Append(orig[i : i+k]); err != nil {
			t.Fatal(err)
		}
	}
	clearSet := []uint64{0, 1, 5, 6, 7, 15, 16, 30, 31, 32, 33, 47, 59}
	if err := l.Clear(clearSet...); err != nil {
		t.Fatal(err)
	}
	isCleared := map[uint64]bool{}
	for _, i := range clearSet {
		isCleared[i] = true
	}
	checkFeed(t, l.Read, l.ReadSparse, func(s, e uint64) (*Proof, error) { return l.Proof(s, e, 0) }, orig, isCleared)
	for i := range orig {
		if got := rawContains(t, db, marker(i)); got == isCleared[uint64(i)] {
			t.Fatalf("entry %d: marker in the KV = %v, cleared %v", i, got, isCleared[uint64(i)])
		}
	}
	if l, err = OpenLog(newBadgerStorage(db), testKey(1)); err != nil {
		t.Fatal(err)
	}
	if l.Head().TreeHash != refTreeHash(orig, uint64(len(orig))) {
		t.Fatal("tree differs from the reference")
	}
	checkFeed(t, l.Read, l.ReadSparse, func(s, e uint64) (*Proof, error) { return l.Proof(s, e, 0) }, orig, isCleared)
}

func TestReplicaClear(t *testing.T) {
	db := openBadger(t, t.TempDir())
	defer db.Close()
	rng := rand.New(rand.NewPCG(23, 24))
	orig := markedEntries(rng, 70)
	a, _ := OpenLog(NewMemStorage(), testKey(1))
	a.Append(orig[:50])
	a.Append(orig[50:])
	st := newBadgerStorage(db)
	rs := OpenReplicas(st, pk(testKey(9)))
	p, _ := a.Proof(0, 70, 0)
	if _, err := rs.Apply(p, orig); err != nil {
		t.Fatal(err)
	}
	key := a.Key()
	cl := []uint64{5, 33, 34, 69}
	isCleared := map[uint64]bool{5: true, 33: true, 34: true, 69: true}
	if err := rs.Clear(key, cl...); err != nil {
		t.Fatal(err)
	}
	read := func(s, e uint64) ([][]byte, error) { return rs.Read(key, s, e) }
	sparse := func(s, e uint64) ([][]byte, []Cleared, error) { return rs.ReadSparse(key, s, e) }
	prove := func(s, e uint64) (*Proof, error) { return rs.Proof(key, s, e, s) }
	checkFeed(t, read, sparse, prove, orig, isCleared)
	for i := range orig {
		if got := rawContains(t, db, marker(i)); got == isCleared[uint64(i)] {
			t.Fatalf("entry %d: marker in the KV = %v, cleared %v", i, got, isCleared[uint64(i)])
		}
	}
	// Served onward: a fresh replica verifies the sparse range in two
	// requests and stores the cleared entries as cleared.
	db2 := openBadger(t, t.TempDir())
	defer db2.Close()
	rs2 := OpenReplicas(newBadgerStorage(db2), PublicKey{})
	for _, r := range [][2]uint64{{0, 34}, {34, 70}} {
		data, cls, err := rs.ReadSparse(key, r[0], r[1])
		if err != nil {
			t.Fatal(err)
		}
		p, err := rs.Proof(key, r[0], r[1], r[0])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rs2.ApplySparse(p, data, cls); err != nil {
			t.Fatalf("range %v: %v", r, err)
		}
	}
	checkFeed(t, func(s, e uint64) ([][]byte, error) { return rs2.Read(key, s, e) },
		func(s, e uint64) ([][]byte, []Cleared, error) { return rs2.ReadSparse(key, s, e) },
		func(s, e uint64) (*Proof, error) { return rs2.Proof(key, s, e, 0) }, orig, isCleared)
	for _, i := range cl {
		if rawContains(t, db2, marker(int(i))) {
			t.Fatalf("fresh replica holds cleared entry %d", i)
		}
	}
	// A range with the data of an entry held cleared does not refill it.
	p, _ = a.Proof(0, 70, 0)
	if _, err := rs2.Apply(p, orig); err != nil {
		t.Fatal(err)
	}
	if _, err := rs2.Read(key, 5, 6); !errors.Is(err, ErrCleared) {
		t.Fatalf("refilled: %v", err)
	}
	// Errors.
	if err := rs.Clear(key, 70); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("clear beyond the length: %v", err)
	}
	if err := rs.Clear(pk(testKey(9)), 0); !errors.Is(err, ErrWrongFeed) {
		t.Fatalf("clear of own feed: %v", err)
	}
	if err := rs.Clear(pk(testKey(7)), 0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("clear of unknown feed: %v", err)
	}
}

// A "cleared" claim must carry the entry's leaf: a wrong hash, a wrong
// size, data beside it or a malformed list is rejected like a bad proof,
// and nothing is stored.
func TestForgedClearedRejected(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	orig := markedEntries(rng, 40)
	a, _ := OpenLog(NewMemStorage(), testKey(1))
	a.Append(orig)
	p, _ := a.Proof(0, 40, 0)
	good := func() ([][]byte, []Cleared) {
		data := append([][]byte(nil), orig...)
		data[3], data[20] = nil, nil
		return data, []Cleared{
			{Index: 3, Size: uint64(len(orig[3])), Hash: LeafHash(orig[3])},
			{Index: 20, Size: uint64(len(orig[20])), Hash: LeafHash(orig[20])},
		}
	}
	cases := map[string]func(d [][]byte, c []Cleared) ([][]byte, []Cleared){
		"wrong hash":   func(d [][]byte, c []Cleared) ([][]byte, []Cleared) { c[1].Hash[0] ^= 1; return d, c },
		"wrong size":   func(d [][]byte, c []Cleared) ([][]byte, []Cleared) { c[0].Size++; return d, c },
		"zero size":    func(d [][]byte, c []Cleared) ([][]byte, []Cleared) { c[0].Size = 0; return d, c },
		"with data":    func(d [][]byte, c []Cleared) ([][]byte, []Cleared) { d[3] = orig[3]; return d, c },
		"out of order": func(d [][]byte, c []Cleared) ([][]byte, []Cleared) { c[0], c[1] = c[1], c[0]; return d, c },
		"outside":      func(d [][]byte, c []Cleared) ([][]byte, []Cleared) { c[1].Index = 40; return d, c },
		"other leaf": func(d [][]byte, c []Cleared) ([][]byte, []Cleared) {
			c[1].Hash = LeafHash(orig[21])
			c[1].Size = uint64(len(orig[21]))
			return d, c
		},
	}
	for name, forge := range cases {
		t.Run(name, func(t *testing.T) {
			rs := OpenReplicas(NewMemStorage(), PublicKey{})
			d, c := forge(good())
			if err := p.VerifySparse(d, c); !errors.Is(err, ErrInvalidProof) {
				t.Fatalf("VerifySparse: %v", err)
			}
			if _, err := rs.ApplySparse(p, d, c); !errors.Is(err, ErrInvalidProof) {
				t.Fatalf("ApplySparse: %v", err)
			}
			if _, err := rs.State(a.Key()); !errors.Is(err, ErrNotFound) {
				t.Fatalf("something was stored: %v", err)
			}
		})
	}
	rs := OpenReplicas(NewMemStorage(), PublicKey{})
	d, c := good()
	if _, err := rs.ApplySparse(p, d, c); err != nil {
		t.Fatalf("the genuine sparse range: %v", err)
	}
}

// faultKV fails the Set number failAt (counted over all transactions) of
// an Update, as a crash or a full disk would, so that transaction does not
// commit.
type faultKV struct {
	badgerKV
	sets, failAt int
}

var errInjected = errors.New("injected fault")

type faultTxn struct {
	*badgerTxn
	kv *faultKV
}

func (t faultTxn) Set(k, v []byte) error {
	t.kv.sets++
	if t.kv.sets == t.kv.failAt {
		return errInjected
	}
	return t.badgerTxn.Set(k, v)
}

func (k *faultKV) View(fn func(KVTxn) error) error {
	return k.badgerKV.View(func(t *badgerTxn) error { return fn(t) })
}

func (k *faultKV) Update(ctx context.Context, fn func(KVTxn) error) error {
	return k.badgerKV.Update(ctx, func(t *badgerTxn) error { return fn(faultTxn{t, k}) })
}

func (k *faultKV) NewWriteBatch() KVBatch { return k.db.NewWriteBatch() }

// Clear is one transaction: a fault while rewriting the second of three
// chunks leaves every entry as it was, and the Clear can be repeated.
func TestClearCrashSafe(t *testing.T) {
	db := openBadger(t, t.TempDir())
	defer db.Close()
	rng := rand.New(rand.NewPCG(27, 28))
	orig := markedEntries(rng, 60)
	kv := &faultKV{badgerKV: badgerKV{db}}
	l, err := OpenLog(NewKVStorage[KVTxn, KVBatch](kv), testKey(1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(orig); err != nil {
		t.Fatal(err)
	}
	cl := []uint64{2, 20, 50}
	kv.sets, kv.failAt = 0, 2
	if err := l.Clear(cl...); !errors.Is(err, errInjected) {
		t.Fatalf("clear with a fault: %v", err)
	}
	got, err := l.Read(0, 60)
	if err != nil {
		t.Fatalf("after the failed clear: %v", err)
	}
	for i := range got {
		if !bytes.Equal(got[i], orig[i]) {
			t.Fatalf("entry %d changed by the failed clear", i)
		}
	}
	kv.failAt = 0
	if err := l.Clear(cl...); err != nil {
		t.Fatal(err)
	}
	checkFeed(t, l.Read, l.ReadSparse, func(s, e uint64) (*Proof, error) { return l.Proof(s, e, 0) }, orig,
		map[uint64]bool{2: true, 20: true, 50: true})
}

// MemStorage clears like KVStorage.
func TestMemClear(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 30))
	orig := markedEntries(rng, 33)
	l, _ := OpenLog(NewMemStorage(), testKey(1))
	l.Append(orig)
	if err := l.Clear(0, 32); err != nil {
		t.Fatal(err)
	}
	checkFeed(t, l.Read, l.ReadSparse, func(s, e uint64) (*Proof, error) { return l.Proof(s, e, 0) }, orig,
		map[uint64]bool{0: true, 32: true})
}
