package audit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crow-sync/crow/audit"
	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/store"
	"github.com/crow-sync/crow/store/storetest"
)

// benchStore is a store with n numbered memories, built once per process
// (a benchmark function runs more than once) and closed by TestMain.
var benchStore struct {
	once  sync.Once
	db    *store.DB
	err   error
	close func()
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchStore.close != nil {
		benchStore.close()
	}
	os.Exit(code)
}

const benchMemories = 100_000

func openBenchStore(b *testing.B) *store.DB {
	benchStore.once.Do(func() { benchStore.db, benchStore.err = buildBenchStore(benchMemories) })
	if benchStore.err != nil {
		b.Fatal(benchStore.err)
	}
	return benchStore.db
}

func buildBenchStore(n int) (*store.DB, error) {
	dir, err := os.MkdirTemp("", "crow-audit-bench-")
	if err != nil {
		return nil, err
	}
	db, err := store.Open(dir, store.Options{})
	if err != nil {
		return nil, err
	}
	w, err := store.NewWriter(db, store.WriterOptions{InstanceID: "inst-bench", Journal: storetest.NewJournal()})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = w.Serve(ctx) })
	benchStore.close = func() {
		cancel()
		wg.Wait()
		_ = db.Close()
		_ = os.RemoveAll(dir)
	}
	// The memories, as memory.Service writes them, 256 per write, 8 writers.
	at := time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC)
	errs := make(chan error, 8)
	var writers sync.WaitGroup
	for g := range 8 {
		writers.Go(func() {
			for start := g * 256; start < n; start += 8 * 256 {
				var muts []store.Mutation
				for i := start; i < min(n, start+256); i++ {
					content := fmt.Sprintf("memory %d: %s", i, strings.Repeat("the audit recomputes every hash ", 6))
					created := at.Add(time.Duration(i) * time.Millisecond)
					data, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("m%09d", i), "project": fmt.Sprintf("p%d", i%10),
						"content": content, "content_hash": memory.ContentHash(content), "category": "general", "importance": 5,
						"tags": []string{}, "source": "api", "origin": "inst-bench", "created_at": created, "updated_at": created})
					muts = append(muts, store.Mutation{Table: store.TableMemories, RowID: fmt.Sprintf("m%09d", i), Op: store.OpInsert, Data: data})
				}
				if _, err := w.Write(ctx, muts...); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	writers.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}
	// Home numbers them.
	nctx, ncancel := context.WithCancel(ctx)
	var nwg sync.WaitGroup
	nwg.Go(func() { _ = memory.NewNumberer(db, w, slog.New(slog.DiscardHandler)).Serve(nctx) })
	defer func() { ncancel(); nwg.Wait() }()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		_, err := db.Get(store.TableMemoryNumbers, fmt.Sprintf("m%09d", n-1))
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the memories were not numbered in time: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return db, nil
}

// BenchmarkAudit100k audits 100k numbered memories in a real badger store
// (content hash, event hash, numbering, anchors record per memory; the
// numbering as a whole), in one Run without a limit.
func BenchmarkAudit100k(b *testing.B) {
	db := openBenchStore(b)
	src := audit.NewStoreSource(db)
	b.ResetTimer()
	for b.Loop() {
		r, err := audit.Run(context.Background(), src, audit.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if !r.OK || r.Check(audit.CheckEventHash).OK != benchMemories {
			b.Fatalf("audit: ok %v, %v", r.OK, r.Checks)
		}
	}
	b.ReportMetric(float64(benchMemories)*float64(b.N)/b.Elapsed().Seconds(), "memories/s")
}

// BenchmarkAudit100kPaged is the same audit as crow audit runs it: pages of
// 5000 items.
func BenchmarkAudit100kPaged(b *testing.B) {
	db := openBenchStore(b)
	src := audit.NewStoreSource(db)
	b.ResetTimer()
	for b.Loop() {
		cursor := ""
		for {
			r, err := audit.Run(context.Background(), src, audit.Options{After: cursor, Limit: 5000})
			if err != nil {
				b.Fatal(err)
			}
			if cursor = r.Next; cursor == "" {
				break
			}
		}
	}
	b.ReportMetric(float64(benchMemories)*float64(b.N)/b.Elapsed().Seconds(), "memories/s")
}
