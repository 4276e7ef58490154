package feeds_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"testing"

	"github.com/crow-sync/crow/feed"
	"github.com/crow-sync/crow/store"
	crowsync "github.com/crow-sync/crow/sync"
	"github.com/crow-sync/crow/sync/feeds"
	"github.com/crow-sync/crow/sync/wire"
)

func drained(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return false
	default:
		return true
	}
}

func TestJournalSignalsChangedOnCommit(t *testing.T) {
	a := newInst(t, "a", newKey(t), newKey(t))
	if hs, err := a.feeds.Heads(); err != nil || len(hs) != 0 {
		t.Fatalf("empty own feed announced: %v %v", hs, err)
	}
	j := a.feeds.Journal(a.log)
	// An aborted transaction signals nothing.
	errAbort := errors.New("abort")
	err := a.db.Update(context.Background(), func(txn *store.Txn) error {
		if _, err := j.Stage(txn, [][]byte{[]byte("x")}); err != nil {
			t.Fatal(err)
		}
		return errAbort
	})
	if !errors.Is(err, errAbort) {
		t.Fatal(err)
	}
	if !drained(a.feeds.Changed()) {
		t.Fatal("Changed signalled before commit")
	}
	a.appendN(3, 10, 3, "a")
	if drained(a.feeds.Changed()) {
		t.Fatal("Changed not signalled after commit")
	}
	hs, err := a.feeds.Heads()
	if err != nil || len(hs) != 1 || hs[0].Length != 3 || hs[0].Feed != wire.FeedKey(a.self()) {
		t.Fatalf("heads %+v %v", hs, err)
	}
}

