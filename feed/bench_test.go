package feed

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/crow-sync/crow/store"
	"github.com/dgraph-io/badger/v4"
)

// Benchmarks report entries/s; run with
//
//	go test ./feed/ -run '^$' -bench . -benchtime 3s
//
// Results and the Hypercore comparison are in docs/bench/feed.md.

const benchEntrySize = 256

func benchEntries(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		e := make([]byte, benchEntrySize)
		for j := range e {
			e[j] = byte(i*31 + j)
		}
		out[i] = e
	}
	return out
}

func BenchmarkSign(b *testing.B) {
	priv := testKey(1)
	msg := make([]byte, SignableSize)
	b.ReportAllocs()
	for b.Loop() {
		ed25519.Sign(priv, msg)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "signs/s")
}

func BenchmarkVerifySignature(b *testing.B) {
	priv := testKey(1)
	msg := make([]byte, SignableSize)
	sig := ed25519.Sign(priv, msg)
	pub := priv.Public().(ed25519.PublicKey)
	for b.Loop() {
		ed25519.Verify(pub, msg, sig)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "verifies/s")
}

// benchStore makes a fresh storage; done releases it.
type benchStore func(b *testing.B) (st Storage, done func())

func memBench(b *testing.B) (Storage, func()) { return NewMemStorage(), func() {} }

func badgerBench(sync bool) benchStore {
	return func(b *testing.B) (Storage, func()) {
		db, err := badger.Open(badger.DefaultOptions(b.TempDir()).WithLogger(nil).WithSyncWrites(sync))
		if err != nil {
			b.Fatal(err)
		}
		return newBadgerStorage(db), func() { db.Close() }
	}
}

// daemonBench opens the daemon's store (badger with its options: 4 KiB
// value threshold, so full 16-entry chunks go to the value log; 16 MiB
// memtables; small caches; no RSS trimmer), with or without SyncWrites.
func daemonBench(sync bool) benchStore {
	return func(b *testing.B) (Storage, func()) {
		db := openDaemonStore(b, sync)
		return NewKVStorage(db), func() { db.Close() }
	}
}

func openDaemonStore(b *testing.B, sync bool) *store.DB {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	db, err := store.Open(b.TempDir(), store.Options{Logger: quiet, MappedBudget: -1, NoSyncWrites: !sync})
	if err != nil {
		b.Fatal(err)
	}
	return db
}

// benchStores: "badger" is badger.DefaultOptions (the numbers kept since the
// first measurement), "daemon" the options store.Open uses.
var benchStores = []struct {
	name string
	mk   benchStore
}{
	{"mem", memBench},
	{"badger-fsync", badgerBench(true)},
	{"badger-nofsync", badgerBench(false)},
	{"daemon-fsync", daemonBench(true)},
	{"daemon-nofsync", daemonBench(false)},
}

func BenchmarkAppend(b *testing.B) {
	entries := benchEntries(1000)
	for _, s := range benchStores {
		for _, batch := range []int{1, 100, 1000} {
			b.Run(fmt.Sprintf("store=%s/batch=%d", s.name, batch), func(b *testing.B) {
				const resetEvery = 300_000 // bound memory and disk of long runs
				st, done := s.mk(b)
				l, err := OpenLog(st, testKey(1))
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(batch * benchEntrySize))
				b.ReportAllocs()
				n, j := 0, 0
				for b.Loop() {
					if n >= resetEvery {
						b.StopTimer()
						done()
						st, done = s.mk(b)
						l, _ = OpenLog(st, testKey(1))
						n = 0
						b.StartTimer()
					}
					if j+batch > len(entries) {
						j = 0
					}
					if _, err := l.Append(entries[j : j+batch]); err != nil {
						b.Fatal(err)
					}
					j += batch
					n += batch
				}
				b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "entries/s")
				done()
			})
		}
	}
}

// stageFunc stages entries into a new transaction of its database and
// commits it, returning the Stage's commit func.
type stageFunc func(l *Log, entries [][]byte) (func(), error)

