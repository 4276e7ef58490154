package feed

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// A copy of a feed's storage that appends on its own branch meets a head of
// the genuine branch: the copy's log is marked forked, refuses appends and
// stages, and still is after a reopen on badger.
func TestOwnForkMarkedPersistsAndRefuses(t *testing.T) {
	dir := t.TempDir()
	db := openBadger(t, dir)
	rng := rand.New(rand.NewPCG(3, 4))
	entries := randEntries(rng, 12, 20)
	l, err := OpenLog(newBadgerStorage(db), testKey(7))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(entries[:4]); err != nil {
		t.Fatal(err)
	}
	// The genuine branch: the same key, 4 common entries, then 6 others.
	genuine, err := OpenLog(NewMemStorage(), testKey(7))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := genuine.Append(entries[:4]); err != nil {
		t.Fatal(err)
	}
	gh, err := genuine.Append(entries[6:12])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(entries[4:6]); err != nil { // the copy's own branch
		t.Fatal(err)
	}
	if l.Forked() != nil {
		t.Fatal("forked before any evidence")
	}
	other, err := OpenLog(NewMemStorage(), testKey(8))
	if err != nil {
		t.Fatal(err)
	}
	oh, err := other.Append(entries[:1])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.MarkForked(oh); !errors.Is(err, ErrWrongFeed) {
		t.Fatalf("marked forked by a head of another feed: %v", err)
	}
	fe, err := l.MarkForked(gh)
	if err != nil {
		t.Fatal(err)
	}
	if fe.Held.Length != 6 || fe.Other != gh || fe.Verify() != nil {
		t.Fatalf("evidence %+v", fe)
	}
	if _, err := l.Append(entries[:1]); !errors.Is(err, ErrOwnForked) {
		t.Fatalf("append on a forked log: %v", err)
	}
	txn := newTxn(db)
	if _, err := l.Stage(txn, entries[:1]); !errors.Is(err, ErrOwnForked) {
		t.Fatalf("stage on a forked log: %v", err)
	}
	txn.Discard()
	if l.Head().Length != 6 {
		t.Fatalf("head moved: %d", l.Head().Length)
	}
	// A shorter head does not replace the evidence; a longer one does.
	if fe2, err := l.MarkForked(gh); err != nil || fe2 != fe {
		t.Fatalf("second mark: %+v %v", fe2, err)
	}
	gh2, err := genuine.Append(entries[:2])
	if err != nil {
		t.Fatal(err)
	}
	if fe3, err := l.MarkForked(gh2); err != nil || fe3.Other != gh2 || fe3.Held.Length != 6 {
		t.Fatalf("longer head: %+v %v", fe3, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openBadger(t, dir)
	defer db.Close()
	l2, err := OpenLog(newBadgerStorage(db), testKey(7))
	if err != nil {
		t.Fatal(err)
	}
	got := l2.Forked()
	if got == nil || got.Other != gh2 || got.Held.Length != 6 {
		t.Fatalf("after reopen: %+v", got)
	}
	if _, err := l2.Append(entries[:1]); !errors.Is(err, ErrOwnForked) {
		t.Fatalf("append after reopen: %v", err)
	}
}