func TestVerifyHead(t *testing.T) {
	a := newInst(t, "a", newKey(t), newKey(t))
	b := newInst(t, "b", newKey(t), newKey(t))
	a.appendN(10, 10, 5, "a")
	h := a.log.Head()
	good := wire.Head{Feed: wire.FeedKey(a.self()), Length: 10, Signed: mustHead(h)}
	if _, err := b.feeds.VerifyHead(good); err != nil {
		t.Fatal(err)
	}
	bad := h
	bad.Signature[3] ^= 1
	for name, wh := range map[string]wire.Head{
		"bad signature":     {Feed: good.Feed, Length: 10, Signed: mustHead(bad)},
		"length over head":  {Feed: good.Feed, Length: 11, Signed: good.Signed},
		"other feed's head": {Feed: wire.FeedKey(b.self()), Length: 10, Signed: good.Signed},
		"garbage":           {Feed: good.Feed, Length: 1, Signed: []byte{1, 2, 3}},
	} {
		if _, err := b.feeds.VerifyHead(wh); !errors.Is(err, crowsync.ErrRejected) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Not replicated.
	c := feeds.New(b.log, b.reps, feeds.Options{Logger: quiet, Allow: func(feed.PublicKey) bool { return false }})
	if _, err := c.VerifyHead(good); !errors.Is(err, crowsync.ErrUnknownFeed) {
		t.Fatalf("not allowed: %v", err)
	}
	// The own feed: an older head is fine, a head a did not sign is a fork.
	a.appendN(5, 10, 5, "a")
	if _, err := a.feeds.VerifyHead(good); err != nil {
		t.Fatalf("older own head: %v", err)
	}
	clone := newInst(t, "clone", a.key, newKey(t))
	clone.appendN(12, 10, 12, "clone")
	ch := clone.log.Head()
	for _, n := range []int{12, 16} {
		if n == 16 {
			clone.appendN(4, 10, 4, "clone")
			ch = clone.log.Head()
		}
		_, err := a.feeds.VerifyHead(wire.Head{Feed: good.Feed, Length: 1, Signed: mustHead(ch)})
		var fe *feed.ForkError
		if !errors.Is(err, crowsync.ErrFork) || !errors.As(err, &fe) || fe.Other != ch {
			t.Fatalf("own-key head of length %d from a clone: %v", n, err)
		}
	}
}

func TestReadRangeAndStore(t *testing.T) {
	a := newInst(t, "a", newKey(t), newKey(t))
	b := newInst(t, "b", newKey(t), newKey(t))
	a.appendN(100, 100, 100, "a")
	k := wire.FeedKey(a.self())
	if _, err := a.feeds.ReadRange(k, 100, 200, 1<<20); !errors.Is(err, crowsync.ErrNotFound) {
		t.Fatalf("past the end: %v", err)
	}
	if _, err := b.feeds.ReadRange(k, 0, 1, 1<<20); !errors.Is(err, crowsync.ErrNotFound) {
		t.Fatalf("feed not held: %v", err)
	}
	// maxBytes cuts the range, but never below one entry.
	r, err := a.feeds.ReadRange(k, 0, 100, 250)
	if err != nil || len(r.Entries) != 2 || r.Head.Length != 100 {
		t.Fatalf("cut range: %d entries, %v", len(r.Entries), err)
	}
	r, err = a.feeds.ReadRange(k, 5, 100, 1)
	if err != nil || len(r.Entries) != 1 || r.Start != 5 {
		t.Fatalf("one-entry range: %v", err)
	}
	// [5,6) does not extend b's empty replica.
	if _, err := b.feeds.VerifyAndStore(r); err == nil || errors.Is(err, crowsync.ErrRejected) {
		t.Fatalf("non-contiguous range: %v (want a retryable error)", err)
	}
	r, _ = a.feeds.ReadRange(k, 0, 40, 1<<20)
	// A proof that does not match the range is rejected.
	r2 := r
	r2.Start = 1
	if _, err := b.feeds.VerifyAndStore(r2); !errors.Is(err, crowsync.ErrRejected) {
		t.Fatalf("mismatched proof: %v", err)
	}
	h, err := b.feeds.VerifyAndStore(r)
	if err != nil || h.Length != 40 || drained(b.feeds.Changed()) {
		t.Fatalf("store: %+v %v", h, err)
	}
	if n, _ := b.stored.Load(a.self()); n != uint64(40) {
		t.Fatalf("OnStored: %v", n)
	}
	// b serves its prefix onward, proven against the head of 100 it verified.
	r, err = b.feeds.ReadRange(k, 10, 60, 1<<20)
	if err != nil || r.End() != 40 || r.Head.Length != 40 {
		t.Fatalf("relay read: %+v %v", r.Head, err)
	}
	var p feed.Proof
	if err := p.UnmarshalBinary(r.Proof); err != nil || p.Head.Length != 100 {
		t.Fatalf("relay proof against %d: %v", p.Head.Length, err)
	}
	if err := p.Verify(r.Entries); err != nil {
		t.Fatal(err)
	}
	// The own feed is not taken from peers.
	r, _ = b.feeds.ReadRange(k, 0, 10, 1<<20)
	if _, err := a.feeds.VerifyAndStore(r); !errors.Is(err, crowsync.ErrUnknownFeed) {
		t.Fatalf("own feed from a peer: %v", err)
	}
}

func mustHead(h feed.Head) []byte {
	b, err := h.MarshalBinary()
	if err != nil {
		panic(err)
	}
	return b
}

// TestChangesMadeBeforeTheFeeds: a journal from a Changes made before the
// Feeds (the daemon's order: the Writer exists before the Feeds' Allow rule
// can be built) signals the Feeds' Changed.
func TestChangesMadeBeforeTheFeeds(t *testing.T) {
	a := newInst(t, "a", newKey(t), newKey(t))
	changes := feeds.NewChanges()
	j := changes.Journal(a.log)
	f := feeds.New(a.log, a.reps, feeds.Options{Logger: quiet, Changes: changes})
	var commit func()
	if err := a.db.Update(context.Background(), func(txn *store.Txn) error {
		var err error
		commit, err = j.Stage(txn, [][]byte{[]byte("x")})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if !drained(f.Changed()) {
		t.Fatal("Changed signalled before the commit func ran")
	}
	commit()
	if drained(f.Changed()) {
		t.Fatal("Changed not signalled after commit")
	}
	changes.Notify()
	changes.Notify() // coalesces, never blocks
	if drained(f.Changed()) || !drained(f.Changed()) {
		t.Fatal("two notifies did not coalesce into one wake-up")
	}
}

// A restored copy (same key, its own branch) that meets a head of the
// genuine branch marks its own log forked: local appends are refused, the
// own feed is no longer announced, and the state survives a reopen.
func TestOwnForkStopsLocalWrites(t *testing.T) {
	key := newKey(t)
	genuine := newInst(t, "genuine", key, newKey(t))
	genuine.appendN(6, 10, 3, "common")
	copyOf := newInst(t, "copy", key, newKey(t))
	copyOf.appendN(6, 10, 3, "common") // the same entries: the copy was taken here
	genuine.appendN(4, 10, 4, "genuine")
	copyOf.appendN(2, 10, 2, "fork")
	gh := genuine.log.Head()
	_, err := copyOf.feeds.VerifyHead(wire.Head{Feed: wire.FeedKey(key.Public().(ed25519.PublicKey)), Length: gh.Length, Signed: mustHead(gh)})
	if !errors.Is(err, crowsync.ErrFork) {
		t.Fatalf("genuine head on the copy: %v", err)
	}
	fe := copyOf.log.Forked()
	if fe == nil || fe.Other != gh || fe.Held.Length != 8 {
		t.Fatalf("own fork evidence %+v", fe)
	}
	if hs, err := copyOf.feeds.Heads(); err != nil || len(hs) != 0 {
		t.Fatalf("a forked own feed is announced: %+v %v", hs, err)
	}
	err = copyOf.db.Update(context.Background(), func(txn *store.Txn) error {
		_, err := copyOf.feeds.Journal(copyOf.log).Stage(txn, [][]byte{[]byte("more")})
		return err
	})
	if !errors.Is(err, feed.ErrOwnForked) {
		t.Fatalf("a local write on the forked copy: %v", err)
	}
	copyOf.close()
	copyOf.open()
	if fe := copyOf.log.Forked(); fe == nil || fe.Other != gh {
		t.Fatalf("after reopen: %+v", fe)
	}
	// The genuine instance meeting the copy's head also sees a fork, of
	// its own feed: that is the same rule (it cannot tell which is the copy);
	// the copy no longer announces it, so in practice only the copy learns.
}
