package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkCountsRebuild100k measures the one scan that rebuilds the maintained counts
// (what Open does once on a store from before them, and LoadSnapshot after a load) over
// 100k memories of about 256 bytes in 10 projects.
func BenchmarkCountsRebuild100k(b *testing.B) {
	db, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	pad := strings.Repeat("x", 150)
	for base := 0; base < 100_000; base += 1000 {
		err := db.Update(context.Background(), func(txn *Txn) error {
			tb, err := txn.BeginBatch()
			if err != nil {
				return err
			}
			for i := base; i < base+1000; i++ {
				id := fmt.Sprintf("m%09d", i)
				data := fmt.Sprintf(`{"id":%q,"project":"p%02d","content":"memory %d %s","category":"c%d","importance":5}`, id, i%10, i, pad, i%4)
				if _, err := tb.PutRow(&Row{RowID: id, Table: TableMemories, Data: json.RawMessage(data), VV: VV{"b": uint64(i + 1)}}); err != nil {
					return err
				}
			}
			return tb.Flush()
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		if err := db.rebuildCounts("benchmark"); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if c, err := db.CountRows(TableMemories); err != nil || c.Live != 100_000 {
		b.Fatalf("%+v %v", c, err)
	}
}
