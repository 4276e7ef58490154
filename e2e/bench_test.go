package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"testing"

	"time"

	"github.com/crow-sync/crow/app"
)

// BenchmarkWriteToVisibleLatency measures, through two real daemons on
// loopback, the time from a write acknowledged by A's REST API to the memory
// being served by B's REST API (feed append, push, verify+store, apply,
// commit). B is polled every 200µs, so resolution is ~0.2 ms.
//
//	go test ./e2e -run '^$' -bench WriteToVisible -benchtime 500x
func BenchmarkWriteToVisibleLatency(b *testing.B) {
	home := NewDaemon(b, "home", nil)
	home.Start()
	sat := NewDaemon(b, "laptop", home)
	sat.Start()
	Enrolled(b, home, sat)
	Eventually(b, syncTimeout, "peers connected", func() bool { return converged(home, sat) })

	client := &http.Client{}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m := Must(home, app.MemoryCreate, app.MemoryCreateIn{Content: fmt.Sprintf("latency probe %d", i)})
		acked := time.Now()
		req, _ := http.NewRequest("GET", "http://"+sat.Addr+"/v1/memory/"+m.ID, nil)
		req.Header.Set("Authorization", "Bearer "+sat.Key)
		for {
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
			if time.Since(acked) > 10*time.Second {
				b.Fatalf("write %d not visible on the satellite after 10s", i)
			}
			time.Sleep(200 * time.Microsecond)
		}
		lat = append(lat, time.Since(acked))
	}
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
}

// BenchmarkFederatedSearch measures, on three real daemons with 1,000
// replicated memories, one REST search on home of this instance alone
// (instances=local) and of all three (instances=all: two federated MCP calls
// with bearer tokens, in parallel, merged), so the federation overhead is a
// ratio of the two in the same run.
//
//	go test ./e2e -run '^$' -bench FederatedSearch -benchtime 300x
func BenchmarkFederatedSearch(b *testing.B) {
	home, sats := cluster(b, "laptop", "vps")
	for i := range 1000 {
		words := []string{"alpha", "bravo", "charlie", "delta", "echo"}
		Must(home, app.MemoryCreate, app.MemoryCreateIn{Content: fmt.Sprintf("memory %d about %s and %s", i, words[i%5], words[(i/5)%5])})
	}
	Eventually(b, 2*time.Minute, "1,000 memories everywhere", func() bool {
		for _, d := range sats {
			if page, err := Call(d, app.MemoryList, app.MemoryListIn{Limit: 1000}); err != nil || len(page.Memories) != 1000 {
				return false
			}
		}
		return true
	})
	for _, scope := range []string{"local", "all"} {
		b.Run("instances="+scope, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			for i := 0; i < b.N; i++ {
				start := time.Now()
				res, err := Call(home, app.MemorySearch, app.MemorySearchIn{Query: "delta echo", Limit: 20, Instances: scope})
				lat = append(lat, time.Since(start))
				if err != nil || res.Partial {
					b.Fatalf("search: %+v %v", res, err)
				}
			}
			slices.Sort(lat)
			pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
			b.ReportMetric(pct(0.50), "p50-ms")
			b.ReportMetric(pct(0.99), "p99-ms")
		})
	}
}
