package feeds_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crow-sync/crow/feed"
	"github.com/crow-sync/crow/store"
	"github.com/crow-sync/crow/sync/feeds"
)

// BenchmarkDaemonWritePath measures durable writes through the daemon's real
// local write path: store.Writer batching concurrent writes into one badger
// transaction with SyncWrites, each batch appended to the instance's real
// signed feed (one Merkle update per entry, one Ed25519 signature per batch)
// through the sync adapter's journal, exactly as cmd/crow wires it.
//
//	go test ./sync/feeds -run '^$' -bench DaemonWritePath -benchtime 3s -count 3
func BenchmarkDaemonWritePath(b *testing.B) {
	data := json.RawMessage(`{"content":"a memory of about two hundred bytes, which is typical of what an AI client stores: a decision, a fact about the user, a todo, a pointer to a file","project":"crow","importance":5}`)
	for _, writers := range []int{1, 64} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			db, err := store.Open(b.TempDir(), store.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			_, priv, _ := ed25519.GenerateKey(nil)
			st := feed.NewKVStorage(db)
			own, err := feed.OpenLog(st, priv)
			if err != nil {
				b.Fatal(err)
			}
			ad := feeds.New(own, feed.OpenReplicas(st, own.Key()), feeds.Options{})
			w, err := store.NewWriter(db, store.WriterOptions{InstanceID: "bench", Journal: ad.Journal(own)})
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			served := make(chan error, 1)
			go func() { served <- w.Serve(ctx) }()
			defer func() { cancel(); <-served }()

			var n atomic.Int64
			before := w.Stats()
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for range writers {
				wg.Go(func() {
					for {
						i := n.Add(1)
						if i > int64(b.N) {
							return
						}
						if _, err := w.Write(ctx, store.Mutation{Table: store.TableNotes, RowID: fmt.Sprintf("r%09d", i), Op: store.OpInsert, Data: data}); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			el := time.Since(start)
			b.StopTimer()
			s := w.Stats()
			b.ReportMetric(float64(b.N)/el.Seconds(), "writes/s")
			b.ReportMetric(float64(s.Commits-before.Commits)/float64(s.Mutations-before.Mutations), "commits/write")
			if got := own.Head().Length; got != uint64(b.N) {
				b.Fatalf("feed length %d after %d writes", got, b.N)
			}
		})
	}
}
