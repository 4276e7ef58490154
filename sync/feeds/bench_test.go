package feeds_test

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crow-sync/crow/feed"
	crowsync "github.com/crow-sync/crow/sync"
)

// Benchmarks of replication between two instances, each with its own badger
// directory opened like the daemon's (store.Open: SyncWrites), over real
// libp2p hosts on loopback (TCP + Noise + yamux), with full verification.
// Results and the command are in docs/bench/sync.md. They report numbers and
// never assert on time.

const benchEntry = 256

// Tuning knobs, so the benchmark can compare settings without edits.
var (
	benchBatch    = envInt("CROW_BENCH_BATCH", 4096)
	benchMaxBytes = envInt("CROW_BENCH_MAXBYTES", 1<<20)
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func benchOpts() nodeOpts {
	return nodeOpts{batch: uint64(benchBatch), maxBytes: benchMaxBytes, tick: 100 * time.Millisecond}
}

// fillAuthor appends n 256-byte entries to in's own feed in batches of 8192.
func fillAuthor(tb testing.TB, in *inst, n int) {
	tb.Helper()
	e := bytes.Repeat([]byte{'x'}, benchEntry)
	for i := 0; i < n; i += 8192 {
		k := min(8192, n-i)
		es := make([][]byte, k)
		for j := range es {
			es[j] = fmt.Appendf(append([]byte(nil), e...)[:0], "%0*d", benchEntry, i+j)
		}
		if _, err := in.feeds.Append(es); err != nil {
			tb.Fatal(err)
		}
	}
}

// storedWatch makes OnStored of in close reached once feed key holds want.
type storedWatch struct {
	want    atomic.Uint64
	reached chan struct{}
}

func watchStored(in *inst, key feed.PublicKey) *storedWatch {
	w := &storedWatch{reached: make(chan struct{}, 1)}
	in.feeds = newFeedsWithHook(in, func(k feed.PublicKey, st feed.State) {
		if k == key && st.Length >= w.want.Load() {
			select {
			case w.reached <- struct{}{}:
			default:
			}
		}
	})
	in.serving = in.feeds
	return w
}

// vmStatus reads a field (kB) of /proc/self/status.
func vmStatus(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, field+":") {
			f := strings.Fields(l)
			if len(f) >= 2 {
				n, _ := strconv.ParseInt(f[1], 10, 64)
				return n
			}
		}
	}
	return 0
}

// resetPeakRSS resets VmHWM (Linux: "5" > /proc/self/clear_refs).
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

func BenchmarkFullSync(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			k := newKey(b)
			a := newInst(b, "a", k, k)
			fillAuthor(b, a, n)
			var peak int64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				kb := newKey(b)
				r := newInst(b, "b", kb, kb)
				w := watchStored(r, a.self())
				w.want.Store(uint64(n))
				ha, hr := newHost(b, a, r.id), newHost(b, r, a.id)
				a.start(ha, benchOpts())
				resetPeakRSS()
				stopSampling := sampleRSS(b)
				b.StartTimer()
				t0 := time.Now()
				r.start(hr, benchOpts(), crowsync.Peer{ID: a.id, Addrs: ha.Addrs()})
				<-w.reached
				el := time.Since(t0)
				b.StopTimer()
				peak = max(peak, vmStatus("VmHWM"))
				stopSampling()
				b.ReportMetric(float64(n)/el.Seconds(), "entries/s")
				if r.length(a.self()) != uint64(n) {
					b.Fatalf("replica holds %d", r.length(a.self()))
				}
				r.close()
				a.stop()
				b.StartTimer()
			}
			b.ReportMetric(float64(peak)/1024, "peakRSS_MB")
		})
	}
}

// connectedPair returns an author and a replica connected over libp2p and
// synced, with a watch on the replica's copy of the author's feed.
func connectedPair(b *testing.B) (a, r *inst, w *storedWatch) {
	ka, kr := newKey(b), newKey(b)
	a, r = newInst(b, "a", ka, ka), newInst(b, "r", kr, kr)
	w = watchStored(r, a.self())
	ha, hr := newHost(b, a, r.id), newHost(b, r, a.id)
	a.start(ha, benchOpts())
	r.start(hr, benchOpts(), crowsync.Peer{ID: a.id, Addrs: ha.Addrs()})
	return a, r, w
}

// BenchmarkLiveLatency: one entry appended on A (badger txn through the
// store.Journal, fsync) until stored on B (verified, fsync), one at a time.
func BenchmarkLiveLatency(b *testing.B) {
	const n = 2000
	a, _, w := connectedPair(b)
	for i := 0; i < b.N; i++ {
		lat := make([]time.Duration, 0, n)
		for j := 0; j < n; j++ {
			want := a.log.Head().Length + 1
			w.want.Store(want)
			t0 := time.Now()
			a.appendN(1, benchEntry, 1, "live")
			<-w.reached
			lat = append(lat, time.Since(t0))
		}
		slices.Sort(lat)
		b.ReportMetric(float64(lat[n/2].Microseconds())/1000, "p50_ms")
		b.ReportMetric(float64(lat[n*99/100].Microseconds())/1000, "p99_ms")
	}
}

// BenchmarkReconnectCatchUp: B is offline while A appends 1,000 entries (10
// batches); time from B's Node starting (dial, Noise handshake, heads) until
// all 1,000 are stored on B.
func BenchmarkReconnectCatchUp(b *testing.B) {
	const n = 1000
	a, r, w := connectedPair(b)
	a.appendN(10, benchEntry, 10, "warm")
	w.want.Store(10)
	<-w.reached
	var total time.Duration
	for i := 0; i < b.N; i++ {
		r.stop()
		a.appendN(n, benchEntry, 100, "offline")
		w.want.Store(a.log.Head().Length)
		hr := newHost(b, r, a.id)
		t0 := time.Now()
		r.start(hr, benchOpts(), crowsync.Peer{ID: a.id, Addrs: addrsOf(a)})
		<-w.reached
		total += time.Since(t0)
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "catchup_ms")
}

func addrsOf(in *inst) []string { return in.tr.(interface{ Addrs() []string }).Addrs() }

// sampleRSS samples the anonymous and file-backed resident memory every
// 20 ms and reports their peaks when stopped.
func sampleRSS(b *testing.B) (stop func()) {
	done := make(chan struct{})
	out := make(chan [3]int64)
	go func() {
		var m [3]int64
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			m[0] = max(m[0], vmStatus("RssAnon"))
			m[1] = max(m[1], vmStatus("RssFile"))
			m[2] = max(m[2], int64(ms.HeapInuse/1024))
			select {
			case <-done:
				out <- m
				return
			case <-t.C:
			}
		}
	}()
	return func() {
		close(done)
		m := <-out
		b.ReportMetric(float64(m[0])/1024, "peakAnon_MB")
		b.ReportMetric(float64(m[1])/1024, "peakFile_MB")
		b.ReportMetric(float64(m[2])/1024, "peakHeap_MB")
	}
}