// BenchmarkStage is the daemon's path: Stage into a transaction, commit
// with fsync, advance; badger opened with badger's defaults and the
// daemon's store.
func BenchmarkStage(b *testing.B) {
	entries := benchEntries(1000)
	for _, s := range []struct {
		name string
		mk   func(b *testing.B) (Storage, stageFunc, func())
	}{{"badger", func(b *testing.B) (Storage, stageFunc, func()) {
		db, err := badger.Open(badger.DefaultOptions(b.TempDir()).WithLogger(nil).WithSyncWrites(true))
		if err != nil {
			b.Fatal(err)
		}
		stage := func(l *Log, es [][]byte) (func(), error) {
			txn := newTxn(db)
			defer txn.Discard()
			commit, err := l.Stage(txn, es)
			if err == nil {
				err = txn.Commit()
			}
			return commit, err
		}
		return newBadgerStorage(db), stage, func() { db.Close() }
	}}, {"daemon", func(b *testing.B) (Storage, stageFunc, func()) {
		db := openDaemonStore(b, true)
		stage := func(l *Log, es [][]byte) (commit func(), err error) {
			err = db.Update(context.Background(), func(txn *store.Txn) error {
				commit, err = l.Stage(txn, es)
				return err
			})
			return commit, err
		}
		return NewKVStorage(db), stage, func() { db.Close() }
	}}} {
		for _, batch := range []int{1, 100} {
			b.Run(fmt.Sprintf("store=%s/batch=%d", s.name, batch), func(b *testing.B) {
				st, stage, done := s.mk(b)
				defer done()
				l, _ := OpenLog(st, testKey(1))
				j := 0
				for b.Loop() {
					if j+batch > len(entries) {
						j = 0
					}
					commit, err := stage(l, entries[j:j+batch])
					if err != nil {
						b.Fatal(err)
					}
					commit()
					j += batch
				}
				b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "entries/s")
			})
		}
	}
}

// BenchmarkVerifyRange verifies and stores a 100k-entry range (one proof,
// one signature) into a fresh replica.
func BenchmarkVerifyRange(b *testing.B) {
	const n = 100_000
	entries := benchEntries(n)
	a, _ := OpenLog(NewMemStorage(), testKey(1))
	for i := 0; i < n; i += 1000 {
		a.Append(entries[i : i+1000])
	}
	p, err := a.Proof(0, n, 0)
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range benchStores {
		b.Run("store="+s.name, func(b *testing.B) {
			b.SetBytes(n * benchEntrySize)
			var total time.Duration
			for b.Loop() {
				b.StopTimer()
				st, done := s.mk(b)
				rs := OpenReplicas(st, PublicKey{})
				b.StartTimer()
				t0 := time.Now()
				if _, err := rs.Apply(p, entries); err != nil {
					b.Fatal(err)
				}
				total += time.Since(t0)
				b.StopTimer()
				done()
				b.StartTimer()
			}
			b.ReportMetric(float64(b.N*n)/total.Seconds(), "entries/s")
		})
	}
}

// BenchmarkHashOnly is the floor of verification: leaf hashing of 100k
// 256-byte entries and their parents, no storage, no signature.
func BenchmarkHashOnly(b *testing.B) {
	const n = 100_000
	entries := benchEntries(n)
	w := newWalker(newHasher())
	b.SetBytes(n * benchEntrySize)
	for b.Loop() {
		w.reset()
		for i, e := range entries {
			_ = w.push(Node{Index: 2 * uint64(i), Size: uint64(len(e)), Hash: w.x.leaf(e)})
		}
	}
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "entries/s")
}

// BenchmarkClear: clear one entry (a different one each time) of a
// 100,000-entry own feed, one transaction per Clear.
func BenchmarkClear(b *testing.B) {
	const n = 100_000
	entries := benchEntries(1000)
	for _, s := range benchStores {
		if s.name == "badger-nofsync" || s.name == "badger-fsync" {
			continue
		}
		b.Run("store="+s.name, func(b *testing.B) {
			st, done := s.mk(b)
			defer done()
			l, err := OpenLog(st, testKey(1))
			if err != nil {
				b.Fatal(err)
			}
			for i := 0; i < n; i += len(entries) {
				if _, err := l.Append(entries); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			i := uint64(0)
			for b.Loop() {
				i = (i + 7919) % n // distinct indexes for 100,000 rounds
				if err := l.Clear(i); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReadSparse is what a feed's author does for each range it serves a
// peer: read entries [0, 10,000) as stored on the daemon's store (records
// with data stored leafless and packed; 5 % of the entries cleared).
func BenchmarkReadSparse(b *testing.B) {
	const n = 10_000
	db := openDaemonStore(b, false)
	defer db.Close()
	l, err := OpenLog(NewKVStorage(db), testKey(1))
	if err != nil {
		b.Fatal(err)
	}
	entries := benchEntries(1000)
	for i := 0; i < n; i += len(entries) {
		if _, err := l.Append(entries); err != nil {
			b.Fatal(err)
		}
	}
	var clear []uint64
	for i := uint64(0); i < n; i += 20 {
		clear = append(clear, i)
	}
	if err := l.Clear(clear...); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(n * benchEntrySize)
	b.ReportAllocs()
	for b.Loop() {
		data, cleared, err := l.ReadSparse(0, n)
		if err != nil || len(data) != n || len(cleared) != len(clear) {
			b.Fatalf("%d entries, %d cleared: %v", len(data), len(cleared), err)
		}
	}
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "entries/s")
}
