package exchange

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/crow-sync/crow/memory"
)

// benchFile is a crow export of n memories of about 300 bytes each.
func benchFile(n int) []byte {
	var buf bytes.Buffer
	_ = WriteHeader(&buf)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	imp := 5
	for i := range n {
		at := t0.Add(time.Duration(i) * time.Second)
		content := fmt.Sprintf("memory %d: %s", i, bytes.Repeat([]byte("lorem ipsum "), 24))
		_ = WriteRecord(&buf, Record{ID: memory.DerivedID(at, sha256.Sum256(fmt.Appendf(nil, "%d", i))), Project: "bench",
			Content: content, ContentHash: memory.ContentHash(content), Category: "fact", Importance: &imp,
			Tags: []string{"bench"}, Source: "api", CreatedAt: at, UpdatedAt: at})
	}
	return buf.Bytes()
}

// BenchmarkImport parses a 10,000-memory crow export and imports it into a fresh badger
// store in batches of 200 (the CLI's), as crow memory import does minus HTTP.
func BenchmarkImport(b *testing.B) {
	data := benchFile(10_000)
	for b.Loop() {
		b.StopTimer()
		svc := newService(b)
		b.StartTimer()
		p, err := Parse(bytes.NewReader(data), Auto)
		if err != nil {
			b.Fatal(err)
		}
		for _, batch := range Batches(p.Items, 200, 192<<10) {
			recs, err := Import(batch, "", "")
			if err != nil {
				b.Fatal(err)
			}
			if _, err := svc.Import(context.Background(), recs, false); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(10_000*b.N)/b.Elapsed().Seconds(), "memories/s")
}
