package projects_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/projects"
	"github.com/crow-sync/crow/state"
	"github.com/crow-sync/crow/store"
	"github.com/crow-sync/crow/store/storetest"
)

// BenchmarkProjectsList100k measures what GET /v1/projects runs (app's
// projectsList: memory.Service.Count, then projects.Service.List) over a
// real on-disk store of 100k memories of about 256 bytes across 10
// projects, each with a state version. The rows are written with the
// replication apply path's TxnBatch, 1000 per transaction.
func BenchmarkProjectsList100k(b *testing.B) {
	const n, nProjects = 100_000, 10
	env := storetest.Start(b, b.TempDir())
	ctx := context.Background()
	start := time.Now()
	created := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	pad := strings.Repeat("x", 120)
	for base := 0; base < n; base += 1000 {
		err := env.DB.Update(ctx, func(txn *store.Txn) error {
			tb, err := txn.BeginBatch()
			if err != nil {
				return err
			}
			for i := base; i < base+1000; i++ {
				id := fmt.Sprintf("m%09d", i)
				data := fmt.Sprintf(`{"id":%q,"project":"p%02d","content":"memory %d %s","category":"c%d","importance":5,"tags":[],"source":"api","origin":"inst-b","created_at":%q}`,
					id, i%nProjects, i, pad, i%4, created.Format(time.RFC3339))
				l := tb.ObserveLamport(uint64(i))
				row := &store.Row{RowID: id, Table: store.TableMemories, Data: json.RawMessage(data),
					LamportTS: l, InstanceID: "inst-b", VV: store.VV{"inst-b": uint64(i + 1)}, UpdatedAt: created}
				if _, err := tb.PutRow(row); err != nil {
					return err
				}
			}
			return tb.Flush()
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	for p := range nProjects {
		writeVersion(b, env, &state.Version{Project: fmt.Sprintf("p%02d", p), Version: 1, StateHash: "0xabc"})
	}
	b.Logf("wrote %d memories in %v", n, time.Since(start).Round(time.Millisecond))
	mem := memory.NewService(env.DB, env.Writer, nil, memory.Options{})
	svc := projects.New(env.DB, env.Writer, false)
	b.ResetTimer()
	for b.Loop() {
		c, err := mem.Count(ctx)
		if err != nil {
			b.Fatal(err)
		}
		l, err := svc.List(c.Projects)
		if err != nil {
			b.Fatal(err)
		}
		if len(l.Projects) != nProjects || l.Projects[0].Memories != n/nProjects || l.Projects[0].StateVersion != 1 {
			b.Fatalf("list: %+v", l.Projects[0])
		}
	}
}
