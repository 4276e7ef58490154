package anchor

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/crow-sync/crow/clock"
	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/store"
	"github.com/crow-sync/crow/store/storetest"
)

// Regenerate testdata/batch-readers.golden.json with -update-readers, and
// testdata/anchors-per-item.json (the anchors table as the per-item code
// wrote it, before issue 16) with -update-per-item: only from a commit that
// still writes per-item rows.
var (
	updateReaders = flag.Bool("update-readers", false, "rewrite testdata/batch-readers.golden.json")
	updatePerItem = flag.Bool("update-per-item", false, "rewrite testdata/anchors-per-item.json (per-item code only)")
)

const (
	readersGolden = "testdata/batch-readers.golden.json"
	perItemRows   = "testdata/anchors-per-item.json"
)

// detChain is a deterministic Chain: a root's transaction hash derives from
// the root, blocks count up from 100, every transaction is final at once.
type detChain struct {
	mu    sync.Mutex
	block uint64
	roots map[[32]byte]RootInfo
}

func newDetChain() *detChain { return &detChain{block: 100, roots: map[[32]byte]RootInfo{}} }

func (c *detChain) anchor(root [32]byte, count int) Receipt {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.block++
	id := uint64(len(c.roots) + 1)
	c.roots[root] = RootInfo{ID: id, AnchoredAt: time.Date(2026, 12, 1, 0, 0, int(c.block), 0, time.UTC), Count: uint32(count)}
	return Receipt{TxHash: HashHex(hashOf("tx " + HashHex(root))), Block: c.block, BlockHash: HashHex(hashOf(fmt.Sprint("block ", c.block))), RootID: id}
}

func (c *detChain) AnchorRoot(_ context.Context, root [32]byte, count int) (Receipt, error) {
	return c.anchor(root, count), nil
}

func (c *detChain) AnchorMemories(_ context.Context, root [32]byte, ms []MemoryAnchor) (Receipt, error) {
	return c.anchor(root, len(ms)), nil
}

func (c *detChain) GetRoot(_ context.Context, root [32]byte) (RootInfo, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ri, ok := c.roots[root]
	return ri, ok, nil
}

func (c *detChain) TxStatus(_ context.Context, txHash string) (TxState, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// Every transaction is final (the tests here do not follow reorgs).
	return TxState{Mined: true, Block: c.block, BlockHash: HashHex(hashOf(fmt.Sprint("block ", c.block))), Head: c.block + 10}, nil
}

func (c *detChain) Info() ChainInfo {
	return ChainInfo{Kind: KindEmbedded, ChainID: 1337, Contract: "0x00000000000000000000000000000000000C0FFE",
		Account: "0x00000000000000000000000000000000000000Aa"}
}

func (c *detChain) Close() error { return nil }

// readersProjects are the projects of the readers scenario, with how many
// state versions each has after round 1 and after round 2.
var readersProjects = []struct {
	name   string
	r1, r2 int
}{{"crow", 3, 5}, {"nido", 1, 1}, {"pluma", 0, 2}}

