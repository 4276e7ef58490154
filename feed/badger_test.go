package feed

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

func openBadger(t testing.TB, dir string) *badger.DB {
	t.Helper()
	db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil).WithSyncWrites(true))
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func TestBadgerStageAndReopen(t *testing.T) {
	dir := t.TempDir()
	db := openBadger(t, dir)
	rng := rand.New(rand.NewPCG(12, 13))
	entries := randEntries(rng, 50, 30)
	l, err := OpenLog(newBadgerStorage(db), testKey(1))
	if err != nil {
		t.Fatal(err)
	}
	// Stage with a row write in the same txn, committed.
	txn := newTxn(db)
	commit, err := l.Stage(txn, entries[:10])
	if err != nil {
		t.Fatal(err)
	}
	if err := txn.Set([]byte("t/memories/1"), []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if l.Head().Length != 0 {
		t.Fatal("head moved before commit")
	}
	if err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	commit()
	if l.Head().Length != 10 {
		t.Fatalf("head %d after commit", l.Head().Length)
	}
	// Stage, then abort: nothing changes, in memory or on disk.
	txn = newTxn(db)
	if _, err := l.Stage(txn, entries[10:20]); err != nil {
		t.Fatal(err)
	}
	txn.Discard()
	if l.Head().Length != 10 {
		t.Fatal("aborted stage moved the head")
	}
	if _, err := l.Read(0, 11); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("read past aborted stage: %v", err)
	}
	// The next Stage reuses the indexes; the superseded commit panics.
	txn = newTxn(db)
	stale, _ := l.Stage(txn, entries[10:12])
	txn.Discard()
	txn = newTxn(db)
	commit, err = l.Stage(txn, entries[10:20])
	if err != nil {
		t.Fatal(err)
	}
	if err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	commit()
	func() {
		defer func() {
			if recover() == nil {
				t.Error("superseded commit did not panic")
			}
		}()
		stale()
	}()
	// Append (own transaction), then restart.
	if _, err := l.Append(entries[20:50]); err != nil {
		t.Fatal(err)
	}
	h := l.Head()
	db.Close()

	db = openBadger(t, dir)
	defer db.Close()
	l, err = OpenLog(newBadgerStorage(db), testKey(1))
	if err != nil {
		t.Fatal(err)
	}
	if l.Head() != h {
		t.Fatalf("head after reopen %+v, want %+v", l.Head(), h)
	}
	if h.TreeHash != refTreeHash(entries, 50) {
		t.Fatal("tree hash differs from reference")
	}
	got, err := l.Read(0, 50)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if string(got[i]) != string(entries[i]) {
			t.Fatalf("entry %d differs", i)
		}
	}
	if _, err := l.Append(entries[:3]); err != nil {
		t.Fatal(err)
	}
	if l.Head().TreeHash != refTreeHash(append(append([][]byte(nil), entries...), entries[:3]...), 53) {
		t.Fatal("append after reopen diverges from reference")
	}
	// The row written beside the feed is there.
	if err := db.View(func(txn *badger.Txn) error { _, err := txn.Get([]byte("t/memories/1")); return err }); err != nil {
		t.Fatal(err)
	}
}

