package e2e

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var (
	loadClients = flag.Int("load.clients", 64, "BenchmarkLoad64: concurrent REST clients (half write, half search)")
	loadPreload = flag.Int("load.preload", 2000, "BenchmarkLoad64: memories written before the measured run")
	loadPprof   = flag.String("load.pprof", "", "BenchmarkLoad64: serve the daemon's net/http/pprof on this loopback HOST:PORT (CROW_PPROF)")
	loadSamples = flag.String("load.samples", "", "BenchmarkLoad64: write every measured request to this file: a first line \"# start\" and the run's wall-clock start, then one line each: start (µs after it), latency (µs), write (true/false)")
	loadRate    = flag.Float64("load.rate", 0, "BenchmarkLoad64: offered load in requests/s over all clients (open loop, each client on a fixed schedule, latency measured from the scheduled send); 0: closed loop, each client sends as soon as answered")
)

// BenchmarkLoad64 runs 64 concurrent clients against one real daemon over its
// REST API on loopback: half of them POST /v1/memory (a new ~25-word memory
// each time), half GET /v1/memories/search (one or two words of the same
// vocabulary, limit 20), each client sending its next request as soon as the
// last one is answered (keep-alive connections, one per client). b.N is the
// total number of requests of the measured run, after a preload of
// -load.preload memories. It reports the throughput and the p50/p95/p99 of
// writes and of searches separately; a non-2xx answer fails the benchmark.
//
//	go test ./e2e -run '^$' -bench BenchmarkLoad64 -benchtime 20000x
//
// With -load.rate R the load is open: the same 64 clients, but client c sends
// its k-th request at start + (c/64 + k)·64/R (a fixed schedule, staggered
// across clients, as wrk2 does), and a request's latency runs from its
// scheduled time, not from when it could be sent, so a slow answer that delays
// the client's next requests counts against those too (no coordinated
// omission). A closed loop measures the most the daemon can do, and its
// latency is then the queue that 64 clients make (Little's law: 64 / rate);
// the open loop measures the latency at a given rate.
//
//	go test ./e2e -run '^$' -bench BenchmarkLoad64 -benchtime 20000x -load.rate 1275
//
// The figures are recorded in docs/benchmarks/load.md.
func BenchmarkLoad64(b *testing.B) {
	d := NewDaemon(b, "home", nil)
	if *loadPprof != "" {
		d.Env = append(d.Env, "CROW_PPROF="+*loadPprof)
	}
	d.Start()

	vocab := loadVocab()
	hc := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{
		MaxIdleConns: 2 * *loadClients, MaxIdleConnsPerHost: 2 * *loadClients, IdleConnTimeout: time.Minute,
	}}
	defer hc.CloseIdleConnections()
	base := "http://" + d.Addr

	// Preload with the same clients, so searches run over a corpus.
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	for c := range *loadClients {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(c), 7))
			for next.Add(1) <= int64(*loadPreload) {
				if err := loadWrite(hc, base, d.Key, r, vocab); err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatalf("preload: %v", err)
	}
	// One search before the clock starts: it returns once the index holds the
	// whole preload, so the measured run does not time the preload's indexing.
	if err := loadSearch(hc, base, d.Key, rand.New(rand.NewPCG(1, 1)), vocab); err != nil {
		b.Fatalf("after the preload: %v", err)
	}

	type sample struct {
		write bool
		d     time.Duration
		at    time.Duration
	}
	per := make([][]sample, *loadClients)
	next.Store(0)
	// Open loop: each client's interval between scheduled sends.
	var every time.Duration
	if *loadRate > 0 {
		every = time.Duration(float64(*loadClients) / *loadRate * float64(time.Second))
	}
	b.ResetTimer()
	start := time.Now()
	for c := range *loadClients {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(c), 11))
			write := c%2 == 0
			for k := 0; next.Add(1) <= int64(b.N); k++ {
				t0 := time.Now()
				if every > 0 {
					t0 = start.Add(every*time.Duration(c)/time.Duration(*loadClients) + every*time.Duration(k))
					time.Sleep(time.Until(t0))
				}
				var err error
				if write {
					err = loadWrite(hc, base, d.Key, r, vocab)
				} else {
					err = loadSearch(hc, base, d.Key, r, vocab)
				}
				if err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
				per[c] = append(per[c], sample{write, time.Since(t0), t0.Sub(start)})
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatalf("load: %v", err)
	}
	var writes, searches []time.Duration
	if *loadSamples != "" {
		var buf bytes.Buffer
		fmt.Fprintf(&buf, "# start %s\n", start.Format(time.RFC3339Nano))
		for _, s := range per {
			for _, x := range s {
				fmt.Fprintf(&buf, "%d %d %v\n", x.at.Microseconds(), x.d.Microseconds(), x.write)
			}
		}
		if err := os.WriteFile(*loadSamples, buf.Bytes(), 0o644); err != nil {
			b.Fatalf("-load.samples: %v", err)
		}
	}
	for _, s := range per {
		for _, x := range s {
			if x.write {
				writes = append(writes, x.d)
			} else {
				searches = append(searches, x.d)
			}
		}
	}
	b.ReportMetric(float64(len(writes)+len(searches))/elapsed.Seconds(), "req/s")
	if *loadRate > 0 {
		b.ReportMetric(*loadRate, "offered-req/s")
	}
	for _, m := range []struct {
		name string
		lat  []time.Duration
	}{{"write", writes}, {"search", searches}} {
		if len(m.lat) == 0 {
			continue
		}
		slices.Sort(m.lat)
		pct := func(p float64) float64 {
			return float64(m.lat[int(p*float64(len(m.lat)-1))].Microseconds()) / 1000
		}
		b.ReportMetric(pct(0.50), m.name+"-p50-ms")
		b.ReportMetric(pct(0.95), m.name+"-p95-ms")
		b.ReportMetric(pct(0.99), m.name+"-p99-ms")
	}
}

// loadVocab is a 2,000-word vocabulary drawn with a Zipf distribution.
func loadVocab() []string {
	words := make([]string, 2000)
	for i := range words {
		words[i] = fmt.Sprintf("w%x%s", i, strings.Repeat("k", i%3))
	}
	return words
}

func zipfWords(r *rand.Rand, vocab []string, n int) []string {
	z := rand.NewZipf(r, 1.1, 1, uint64(len(vocab)-1))
	out := make([]string, n)
	for i := range out {
		out[i] = vocab[z.Uint64()]
	}
	return out
}

func loadWrite(hc *http.Client, base, key string, r *rand.Rand, vocab []string) error {
	body, _ := json.Marshal(map[string]any{
		"content":  strings.Join(zipfWords(r, vocab, 15+r.IntN(20)), " "),
		"project":  fmt.Sprintf("p%d", r.IntN(8)),
		"category": "fact",
		"tags":     []string{fmt.Sprintf("t%d", r.IntN(16))},
	})
	return loadDo(hc, "POST", base+"/v1/memory", key, body, http.StatusCreated)
}

func loadSearch(hc *http.Client, base, key string, r *rand.Rand, vocab []string) error {
	q := strings.Join(zipfWords(r, vocab, 1+r.IntN(2)), " ")
	return loadDo(hc, "GET", base+"/v1/memories/search?limit=20&q="+url.QueryEscape(q), key, nil, http.StatusOK)
}

func loadDo(hc *http.Client, method, u, key string, body []byte, want int) error {
	req, err := http.NewRequest(method, u, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: %d %s", method, u, resp.StatusCode, msg)
	}
	return nil
}
