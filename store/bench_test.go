package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crow-sync/crow/store"
	"github.com/crow-sync/crow/store/storetest"
)

// BenchmarkWriterDurable measures durable (fsynced) writes through store.Writer with a fake
// journal that hashes each entry, writes it and its hash into the txn and signs each batch
// (storetest.Journal). It reports writes/s and commits (≈ fsyncs) per write.
func BenchmarkWriterDurable(b *testing.B) {
	data := json.RawMessage(`{"content":"a memory of about two hundred bytes, which is typical of what an AI client stores: a decision, a fact about the user, a todo, a pointer to a file","project":"crow","importance":5}`)
	for _, writers := range []int{1, 64} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			env := storetest.Start(b, b.TempDir())
			var n atomic.Int64
			before := env.Writer.Stats()
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
						_, err := env.Writer.Write(context.Background(), store.Mutation{
							Table: store.TableNotes, RowID: fmt.Sprintf("r%09d", i), Op: store.OpInsert, Data: data})
						if err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			el := time.Since(start)
			b.StopTimer()
			st := env.Writer.Stats()
			b.ReportMetric(float64(b.N)/el.Seconds(), "writes/s")
			b.ReportMetric(float64(st.Commits-before.Commits)/float64(st.Mutations-before.Mutations), "commits/write")
		})
	}
}

// BenchmarkWriterMemoriesNoSync measures the Writer's CPU cost per write, without fsync:
// 64 writers insert memory-shaped rows across 10 projects, and every fourth write moves an
// earlier memory to another project (what the maintained counts follow per project and
// category).
func BenchmarkWriterMemoriesNoSync(b *testing.B) {
	env := storetest.StartOptions(b, b.TempDir(), store.Options{NoSyncWrites: true})
	var n atomic.Int64
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for {
				i := n.Add(1)
				if i > int64(b.N) {
					return
				}
				m := store.Mutation{Table: store.TableMemories, RowID: fmt.Sprintf("m%09d", i), Op: store.OpInsert,
					Data: json.RawMessage(fmt.Sprintf(`{"content":"a memory of about two hundred bytes, which is typical of what an AI client stores: a decision, a fact about the user, a todo","project":"p%d","category":"c%d","importance":5}`, i%10, i%3))}
				if i%4 == 0 && i > 64 {
					m.RowID, m.Op = fmt.Sprintf("m%09d", i-64), store.OpPut
				}
				if _, err := env.Writer.Write(context.Background(), m); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "writes/s")
}
