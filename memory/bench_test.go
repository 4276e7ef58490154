package memory

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkServiceAdd measures durable memory.Service.Add calls (validation, JSON, one
// fsynced group-committed transaction with a feed-like fake journal) while the search indexer
// runs alongside, with 1 and 64 concurrent callers.
func BenchmarkServiceAdd(b *testing.B) {
	for _, writers := range []int{1, 64} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			s, env := newService(b)
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
						_, err := s.Add(context.Background(), CreateInput{
							Content: fmt.Sprintf("memory %d: the user prefers small, durable daemons and group commit", i),
							Project: "bench", Tags: []string{"bench"}})
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

// BenchmarkServiceSearch measures memory.Service.Search over 20,000 numbered
// memories of ~25 words drawn with a Zipf law from a 2,000-word vocabulary (a
// copy of the load benchmark's in e2e/load_bench_test.go, whose test helpers
// another package cannot import): the index query and the loading of
// the 20 hits with their numbers, one search per op, 1 and 2 words.
//
//	go test ./memory -run '^$' -bench ServiceSearch -benchtime 3s
func BenchmarkServiceSearch(b *testing.B) {
	s, env := newService(b)
	startNumberer(b, env, nil)
	const n = 20000
	r := rand.New(rand.NewPCG(1, 2))
	vocab := make([]string, 2000)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%x%s", i, strings.Repeat("k", i%3))
	}
	z := rand.NewZipf(r, 1.1, 1, uint64(len(vocab)-1))
	words := func(k int) string {
		w := make([]string, k)
		for i := range w {
			w[i] = vocab[z.Uint64()]
		}
		return strings.Join(w, " ")
	}
	for i := 0; i < n; i += MaxBulk {
		ins := make([]CreateInput, MaxBulk)
		for j := range ins {
			ins[j] = CreateInput{Content: words(15 + r.IntN(20)), Project: fmt.Sprintf("p%d", r.IntN(8)),
				Tags: []string{fmt.Sprintf("t%d", r.IntN(16))}}
		}
		if _, err := s.AddMany(context.Background(), ins); err != nil {
			b.Fatal(err)
		}
	}
	waitNumbered(b, env.DB, n)
	queries := make([]string, 1024)
	for i := range queries {
		queries[i] = words(1 + r.IntN(2))
	}
	var hits int
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		res, err := s.Search(context.Background(), SearchOptions{Query: queries[i%len(queries)], Limit: 20})
		if err != nil {
			b.Fatal(err)
		}
		if len(res) > 0 && res[0].Number == nil {
			b.Fatalf("hit %s has no number", res[0].ID)
		}
		hits += len(res)
	}
	b.ReportMetric(float64(hits)/float64(b.N), "hits/op")
}
