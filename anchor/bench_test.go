package anchor

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi/bind"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/crow-sync/crow/anchor/merkle"
	"github.com/crow-sync/crow/identity"
	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/store"
	"github.com/crow-sync/crow/store/storetest"
)

// benchChain opens an embedded chain for a benchmark.
func benchChain(b *testing.B) *Embedded {
	b.Helper()
	var seed identity.Seed
	e, err := OpenEmbedded(b.TempDir(), seed.AnchorKey(), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	return e
}

// benchRoot is the root over n state versions of op i (distinct per op).
func benchRoot(b *testing.B, i, n int) *merkle.Tree {
	b.Helper()
	var seed identity.Seed
	leaves := make([]merkle.Hash, n)
	for j := range leaves {
		leaves[j] = merkle.StateLeaf(seed.ProjectIDHash(fmt.Sprint("p", j%7)), uint64(i*n+j+1), hashOf(fmt.Sprint(i, "/", j)))
	}
	t, err := merkle.New(leaves)
	if err != nil {
		b.Fatal(err)
	}
	return t
}

func gasOf(b *testing.B, e *Embedded, r Receipt) uint64 {
	b.Helper()
	rc, err := e.ec.TransactionReceipt(context.Background(), common.HexToHash(r.TxHash))
	if err != nil {
		b.Fatal(err)
	}
	return rc.GasUsed
}

// BenchmarkGasPerVersion measures the gas one state version costs on the
// embedded chain (Osaka rules, as the RPC backends' chains): anchored one
// root per version (a root of one leaf per transaction) against 100
// versions under one root. Each op anchors both; the metrics are gas per
// version of each and their ratio.
//
//	go test ./anchor/ -run '^$' -bench Gas -benchtime 3x
func BenchmarkGasPerVersion(b *testing.B) {
	const batch = 100
	e := benchChain(b)
	ctx := context.Background()
	// The contract's first root also pays rootCount's first write (a fresh
	// slot, +19k gas): warm it up so every op measures the steady state.
	warm := benchRoot(b, -1, 1)
	if _, err := e.AnchorRoot(ctx, warm.Root(), 1); err != nil {
		b.Fatal(err)
	}
	var single, batched uint64
	for i := 0; i < b.N; i++ {
		t1 := benchRoot(b, 2*i, 1)
		r1, err := e.AnchorRoot(ctx, t1.Root(), t1.Len())
		if err != nil {
			b.Fatal(err)
		}
		single += gasOf(b, e, r1)
		tn := benchRoot(b, 2*i+1, batch)
		rn, err := e.AnchorRoot(ctx, tn.Root(), tn.Len())
		if err != nil {
			b.Fatal(err)
		}
		batched += gasOf(b, e, rn)
	}
	perSingle := float64(single) / float64(b.N)
	perBatched := float64(batched) / float64(b.N*batch)
	b.ReportMetric(perSingle, "gas/version-single")
	b.ReportMetric(perBatched, "gas/version-batched")
	b.ReportMetric(perBatched/perSingle, "batched/single")
	b.Logf("gas per state version: %.0f one root per version, %.0f in a root of %d (ratio 1/%.0f)", perSingle, perBatched, batch, perSingle/perBatched)
}

// BenchmarkGasV1PerVersion is the same measure for the first contract
// (ProjectStateAnchor v1, testdata/, one storage entry per version) on
// the same chain: one version per transaction (anchor) and the batch of
// 16 (anchorBatch, v1's MaxStatesPerTx) crow sent.
func BenchmarkGasV1PerVersion(b *testing.B) {
	const batch = 16
	e := benchChain(b)
	ctx := context.Background()
	v1ABI, v1Bin := v1Contract(b)
	var seed identity.Seed
	opts, err := bind.NewKeyedTransactorWithChainID(seed.AnchorKey(), e.chainID)
	if err != nil {
		b.Fatal(err)
	}
	opts.Context = ctx
	_, tx, v1, err := bind.DeployContract(opts, v1ABI, v1Bin, e.ec)
	if err != nil {
		b.Fatal(err)
	}
	mined := func(tx *types.Transaction, err error) uint64 {
		b.Helper()
		if err != nil {
			b.Fatal(err)
		}
		rc, err := waitMined(ctx, e.ec, tx.Hash(), e.log)
		if err != nil || rc.Status != 1 {
			b.Fatalf("v1 tx: %v %+v", err, rc)
		}
		return rc.GasUsed
	}
	mined(tx, nil)
	pid := seed.ProjectIDHash("p")
	// Warm up anchorCount's slot, as above.
	mined(v1.Transact(opts, "anchor", pid, uint64(1<<40), hashOf("warm")))
	var single, batched uint64
	for i := 0; i < b.N; i++ {
		v := uint64(i*(batch+1) + 1)
		single += mined(v1.Transact(opts, "anchor", pid, v, hashOf(fmt.Sprint(v))))
		pids, vs, hs := make([][32]byte, batch), make([]uint64, batch), make([][32]byte, batch)
		for j := range batch {
			pids[j], vs[j], hs[j] = pid, v+1+uint64(j), hashOf(fmt.Sprint(v+1+uint64(j)))
		}
		batched += mined(v1.Transact(opts, "anchorBatch", pids, vs, hs))
	}
	b.ReportMetric(float64(single)/float64(b.N), "gas/version-single")
	b.ReportMetric(float64(batched)/float64(b.N*batch), "gas/version-batch16")
}

// BenchmarkGasPerMemory measures the gas per memory of a batch of 100
// encrypted 256-byte memories under one root (the content is carried in
// the events, so it dominates).
func BenchmarkGasPerMemory(b *testing.B) {
	const batch = 100
	e := benchChain(b)
	ctx := context.Background()
	var gas uint64
	var n int
	for i := 0; i < b.N; i++ {
		ms := benchMemories(b, i, batch)
		for _, part := range SplitMemories(ms) {
			r, err := e.AnchorMemories(ctx, memoryRoot(b, part), part)
			if err != nil {
				b.Fatal(err)
			}
			gas += gasOf(b, e, r)
			n += len(part)
		}
	}
	b.ReportMetric(float64(gas)/float64(n), "gas/memory")
}

// benchMemories is a batch of n sealed 256-byte memories of op i.
func benchMemories(b *testing.B, i, n int) []MemoryAnchor {
	b.Helper()
	var key [32]byte
	plain := make([]byte, 256)
	out := make([]MemoryAnchor, n)
	for j := range out {
		eh := hashOf(fmt.Sprint(i, "/", j))
		ct, err := SealMemory(key, eh, plain)
		if err != nil {
			b.Fatal(err)
		}
		out[j] = MemoryAnchor{EventHash: eh, EncryptedContent: ct, Category: "fact", Importance: 5, PlainLength: 256}
	}
	return out
}

// BenchmarkEmbeddedAnchorRoot measures state anchoring throughput on the
// embedded chain: per op, a tree of 100 versions built and its root
// anchored and mined before it returns (the worker's unit of work).
//
//	go test ./anchor -run '^$' -bench EmbeddedAnchor -benchtime 50x
func BenchmarkEmbeddedAnchorRoot(b *testing.B) {
	const batch = 100
	e := benchChain(b)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t := benchRoot(b, i, batch)
		if _, err := e.AnchorRoot(ctx, t.Root(), t.Len()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "states/s")
}

// BenchmarkEmbeddedAnchorMemories measures memory anchoring: batches of 100
// encrypted 256-byte memories per root.
func BenchmarkEmbeddedAnchorMemories(b *testing.B) {
	e := benchChain(b)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, part := range SplitMemories(benchMemories(b, i, 100)) {
			if _, err := e.AnchorMemories(ctx, memoryRoot(b, part), part); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "memories/s")
}

// BenchmarkAnchorRows measures what anchoring adds to the replicated store
// per memory: the bytes of the anchors table (row ids and data of its live
// rows) and the feed entries (change records) that write it, for
// CROW_BENCH_MEMORIES memories (default 10,000) numbered and anchored
// through the real worker on the embedded chain. Each op is the whole run.
//
//	go test ./anchor/ -run '^$' -bench AnchorRows -benchtime 1x
func BenchmarkAnchorRows(b *testing.B) {
	n := 10_000
	if s := os.Getenv("CROW_BENCH_MEMORIES"); s != "" {
		fmt.Sscan(s, &n)
	}
	for i := 0; i < b.N; i++ {
		env := storetest.Start(b, b.TempDir())
		ctx := context.Background()
		at := time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC)
		var muts []store.Mutation
		put := func(table, id string, v any) {
			data, _ := json.Marshal(v)
			muts = append(muts, store.Mutation{Table: table, RowID: id, Op: store.OpPut, Data: data})
		}
		for k := 1; k <= n; k++ {
			id, num := fmt.Sprintf("01JBENCH%018d", k), uint64(k)
			content := fmt.Sprintf("memory %d: a decision recorded during the benchmark, about as long as a typical crow memory is, give or take", k)
			ch := memory.ContentHash(content)
			put(store.TableMemories, id, map[string]any{"id": id, "project": "crow", "content": content, "content_hash": ch,
				"category": "decision", "importance": 5, "origin": "inst-bench", "created_at": at, "updated_at": at})
			eh := memory.EventHash(num, "crow", ch, at, "inst-bench")
			put(store.TableMemoryNumbers, id, map[string]any{"number": num, "event_hash": eh})
			put(store.TableMemoryVersions, memory.VersionRowID(num), memory.Version{Number: num, MemoryID: id, Project: "crow",
				Content: content, ContentHash: ch, Category: "decision", Importance: 5, CreatedAt: at, Origin: "inst-bench", EventHash: eh})
			if len(muts) >= 300 || k == n {
				if _, err := env.Writer.Write(ctx, muts...); err != nil {
					b.Fatal(err)
				}
				muts = muts[:0]
			}
		}
		before := env.Journal.Len()
		e := benchChain(b)
		var seed identity.Seed
		w := NewWorker(WorkerConfig{DB: env.DB, Writer: env.Writer, Chain: e, Seed: seed, Interval: time.Hour})
		b.ResetTimer()
		for w.Stats().Memories < uint64(n) {
			if err := w.Round(ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		var rows, bytes int
		var roots int
		err := env.DB.View(func(txn *store.Txn) error {
			return txn.ScanRows(store.TableAnchors, func(r *store.Row) error {
				if !r.Deleted {
					rows++
					bytes += len(r.RowID) + len(r.Data)
					if strings.HasPrefix(r.RowID, "root/") {
						roots++
					}
				}
				return nil
			})
		})
		if err != nil {
			b.Fatal(err)
		}
		var entries, anchorEntries, anchorEntryBytes int
		err = env.DB.View(func(txn *store.Txn) error {
			return txn.Iterate([]byte("x/journal/e/"), nil, func(k, v []byte) error {
				if binary.BigEndian.Uint64(k[len("x/journal/e/"):]) < before {
					return nil
				}
				entries++
				if c, err := store.ParseChange(v); err == nil && c.Table == store.TableAnchors {
					anchorEntries++
					anchorEntryBytes += len(v)
				}
				return nil
			})
		})
		if err != nil {
			b.Fatal(err)
		}
		// Reading every record back (the index built, each root's tree rebuilt
		// once), then in a scattered order (trees rebuilt beyond the cache).
		t0 := time.Now()
		for k := 1; k <= n; k++ {
			if _, ok, err := ReadRecord(env.DB, VersionRecordID(uint64(k))); err != nil || !ok {
				b.Fatalf("record of #%d: %v %v", k, ok, err)
			}
		}
		seq := time.Since(t0)
		t0 = time.Now()
		for k := 0; k < n; k++ {
			if _, ok, err := ReadRecord(env.DB, VersionRecordID(uint64(k*7919%n+1))); err != nil || !ok {
				b.Fatalf("record of #%d: %v %v", k*7919%n+1, ok, err)
			}
		}
		scattered := time.Since(t0)
		b.ReportMetric(float64(seq.Microseconds())/float64(n), "µs/lookup-in-order")
		b.ReportMetric(float64(scattered.Microseconds())/float64(n), "µs/lookup-scattered")
		b.ReportMetric(float64(bytes)/float64(n), "anchors-B/memory")
		b.ReportMetric(float64(anchorEntries)/float64(n), "anchor-entries/memory")
		b.ReportMetric(float64(anchorEntryBytes)/float64(n), "anchor-entry-B/memory")
		b.Logf("%d memories: %d anchors rows (%d roots), %d bytes (%.0f B/memory); %d feed entries while anchoring, %d of the anchors table (%.3f/memory, %d bytes)",
			n, rows, roots, bytes, float64(bytes)/float64(n), entries, anchorEntries, float64(anchorEntries)/float64(n), anchorEntryBytes)
	}
}
