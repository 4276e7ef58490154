package apply

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/crow-sync/crow/conflicts"
	"github.com/crow-sync/crow/feed"
	"github.com/crow-sync/crow/store"
)

// node is one instance: a badger DB, its own feed (Log) written by a real
// store.Writer, the replicas of others' feeds, conflicts and an Applier.
type node struct {
	tb      testing.TB
	id      string
	dir     string
	inMem   bool
	db      *store.DB
	log     *feed.Log
	rs      *feed.Replicas
	w       *store.Writer
	cs      *conflicts.Store
	ap      *Applier
	applied []string // OnApplied calls: table/row_id
	opts    func(*Options)
	stop    func()
	// memTable, if set, is the badger memtable size (small: small transactions).
	memTable int64
	// statfs and now, if set, are the store's free-space reading and clock.
	statfs store.Statfs
	now    func() time.Time
}

func keyOf(id string) ed25519.PrivateKey {
	s := sha256.Sum256([]byte("test-key/" + id))
	return ed25519.NewKeyFromSeed(s[:])
}

var testEpoch = time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC)

// newNode opens (or reopens) the instance id in dir ("" = in memory).
func newNode(tb testing.TB, id, dir string, opts func(*Options)) *node {
	tb.Helper()
	n := &node{tb: tb, id: id, dir: dir, inMem: dir == "", opts: opts}
	n.open()
	tb.Cleanup(n.close)
	return n
}

// journal is the node's feed log as the store's write path takes it (the
// daemon's adapter is sync/feeds.Feeds.Journal).
type journal struct{ l *feed.Log }

func (j journal) Stage(txn *store.Txn, entries [][]byte) (func(), error) {
	return j.l.Stage(txn, entries)
}

func (n *node) open() {
	tb := n.tb
	tb.Helper()
	clock := func() time.Time { return testEpoch }
	if n.now != nil {
		clock = n.now
	}
	db, err := store.Open(n.dir, store.Options{InMemory: n.inMem, Now: clock, MemTableSize: n.memTable, Statfs: n.statfs})
	if err != nil {
		tb.Fatal(err)
	}
	bs := feed.NewKVStorage(db)
	l, err := feed.OpenLog(bs, keyOf(n.id))
	if err != nil {
		tb.Fatal(err)
	}
	w, err := store.NewWriter(db, store.WriterOptions{InstanceID: n.id, Journal: journal{l}})
	if err != nil {
		tb.Fatal(err)
	}
	n.db, n.log, n.w = db, l, w
	n.rs = feed.OpenReplicas(bs, l.Key())
	n.cs = conflicts.NewStore(db, clock)
	o := Options{DB: db, Replicas: n.rs, Conflicts: n.cs, Self: l.Key(), InstanceID: n.id,
		OnApplied: func(table string, r *store.Row) { n.applied = append(n.applied, table+"/"+r.RowID) }}
	if n.opts != nil {
		n.opts(&o)
	}
	if n.ap, err = New(o); err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := w.Serve(ctx); err != nil {
			tb.Errorf("writer %s: %v", n.id, err)
		}
	}()
	n.stop = func() {
		cancel()
		<-done
		if err := db.Close(); err != nil {
			tb.Errorf("closing %s: %v", n.id, err)
		}
	}
}

func (n *node) close() {
	if n.stop != nil {
		n.stop()
		n.stop = nil
	}
}

// reopen simulates a restart (a crash after the last commit: nothing that was
// not committed survives).
func (n *node) reopen() {
	n.close()
	n.open()
}

func (n *node) write(m store.Mutation) error {
	_, err := n.w.Write(context.Background(), m)
	return err
}

func (n *node) mustWrite(m store.Mutation) {
	n.tb.Helper()
	if err := n.write(m); err != nil {
		n.tb.Fatalf("%s: %v", n.id, err)
	}
}

func (n *node) put(table, row, data string) {
	n.tb.Helper()
	n.mustWrite(store.Mutation{Table: table, RowID: row, Op: store.OpPut, Data: json.RawMessage(data)})
}

func (n *node) del(table, row string) {
	n.tb.Helper()
	n.mustWrite(store.Mutation{Table: table, RowID: row, Op: store.OpDelete})
}