// readersData writes the scenario's data (state versions and memories) of
// round r (1 or 2) into env.
func readersData(t *testing.T, env *storetest.Env, r int) {
	t.Helper()
	ctx := testCtx(t)
	put := func(table, id string, v any) {
		data, _ := json.Marshal(v)
		if _, err := env.Writer.Write(ctx, store.Mutation{Table: table, RowID: id, Op: store.OpPut, Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range readersProjects {
		from, to := 1, p.r1
		if r == 2 {
			from, to = p.r1+1, p.r2
		}
		for v := from; v <= to; v++ {
			put(store.TableStateVersions, fmt.Sprintf("%s/%020d", p.name, v), map[string]any{"project": p.name, "version": v,
				"state_hash": HashHex(hashOf(fmt.Sprintf("%s v%d", p.name, v)))})
		}
	}
	// Memories: round 1 numbers 1..5 (m3 edited as number 5), round 2 6..9.
	at := time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC)
	mem := func(id string, n uint64, content string) {
		ch := memory.ContentHash(content)
		put(store.TableMemories, id, map[string]any{"id": id, "project": "crow", "content": content, "content_hash": ch,
			"category": "decision", "importance": 7, "origin": "inst-test", "created_at": at, "updated_at": at})
		eh := memory.EventHash(n, "crow", ch, at, "inst-test")
		put(store.TableMemoryNumbers, id, map[string]any{"number": n, "event_hash": eh})
		put(store.TableMemoryVersions, memory.VersionRowID(n), memory.Version{Number: n, MemoryID: id, Project: "crow",
			Content: content, ContentHash: ch, Category: "decision", Importance: 7, CreatedAt: at, Origin: "inst-test", EventHash: eh})
	}
	if r == 1 {
		for n := uint64(1); n <= 4; n++ {
			mem(fmt.Sprintf("mem-%d", n), n, fmt.Sprintf("memoria %d", n))
		}
		mem("mem-3", 5, "memoria 3, editada")
		return
	}
	for n := uint64(6); n <= 9; n++ {
		mem(fmt.Sprintf("mem-%d", n), n, fmt.Sprintf("memoria %d", n))
	}
}

// readersWorker runs the scenario's two rounds through the worker.
func readersWorker(t *testing.T) *storetest.Env {
	t.Helper()
	env := storetest.Start(t, t.TempDir())
	ch := newDetChain()
	clk := clock.NewFake(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	w := NewWorker(WorkerConfig{DB: env.DB, Writer: env.Writer, Chain: ch, Seed: goldenSeed(), Clock: clk, Interval: time.Hour,
		MaxMemoriesPerRound: 3, RPCURL: "http://127.0.0.1:8545"})
	for r := 1; r <= 2; r++ {
		readersData(t, env, r)
		if err := w.Round(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		if err := w.Round(testCtx(t)); err != nil { // the memories left by MaxMemoriesPerRound
			t.Fatal(err)
		}
	}
	return env
}

// readersOutput is what every reader of the anchors table answers about the
// scenario, as JSON: the packets, state anchors, verify reports, memory
// proofs (no chain, no seed), recorded project ids and the chain status.
func readersOutput(t *testing.T, db *store.DB) []byte {
	t.Helper()
	ctx := testCtx(t)
	out := map[string]any{}
	add := func(key string, v any) { out[key] = v }
	for _, p := range readersProjects {
		vs := mapVersions{}
		for v := 1; v <= p.r2; v++ {
			vs[uint64(v)] = HashHex(hashOf(fmt.Sprintf("%s v%d", p.name, v)))
		}
		ver := Verifier{DB: db, Versions: vs, ProjectID: RecordsProjectID(db)}
		for v := 1; v <= p.r2; v++ {
			sa, err := Records{DB: db}.StateAnchor(p.name, uint64(v))
			if err != nil {
				t.Fatal(err)
			}
			add(fmt.Sprintf("state_anchor %s %d", p.name, v), sa)
			rep, err := ver.VerifyVersion(ctx, p.name, uint64(v))
			if err != nil {
				t.Fatal(err)
			}
			add(fmt.Sprintf("verify %s %d", p.name, v), rep)
		}
		id, ok, err := RecordedProjectID(db, p.name)
		if err != nil {
			t.Fatal(err)
		}
		add("project_id "+p.name, map[string]any{"id": HashHex(id), "ok": ok})
	}
	pr := Prover{DB: db, Versions: MemoryVersions{DB: db}}
	for n := uint64(1); n <= 9; n++ {
		mp, err := pr.MemoryProof(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		add(fmt.Sprintf("memory_proof %d", n), mp)
	}
	st, err := Status(ctx, nil, db, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	add("status", st)
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// anchorsRow is one anchors row of a fixture.
type anchorsRow struct {
	RowID string          `json:"row_id"`
	Data  json.RawMessage `json:"data"`
}

func anchorsRows(t *testing.T, db *store.DB) []anchorsRow {
	t.Helper()
	var rows []anchorsRow
	err := db.View(func(txn *store.Txn) error {
		return txn.ScanRows(store.TableAnchors, func(r *store.Row) error {
			if !r.Deleted {
				rows = append(rows, anchorsRow{r.RowID, append(json.RawMessage(nil), r.Data...)})
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].RowID < rows[j].RowID })
	return rows
}

func writeOrCompare(t *testing.T, path string, got []byte, update bool) {
	t.Helper()
	if update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		os.WriteFile(path+".got", got, 0o644)
		t.Fatalf("%s differs from what the readers answer now (written to %s.got)", path, path)
	}
}

// Every reader answers byte for byte what testdata/batch-readers.golden.json
// holds, recorded with the per-item anchors rows of before issue 16: the
// verification packets, state anchors, memory proofs and chain status of
// the same anchored data do not change with the row format.
func TestReadersGolden(t *testing.T) {
	env := readersWorker(t)
	if *updatePerItem {
		b, _ := json.MarshalIndent(anchorsRows(t, env.DB), "", " ")
		writeOrCompare(t, perItemRows, append(b, '\n'), true)
	}
	writeOrCompare(t, readersGolden, readersOutput(t, env.DB), *updateReaders)
}
