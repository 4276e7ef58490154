package search

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMain removes the shared benchmark corpus.
func TestMain(m *testing.M) {
	code := m.Run()
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

const benchDocs = 100_000

var (
	benchOnce  sync.Once
	benchDir   string
	benchIndex *Index
	benchVocab []string
	benchErr   error
)

// benchCorpus builds, once per run, an index of 100k synthetic memories: ~30 words each
// drawn from a 5,000-word vocabulary with a Zipf distribution, 20 projects, 8 categories,
// importance 1–10, 0–3 tags of 50. It is written straight into bleve in batches (the
// store path is measured by the write benchmarks).
func benchCorpus(b *testing.B) *Index {
	benchOnce.Do(func() {
		r := rand.New(rand.NewPCG(1, 2))
		for i := range 5000 {
			benchVocab = append(benchVocab, fmt.Sprintf("w%x%s", i, strings.Repeat("q", i%3)))
		}
		zipf := rand.NewZipf(r, 1.1, 1, uint64(len(benchVocab)-1))
		benchDir, benchErr = os.MkdirTemp("", "crow-search-bench-")
		if benchErr != nil {
			return
		}
		ix, err := Open(benchDir+"/index", slog.New(slog.DiscardHandler))
		if err != nil {
			benchErr = err
			return
		}
		start := time.Now()
		batch := ix.bi.NewBatch()
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for i := range benchDocs {
			words := make([]string, 20+r.IntN(20))
			for j := range words {
				words[j] = benchVocab[zipf.Uint64()]
			}
			var tags []string
			for range r.IntN(4) {
				tags = append(tags, fmt.Sprint("tag", r.IntN(50)))
			}
			d := memoryDoc{Content: strings.Join(words, " "), Project: fmt.Sprint("p", r.IntN(20)),
				Category: fmt.Sprint("c", r.IntN(8)), Tags: tags, Importance: 1 + r.IntN(10),
				CreatedAt: t0.Add(time.Duration(i) * time.Minute)}
			if err := batch.Index(fmt.Sprintf("m%07d", i), d.fields()); err != nil {
				benchErr = err
				return
			}
			if batch.Size() == 2000 {
				if benchErr = ix.bi.Batch(batch); benchErr != nil {
					return
				}
				batch.Reset()
			}
		}
		if benchErr = ix.bi.Batch(batch); benchErr != nil {
			return
		}
		benchIndex = ix
		fmt.Fprintf(os.Stderr, "built %d-memory corpus in %v\n", benchDocs, time.Since(start).Round(time.Second))
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchIndex
}

// BenchmarkSearch100k measures query latency over 100k memories and reports p50/p99.
func BenchmarkSearch100k(b *testing.B) {
	ix := benchCorpus(b)
	cases := []struct {
		name string
		q    func(r *rand.Rand) Query
	}{
		{"one-word", func(r *rand.Rand) Query { return Query{Text: benchVocab[r.IntN(500)], Limit: 20} }},
		{"three-words", func(r *rand.Rand) Query {
			return Query{Text: benchVocab[r.IntN(2000)] + " " + benchVocab[r.IntN(2000)] + " " + benchVocab[r.IntN(2000)], Limit: 20}
		}},
		{"filtered", func(r *rand.Rand) Query {
			return Query{Text: benchVocab[r.IntN(500)], Project: fmt.Sprint("p", r.IntN(20)), MinImportance: 5,
				Tags: []string{fmt.Sprint("tag", r.IntN(50))}, Limit: 20}
		}},
		{"list-newest", func(r *rand.Rand) Query { return Query{Category: fmt.Sprint("c", r.IntN(8)), Limit: 20} }},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(3, 4))
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				q := c.q(r)
				t := time.Now()
				if _, err := ix.Search(context.Background(), q); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}

// benchWords and benchContent are crowbench's generator (bench/pouchdb/crowbench, a module
// of its own, so copied here rather than imported): exactly 256 ASCII bytes of ~30 words, with
// a unique "memory N:" prefix. BenchmarkIndexBuild only needs the same shape of workload.
var benchWords = []string{"sync", "memory", "feed", "merkle", "replica", "satellite", "home", "laptop", "token",
	"conflict", "index", "search", "project", "anchor", "chain", "noise", "yamux", "ledger", "policy", "deploy",
	"review", "design", "storage", "latency", "network", "tailscale", "laptop", "server", "decision"}

func benchContent(i int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "memory %d:", i)
	x := uint32(i) * 2654435761
	for b.Len() < 256 {
		x = x*1103515245 + 12345
		b.WriteString(" " + benchWords[(x>>16)%uint32(len(benchWords))])
	}
	return b.String()[:256]
}

// BenchmarkIndexBuild indexes CROW_BENCH_DOCS (default 100,000) memories of 256 bytes in
// batches of 2,000 (crowbench's workload: 10 projects, 2 tags, importance 1–10) and reports
// the rate and the index's size on disk once closed (persisted; merges as far as they got).
func BenchmarkIndexBuild(b *testing.B) {
	n := 100_000
	if s := os.Getenv("CROW_BENCH_DOCS"); s != "" {
		fmt.Sscan(s, &n)
	}
	for range b.N {
		dir := b.TempDir() + "/index"
		ix, err := Open(dir, slog.New(slog.DiscardHandler))
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		start := time.Now()
		batch := ix.bi.NewBatch()
		for i := range n {
			d := memoryDoc{Content: benchContent(i), Project: fmt.Sprint("proj-", i%10),
				Tags: []string{fmt.Sprint("t", i%7), fmt.Sprint("t", i%13)}, Category: "general",
				Importance: 1 + i%10, CreatedAt: t0.Add(time.Duration(i) * time.Second)}
			if err := batch.Index(fmt.Sprintf("01M8XBM708R2KZ3W%010d", i), d.fields()); err != nil {
				b.Fatal(err)
			}
			if batch.Size() == 2000 || i == n-1 {
				if err := ix.bi.Batch(batch); err != nil {
					b.Fatal(err)
				}
				batch.Reset()
			}
		}
		if err := ix.Close(); err != nil {
			b.Fatal(err)
		}
		el := time.Since(start)
		var size int64
		filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if fi, err := d.Info(); err == nil {
					size += fi.Size()
				}
			}
			return nil
		})
		b.ReportMetric(float64(n)/el.Seconds(), "docs/s")
		b.ReportMetric(float64(size)/(1<<20), "disk-MB")
		b.ReportMetric(float64(size)/float64(n), "disk-B/doc")
	}
}
