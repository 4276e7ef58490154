package feeds_test

import (
	"fmt"
	"testing"

	crowsync "github.com/crow-sync/crow/sync"
)

// BenchmarkFullSyncCleared: a fresh replica (in this process, unlike
// BenchmarkFullSync) syncs a 100,000-entry feed over libp2p on loopback,
// with none or 1% of its entries cleared (every 100th), fully verified and
// stored with fsync. Compare the two entries/s.
func BenchmarkFullSyncCleared(b *testing.B) {
	const n = 100_000
	for _, every := range []int{0, 100} {
		name := "cleared=0%"
		if every > 0 {
			name = fmt.Sprintf("cleared=%d%%", 100/every)
		}
		b.Run(name, func(b *testing.B) {
			k := newKey(b)
			a := newInst(b, "a", k, k)
			fillAuthor(b, a, n)
			if every > 0 {
				var idx []uint64
				for i := uint64(every / 2); i < n; i += uint64(every) {
					idx = append(idx, i)
				}
				if err := a.log.Clear(idx...); err != nil {
					b.Fatal(err)
				}
			}
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				kr := newKey(b)
				r := newInst(b, "r", kr, kr)
				w := watchStored(r, a.self())
				w.want.Store(n)
				ha, hr := newHost(b, a, r.id), newHost(b, r, a.id)
				a.start(ha, benchOpts())
				b.StartTimer()
				r.start(hr, benchOpts(), crowsync.Peer{ID: a.id, Addrs: ha.Addrs()})
				<-w.reached
				b.StopTimer()
				if got := r.length(a.self()); got != n {
					b.Fatalf("replica holds %d", got)
				}
				r.close()
				a.stop()
				b.StartTimer()
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "entries/s")
		})
	}
}