func (n *node) catchUp() int {
	n.tb.Helper()
	c, err := n.ap.CatchUp(context.Background())
	if err != nil {
		n.tb.Fatalf("%s: catch up: %v", n.id, err)
	}
	return c
}

func (n *node) get(table, row string) *store.Row {
	n.tb.Helper()
	r, err := n.db.Get(table, row)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		n.tb.Fatal(err)
	}
	return r
}

func (n *node) conflicts() []conflicts.Conflict {
	n.tb.Helper()
	cs, err := n.cs.List(conflicts.Filter{})
	if err != nil {
		n.tb.Fatal(err)
	}
	return cs
}

// length of feed key held by n (0 if none).
func (n *node) length(key feed.PublicKey) (uint64, uint64) {
	s, err := n.rs.State(key)
	if errors.Is(err, feed.ErrNotFound) {
		return 0, 0
	}
	if err != nil {
		n.tb.Fatal(err)
	}
	return s.Length, s.Head.Length
}

// pull copies entries of feed key from src (its own feed or a replica it
// holds) into dst's replica, up to index upto (capped at what src holds), with
// a proof, as the sync protocol would. It reports whether anything moved.
func pull(tb testing.TB, dst, src *node, key feed.PublicKey, upto uint64) bool {
	tb.Helper()
	have, haveHead := dst.length(key)
	srcLen, srcHead := src.length(key)
	upto = min(upto, srcLen)
	if upto <= have || srcHead < haveHead {
		return false
	}
	since := uint64(0)
	if haveHead > 0 && haveHead < srcHead {
		since = haveHead
	}
	p, err := src.rs.Proof(key, have, upto, since)
	if err != nil {
		tb.Fatalf("proof of %s from %s: %v", key, src.id, err)
	}
	entries, cleared, err := src.rs.ReadSparse(key, have, upto)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := dst.rs.ApplySparse(p, entries, cleared); err != nil {
		tb.Fatalf("%s applying %s [%d,%d) from %s: %v", dst.id, key, have, upto, src.id, err)
	}
	return true
}

// syncAll pulls every author's whole feed into every other node and applies.
func syncAll(tb testing.TB, nodes ...*node) {
	tb.Helper()
	for _, dst := range nodes {
		for _, src := range nodes {
			if src != dst {
				pull(tb, dst, src, src.log.Key(), ^uint64(0))
			}
		}
		dst.catchUp()
	}
}

// liveRow is the comparable part of a row envelope.
type liveRow struct {
	Data       string
	LamportTS  uint64
	InstanceID string
	VV         string
	Deleted    bool
}

func vvString(v store.VV) string {
	ids := make([]string, 0, len(v))
	for id, c := range v {
		if c > 0 {
			ids = append(ids, fmt.Sprintf("%s:%d", id, c))
		}
	}
	sort.Strings(ids)
	return fmt.Sprint(ids)
}

func canon(tb testing.TB, d json.RawMessage) string {
	c, err := conflicts.Canonical(d)
	if err != nil {
		tb.Fatal(err)
	}
	return string(c)
}

// snapshot returns every row (tombstones included) of the synced tables.
func (n *node) snapshot() map[string]liveRow {
	n.tb.Helper()
	out := map[string]liveRow{}
	err := n.db.View(func(txn *store.Txn) error {
		for _, t := range []string{store.TableMemories, store.TableNotes, store.TableCrowContext} {
			err := txn.ScanRows(t, func(r *store.Row) error {
				out[t+"/"+r.RowID] = liveRow{canon(n.tb, r.Data), r.LamportTS, r.InstanceID, vvString(r.VV), r.Deleted}
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		n.tb.Fatal(err)
	}
	return out
}

// conflictSet returns the records without their local fields (created_at,
// resolution), sorted by id.
func (n *node) conflictSet() []string {
	n.tb.Helper()
	var out []string
	for _, c := range n.conflicts() {
		out = append(out, fmt.Sprintf("%s %s/%s %s win=%s@%d%s del=%v %s lose=%s@%d%s del=%v %s",
			c.ID, c.TableName, c.RowID, c.Op,
			c.WinningInstanceID, c.WinningLamportTS, vvString(c.WinningVV), c.WinningDeleted, c.WinningData,
			c.LosingInstanceID, c.LosingLamportTS, vvString(c.LosingVV), c.LosingDeleted, c.LosingData))
	}
	slices.Sort(out)
	return out
}
