package search

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crow-sync/crow/store"
)

// BenchmarkSearchAll20k measures SearchAll (every table) and the memory search over an
// index of 10k memories and 10k records (notes and contacts, ~30 words each from a
// 5,000-word Zipf vocabulary), written straight into bleve; it reports p50/p99.
func BenchmarkSearchAll20k(b *testing.B) {
	ix, err := Open(b.TempDir()+"/index", slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	r := rand.New(rand.NewPCG(5, 6))
	vocab := make([]string, 5000)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%x", i)
	}
	zipf := rand.NewZipf(r, 1.1, 1, uint64(len(vocab)-1))
	words := func() string {
		w := make([]string, 20+r.IntN(20))
		for j := range w {
			w[j] = vocab[zipf.Uint64()]
		}
		return strings.Join(w, " ")
	}
	batch := ix.bi.NewBatch()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 10_000 {
		d := memoryDoc{Content: words(), Project: "p", Category: "c", Importance: 5, CreatedAt: t0.Add(time.Duration(i) * time.Minute)}
		if err := batch.Index(fmt.Sprintf("m%07d", i), d.fields()); err != nil {
			b.Fatal(err)
		}
		table, data := store.TableNotes, map[string]any{"title": vocab[r.IntN(500)], "content": words()}
		if i%2 == 1 {
			table, data = store.TableContacts, map[string]any{"name": vocab[r.IntN(500)], "notes": words()}
		}
		raw, _ := json.Marshal(data)
		if err := stageRow(batch, table, fmt.Sprintf("r%07d", i), &store.Row{Table: table, Data: raw}); err != nil {
			b.Fatal(err)
		}
		if batch.Size() >= 2000 {
			if err := ix.bi.Batch(batch); err != nil {
				b.Fatal(err)
			}
			batch.Reset()
		}
	}
	if err := ix.bi.Batch(batch); err != nil {
		b.Fatal(err)
	}
	run := func(name string, q func() error) {
		b.Run(name, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			for range b.N {
				t := time.Now()
				if err := q(); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
	ctx := context.Background()
	run("all-tables", func() error {
		_, err := ix.SearchAll(ctx, AllQuery{Text: vocab[r.IntN(500)], Limit: 20})
		return err
	})
	run("notes-contacts", func() error {
		_, err := ix.SearchAll(ctx, AllQuery{Text: vocab[r.IntN(500)], Tables: []string{"notes", "contacts"}, Limit: 20})
		return err
	})
	run("memories-only", func() error {
		_, err := ix.Search(ctx, Query{Text: vocab[r.IntN(500)], Limit: 20})
		return err
	})
}