func TestBadgerReplica(t *testing.T) {
	dir := t.TempDir()
	db := openBadger(t, dir)
	rng := rand.New(rand.NewPCG(14, 15))
	entries := randEntries(rng, 3000, 300)
	a, _ := OpenLog(NewMemStorage(), testKey(1))
	a.Append(entries[:1000])
	st := newBadgerStorage(db)
	st.splitBytes = 64 << 10 // exercise the split write path
	self := pk(testKey(2))
	own, _ := OpenLog(st, testKey(2))
	own.Append(entries[:5])
	rs := OpenReplicas(st, self)
	p, _ := a.Proof(0, 600, 0)
	if _, err := rs.Apply(p, entries[:600]); err != nil {
		t.Fatal(err)
	}
	a.Append(entries[1000:])
	p, _ = a.Proof(600, 2000, 1000) // head 3000, entries to 2000
	if _, err := rs.Apply(p, entries[600:2000]); err != nil {
		t.Fatal(err)
	}
	// a random-access proof served before the rest arrives
	p, err := rs.Proof(a.Key(), 100, 1900, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Verify(entries[100:1900]); err != nil {
		t.Fatal(err)
	}
	db.Close()

	db = openBadger(t, dir)
	defer db.Close()
	st = newBadgerStorage(db)
	rs = OpenReplicas(st, self)
	list, err := rs.List()
	if err != nil || len(list) != 2 {
		t.Fatalf("list %v %v", list, err)
	}
	s, _ := rs.State(a.Key())
	if s.Length != 2000 || s.Head.Length != 3000 {
		t.Fatalf("state after reopen %+v", s)
	}
	p, _ = a.Proof(2000, 3000, 3000)
	if _, err := rs.Apply(p, entries[2000:]); err != nil {
		t.Fatal(err)
	}
	got, err := rs.Read(a.Key(), 0, 3000)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if string(got[i]) != string(entries[i]) {
			t.Fatalf("entry %d differs", i)
		}
	}
	// own feed served too
	if p, err := rs.Proof(self, 0, 5, 0); err != nil || p.Verify(entries[:5]) != nil {
		t.Fatalf("own proof: %v", err)
	}
	if err := rs.Delete(a.Key()); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.State(a.Key()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
}

// TestBadgerCrashBeforeState simulates a crash between a split write's
// records and its state: the feed reopens at the old state and the next
// apply overwrites the orphaned records.
func TestBadgerCrashBeforeState(t *testing.T) {
	dir := t.TempDir()
	db := openBadger(t, dir)
	rng := rand.New(rand.NewPCG(16, 17))
	entries := randEntries(rng, 100, 50)
	other := randEntries(rng, 100, 50)
	a, _ := OpenLog(NewMemStorage(), testKey(1))
	a.Append(entries)
	st := newBadgerStorage(db)
	rs := OpenReplicas(st, PublicKey{})
	p, _ := a.Proof(0, 37, 0)
	if _, err := rs.Apply(p, entries[:37]); err != nil {
		t.Fatal(err)
	}
	// Orphan records for [37, 90) (garbage), no state: the crash.
	recs := make([][]byte, 53)
	for i := range recs {
		recs[i] = make([]byte, recordHeader(37+uint64(i))+len(other[i]))
	}
	if err := st.Write(&Batch{Key: a.Key(), Start: 37, Records: recs}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db = openBadger(t, dir)
	defer db.Close()
	rs = OpenReplicas(newBadgerStorage(db), PublicKey{})
	s, err := rs.State(a.Key())
	if err != nil || s.Length != 37 {
		t.Fatalf("state after crash %+v %v", s, err)
	}
	if _, err := rs.Read(a.Key(), 0, 38); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("read past state: %v", err)
	}
	p, _ = a.Proof(37, 100, 100)
	if _, err := rs.Apply(p, entries[37:]); err != nil {
		t.Fatal(err)
	}
	got, err := rs.Read(a.Key(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if string(got[i]) != string(entries[i]) {
			t.Fatalf("entry %d differs", i)
		}
	}
}

// Batches of every size, through Append and Stage (some discarded), stored
// as chunk bases and parts, give the same feed as a log on memory storage,
// before and after a reopen.
func TestBadgerAppendsInParts(t *testing.T) {
	dir := t.TempDir()
	db := openBadger(t, dir)
	rng := rand.New(rand.NewPCG(3, 4))
	entries := randEntries(rng, 900, 40)
	l, err := OpenLog(newBadgerStorage(db), testKey(1))
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := OpenLog(NewMemStorage(), testKey(1))
	reopened := false
	for i, k := 0, 0; i < len(entries); i += k {
		k = min(len(entries)-i, 1+rng.IntN(70))
		es := entries[i : i+k]
		switch rng.IntN(3) {
		case 0:
			if _, err := l.Append(es); err != nil {
				t.Fatal(err)
			}
		default:
			if rng.IntN(4) == 0 { // a discarded stage changes nothing
				txn := newTxn(db)
				if _, err := l.Stage(txn, entries[i:min(len(entries), i+5)]); err != nil {
					t.Fatal(err)
				}
				txn.Discard()
			}
			txn := newTxn(db)
			commit, err := l.Stage(txn, es)
			if err != nil {
				t.Fatal(err)
			}
			if err := txn.Commit(); err != nil {
				t.Fatal(err)
			}
			commit()
		}
		if i >= 400 && !reopened { // reopen mid-chunk: appends go on in parts
			reopened = true
			db.Close()
			db = openBadger(t, dir)
			if l, err = OpenLog(newBadgerStorage(db), testKey(1)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := ref.Append(es); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	db = openBadger(t, dir)
	defer db.Close()
	l, err = OpenLog(newBadgerStorage(db), testKey(1))
	if err != nil {
		t.Fatal(err)
	}
	if l.Head().TreeHash != ref.Head().TreeHash {
		t.Fatal("tree differs from the reference")
	}
	got, err := l.Read(0, uint64(len(entries)))
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if string(got[i]) != string(entries[i]) {
			t.Fatalf("entry %d differs", i)
		}
	}
	for _, n := range []uint64{33, 900} {
		p, err := l.Proof(0, n, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := OpenReplicas(NewMemStorage(), PublicKey{}).Apply(p, got[:n]); err != nil {
			t.Fatal(err)
		}
	}
}

// recordingTxn records the keys and value sizes a Stage sets.
type recordingTxn struct {
	*badgerTxn
	sets map[string]int
}

func (t *recordingTxn) Set(key, val []byte) error {
	t.sets[string(key)] = len(val)
	return t.badgerTxn.Set(key, val)
}

// An append writes its own records only: one entry appended to a partial
// chunk is one key (the chunk's part at the entry's offset) holding that
// entry's record, whatever the chunk holds already; the entries stay
// readable from bases and parts, and a proof of each verifies.
func TestBadgerAppendWritesOnlyItsRecords(t *testing.T) {
	db := openBadger(t, t.TempDir())
	defer db.Close()
	rng := rand.New(rand.NewPCG(8, 9))
	entries := randEntries(rng, 40, 300)
	l, err := OpenLog(newBadgerStorage(db), testKey(1))
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range entries {
		txn := &recordingTxn{newTxn(db), map[string]int{}}
		commit, err := l.Stage(txn, [][]byte{e})
		if err != nil {
			t.Fatal(err)
		}
		want := string(chunkKey(l.Key(), uint64(i)))
		if len(txn.sets) != 2 { // the records' key and the state
			t.Fatalf("entry %d: %d keys set", i, len(txn.sets))
		}
		size := 4 + recordHeader(uint64(i)) + len(e)
		if len(e) > 0 {
			size -= nodeWireSize // stored leafless
		}
		if n, ok := txn.sets[want]; !ok || n != size {
			t.Fatalf("entry %d: key %x set with %d bytes (%v), want its record only (%d)", i, want, n, ok, size)
		}
		if _, ok := txn.sets[string(feedKey('s', l.Key()))]; !ok {
			t.Fatalf("entry %d: state not set", i)
		}
		if (i%chunkEntries == 0) != (len(want) == entryKeyLen) {
			t.Fatalf("entry %d: key of %d bytes", i, len(want))
		}
		if err := txn.Commit(); err != nil {
			t.Fatal(err)
		}
		commit()
	}
	got, err := l.Read(0, uint64(len(entries)))
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if string(got[i]) != string(entries[i]) {
			t.Fatalf("entry %d differs", i)
		}
		p, err := l.Proof(uint64(i), uint64(i)+1, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Verify(got[i : i+1]); err != nil {
			t.Fatalf("proof of %d: %v", i, err)
		}
	}
	if l.Head().TreeHash != refTreeHash(entries, uint64(len(entries))) {
		t.Fatal("tree differs from the reference")
	}
}
