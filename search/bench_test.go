package search

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
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
