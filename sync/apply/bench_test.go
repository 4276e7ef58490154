package apply

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/crow-sync/crow/feed"
	"github.com/crow-sync/crow/store"
)

// BenchmarkApply measures the apply rate of a fresh on-disk instance catching
// up with two replica feeds of 20000 changes each (per-entry checkpoints, one
// fsync per transaction of up to MaxBatch entries), both feeds certified
// through FeedTrust as the daemon wires it (a lookup per batch, an author
// check per entry):
//   - chain: the two writers edit disjoint rows (fast-forwards);
//   - concurrent: both edit the same rows without seeing each other, so half
//     the entries are concurrent and run conflict detection, and most rows
//     end with conflict records.
func BenchmarkApply(b *testing.B) {
	for _, bench := range []struct {
		mode  string
		batch int
	}{{"chain", 256}, {"chain", 1024}, {"chain", 4096}, {"concurrent", 256}, {"concurrent", 1024}, {"concurrent", 4096}} {
		mode := bench.mode
		b.Run(fmt.Sprintf("%s/batch%d", mode, bench.batch), func(b *testing.B) {
			const perFeed, rows, perWrite = 20000, 2000, 200
			x, y := newNode(b, "a", b.TempDir(), nil), newNode(b, "b", b.TempDir(), nil)
			for i := 0; i < perFeed; i += perWrite {
				var mx, my []store.Mutation
				for j := i; j < i+perWrite; j++ {
					row := fmt.Sprintf("r%05d", j%rows)
					data := []byte(fmt.Sprintf(`{"content":"memory %d written by %%s with some text to carry","importance":%d}`, j, j%10))
					ry := row
					if mode == "chain" {
						ry = "y" + row
					}
					mx = append(mx, store.Mutation{Table: store.TableMemories, RowID: row, Op: store.OpPut, Data: []byte(fmt.Sprintf(string(data), "a"))})
					my = append(my, store.Mutation{Table: store.TableMemories, RowID: ry, Op: store.OpPut, Data: []byte(fmt.Sprintf(string(data), "b"))})
				}
				if _, err := x.w.Write(context.Background(), mx...); err != nil {
					b.Fatal(err)
				}
				if _, err := y.w.Write(context.Background(), my...); err != nil {
					b.Fatal(err)
				}
			}
			certified := map[feed.PublicKey]string{x.log.Key(): "a", y.log.Key(): "b"}
			trust := func(k feed.PublicKey) (Trust, string) { return TrustCertified, certified[k] }
			b.ResetTimer()
			var elapsed time.Duration
			var last Stats
			var commit time.Duration
			for range b.N {
				b.StopTimer()
				r := newNode(b, "r", b.TempDir(), func(o *Options) { o.MaxBatch, o.FeedTrust = bench.batch, trust })
				pull(b, r, x, x.log.Key(), perFeed)
				pull(b, r, y, y.log.Key(), perFeed)
				b.StartTimer()
				start := time.Now()
				n, err := r.ap.CatchUp(context.Background())
				elapsed += time.Since(start)
				b.StopTimer()
				if err != nil || n != 2*perFeed {
					b.Fatalf("applied %d: %v", n, err)
				}
				last = r.ap.Stats()
				commit += last.CommitTime
				r.close()
				b.StartTimer()
			}
			b.ReportMetric(float64(2*perFeed*b.N)/elapsed.Seconds(), "changes/s")
			b.ReportMetric(float64(last.Conflicts), "conflicts")
			b.ReportMetric(float64(last.Concurrent), "concurrent")
			b.ReportMetric(100*commit.Seconds()/elapsed.Seconds(), "%commit")
		})
	}
}
