package memory

import (
	"context"
	"fmt"
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
