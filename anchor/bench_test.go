package anchor

import (
	"context"
	"fmt"
	"testing"

	"github.com/crow-sync/crow/identity"
)

// BenchmarkEmbeddedAnchorStates measures state anchoring on the embedded
// chain: one transaction of MaxStatesPerTx states per op, mined before it
// returns (the worker's unit of work); states/s is the rate.
//
//	go test ./anchor -run '^$' -bench EmbeddedAnchor -benchtime 50x
func BenchmarkEmbeddedAnchorStates(b *testing.B) {
	var seed identity.Seed
	e, err := OpenEmbedded(b.TempDir(), seed.AnchorKey(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		batch := make([]StateAnchor, MaxStatesPerTx)
		for j := range batch {
			batch[j] = StateAnchor{ProjectID: seed.ProjectIDHash(fmt.Sprint("p", j)), Version: uint64(i + 1),
				StateHash: hashOf(fmt.Sprint(i, "/", j))}
		}
		if _, err := e.AnchorStates(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*MaxStatesPerTx)/b.Elapsed().Seconds(), "states/s")
}

// BenchmarkEmbeddedAnchorMemories measures memory anchoring: batches of 100
// encrypted 256-byte memories per transaction.
func BenchmarkEmbeddedAnchorMemories(b *testing.B) {
	var seed identity.Seed
	e, err := OpenEmbedded(b.TempDir(), seed.AnchorKey(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	key := seed.MemoryEncryptionKey()
	plain := make([]byte, 256)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		batch := make([]MemoryAnchor, 100)
		for j := range batch {
			eh := hashOf(fmt.Sprint(i, "/", j))
			ct, err := EncryptMemory(key, eh, plain)
			if err != nil {
				b.Fatal(err)
			}
			batch[j] = MemoryAnchor{EventHash: eh, EncryptedContent: ct, Category: "fact", Importance: 5, PlainLength: 256}
		}
		for _, part := range SplitMemories(batch) {
			if _, err := e.AnchorMemories(ctx, part); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "memories/s")
}
