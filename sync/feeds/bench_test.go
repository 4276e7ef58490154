package feeds_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crow-sync/crow/feed"
	crowsync "github.com/crow-sync/crow/sync"
	"github.com/crow-sync/crow/sync/transport"
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

// BenchmarkFullSync: the author (this process) serves n entries to a fresh
// receiver running in a child process (this test binary re-run as
// TestFullSyncReceiver), so the reported RSS is the receiving instance's
// alone: VmHWM (reset when its Node starts) and the peaks of RssAnon,
// RssFile and the Go heap sampled every 20 ms. The author's own peaks during
// the sync are reported with an "author_" prefix (this process also holds
// the benchmark itself).
func BenchmarkFullSync(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			k := newKey(b)
			a := newInst(b, "a", k, k)
			fillAuthor(b, a, n)
			var recv rssPeaks
			var rate float64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				kb := newKey(b)
				rid, err := transport.PeerIDFromPublicKey(kb.Public().(ed25519.PublicKey))
				if err != nil {
					b.Fatal(err)
				}
				ha := newHost(b, a, rid)
				a.start(ha, benchOpts())
				resetPeakRSS()
				stopSampling := sampleRSS()
				b.StartTimer()
				res := runReceiver(b, kb, k, ha.Addrs(), n)
				b.StopTimer()
				auth := stopSampling()
				a.stop()
				recv = recv.max(res.peaks)
				rate += float64(n) / res.elapsed.Seconds()
				b.ReportMetric(float64(auth.anon)/1024, "author_anon_MB")
				b.ReportMetric(float64(auth.file)/1024, "author_file_MB")
				b.StartTimer()
			}
			b.ReportMetric(rate/float64(b.N), "entries/s")
			b.ReportMetric(float64(recv.hwm)/1024, "peakRSS_MB")
			b.ReportMetric(float64(recv.anon)/1024, "peakAnon_MB")
			b.ReportMetric(float64(recv.file)/1024, "peakFile_MB")
			b.ReportMetric(float64(recv.heap)/1024, "peakHeap_MB")
		})
	}
}

type receiverResult struct {
	elapsed time.Duration
	peaks   rssPeaks
}

// runReceiver runs TestFullSyncReceiver in a child process: a fresh instance
// with key kb syncing author's feed (n entries) from addrs.
func runReceiver(b *testing.B, kb, author ed25519.PrivateKey, addrs []string, n int) receiverResult {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestFullSyncReceiver$", "-test.count", "1")
	cmd.Env = append(os.Environ(),
		"CROW_BENCH_RECEIVER="+hex.EncodeToString(kb),
		"CROW_BENCH_AUTHOR="+hex.EncodeToString(author.Public().(ed25519.PublicKey)),
		"CROW_BENCH_ADDRS="+strings.Join(addrs, ","),
		"CROW_BENCH_N="+strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("receiver: %v\n%s", err, out)
	}
	for _, l := range strings.Split(string(out), "\n") {
		var r receiverResult
		var ns int64
		if _, err := fmt.Sscanf(l, "CROW_RECEIVER %d %d %d %d %d", &ns, &r.peaks.hwm, &r.peaks.anon, &r.peaks.file, &r.peaks.heap); err == nil {
			r.elapsed = time.Duration(ns)
			return r
		}
	}
	b.Fatalf("receiver printed no result:\n%s", out)
	return receiverResult{}
}

// TestFullSyncReceiver is the receiving side of BenchmarkFullSync; it runs
// only in the child process the benchmark starts.
func TestFullSyncReceiver(t *testing.T) {
	keyHex := os.Getenv("CROW_BENCH_RECEIVER")
	if keyHex == "" {
		t.Skip("runs only as BenchmarkFullSync's child process")
	}
	kb, err := hex.DecodeString(keyHex)
	if err != nil {
		t.Fatal(err)
	}
	apub, err := hex.DecodeString(os.Getenv("CROW_BENCH_AUTHOR"))
	if err != nil {
		t.Fatal(err)
	}
	aid, err := transport.PeerIDFromPublicKey(ed25519.PublicKey(apub))
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(os.Getenv("CROW_BENCH_N"))
	var akey feed.PublicKey
	copy(akey[:], apub)
	r := newInst(t, "b", kb, kb)
	w := watchStored(r, akey)
	w.want.Store(uint64(n))
	hr := newHost(t, r, aid)
	runtime.GC()
	resetPeakRSS()
	stopSampling := sampleRSS()
	t0 := time.Now()
	r.start(hr, benchOpts(), crowsync.Peer{ID: aid, Addrs: strings.Split(os.Getenv("CROW_BENCH_ADDRS"), ",")})
	<-w.reached
	el := time.Since(t0)
	p := stopSampling()
	p.hwm = vmStatus("VmHWM")
	if got := r.length(akey); got != uint64(n) {
		t.Fatalf("replica holds %d", got)
	}
	fmt.Printf("CROW_RECEIVER %d %d %d %d %d\n", el.Nanoseconds(), p.hwm, p.anon, p.file, p.heap)
	r.close()
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

// BenchmarkLiveLatency: one entry appended on A (store txn through the
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

// rssPeaks are peaks of resident memory in KiB.
type rssPeaks struct{ hwm, anon, file, heap int64 }

func (p rssPeaks) max(q rssPeaks) rssPeaks {
	return rssPeaks{max(p.hwm, q.hwm), max(p.anon, q.anon), max(p.file, q.file), max(p.heap, q.heap)}
}

// sampleRSS samples this process's anonymous and file-backed resident
// memory and Go heap in use every 20 ms until stopped, and returns the peaks.
func sampleRSS() (stop func() rssPeaks) {
	done := make(chan struct{})
	out := make(chan rssPeaks)
	go func() {
		var m rssPeaks
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			m.anon = max(m.anon, vmStatus("RssAnon"))
			m.file = max(m.file, vmStatus("RssFile"))
			m.heap = max(m.heap, int64(ms.HeapInuse/1024))
			select {
			case <-done:
				out <- m
				return
			case <-t.C:
			}
		}
	}()
	return func() rssPeaks {
		close(done)
		return <-out
	}
}
