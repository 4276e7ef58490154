package anchor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
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
	updateReaders   = flag.Bool("update-readers", false, "rewrite testdata/batch-readers.golden.json")
	updatePerItem   = flag.Bool("update-per-item", false, "rewrite testdata/anchors-per-item.json (per-item code only)")
	updateBatchRows = flag.Bool("update-batch-rows", false, "rewrite testdata/anchors-batch.json")
)

const (
	readersGolden = "testdata/batch-readers.golden.json"
	perItemRows   = "testdata/anchors-per-item.json"
	batchRows     = "testdata/anchors-batch.json"
)

// detChain is a deterministic Chain: a root's transaction hash derives from
// the root, blocks count up from 100, every transaction is final at once.
type detChain struct {
	mu      sync.Mutex
	block   uint64
	roots   map[[32]byte]RootInfo
	sent    map[[32]byte]int // times each root was sent
	dropped map[string]bool  // transactions a "reorg" dropped
}

func newDetChain() *detChain {
	return &detChain{block: 100, roots: map[[32]byte]RootInfo{}, sent: map[[32]byte]int{}, dropped: map[string]bool{}}
}

func (c *detChain) anchor(root [32]byte, count int) Receipt {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.block++
	ri, ok := c.roots[root]
	if !ok {
		ri = RootInfo{ID: uint64(len(c.roots) + 1), AnchoredAt: time.Date(2026, 12, 1, 0, 0, int(c.block), 0, time.UTC), Count: uint32(count)}
		c.roots[root] = ri
	}
	tx := "tx " + HashHex(root)
	if n := c.sent[root]; n > 0 {
		tx += fmt.Sprint(" again ", n)
	}
	c.sent[root]++
	return Receipt{TxHash: HashHex(hashOf(tx)), Block: c.block, BlockHash: HashHex(hashOf(fmt.Sprint("block ", c.block))), RootID: ri.ID}
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
	if c.dropped[txHash] {
		return TxState{Head: c.block}, nil
	}
	// Every other transaction is final in the block it names (a block hash
	// the worker did not record is a move: tests here drop, never move).
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

// loadRows writes fixture rows into env's anchors table.
func loadRows(t *testing.T, env *storetest.Env, rows []anchorsRow) {
	t.Helper()
	muts := make([]store.Mutation, len(rows))
	for i, r := range rows {
		muts[i] = store.Mutation{Table: store.TableAnchors, RowID: r.RowID, Op: store.OpPut, Data: r.Data}
	}
	if _, err := env.Writer.Write(testCtx(t), muts...); err != nil {
		t.Fatal(err)
	}
}

func readRows(t *testing.T, path string) []anchorsRow {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rows []anchorsRow
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatal(err)
	}
	for i := range rows { // indented in the file, compact in the store
		var c bytes.Buffer
		if err := json.Compact(&c, rows[i].Data); err != nil {
			t.Fatal(err)
		}
		rows[i].Data = c.Bytes()
	}
	return rows
}

// A store whose anchors rows were written by the per-item code (one row per
// version, testdata/anchors-per-item.json, recorded before issue 16) reads
// exactly as before: every reader answers the golden. The worker, upgraded,
// anchors nothing of it again and rewrites none of its rows; what it
// anchors next is in batch rows, read beside the old ones.
func TestReadersPerItemRows(t *testing.T) {
	env := storetest.Start(t, t.TempDir())
	readersData(t, env, 1)
	readersData(t, env, 2)
	old := readRows(t, perItemRows)
	loadRows(t, env, old)
	writeOrCompare(t, readersGolden, readersOutput(t, env.DB), false)

	ch := newDetChain()
	ch.block = 200
	clk := clock.NewFake(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
	w := NewWorker(WorkerConfig{DB: env.DB, Writer: env.Writer, Chain: ch, Seed: goldenSeed(), Clock: clk, Interval: time.Hour,
		RPCURL: "http://127.0.0.1:8545"})
	before := env.Journal.Len()
	if err := w.Round(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if n := env.Journal.Len() - before; n != 0 || len(ch.roots) != 0 {
		t.Fatalf("the upgraded worker wrote %d rows and sent %d roots over the old records", n, len(ch.roots))
	}
	// New versions after the upgrade: batch rows beside the old ones.
	ctx := testCtx(t)
	data, _ := json.Marshal(map[string]any{"project": "crow", "version": 6, "state_hash": HashHex(hashOf("crow v6"))})
	if _, err := env.Writer.Write(ctx, store.Mutation{Table: store.TableStateVersions, RowID: fmt.Sprintf("crow/%020d", 6), Op: store.OpPut, Data: data}); err != nil {
		t.Fatal(err)
	}
	before = env.Journal.Len()
	if err := w.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if n := env.Journal.Len() - before; n != 1 {
		t.Fatalf("anchoring one version wrote %d rows, want 1 (its root's)", n)
	}
	rows := anchorsRows(t, env.DB)
	var added []anchorsRow
	byID := map[string]anchorsRow{}
	for _, r := range rows {
		byID[r.RowID] = r
	}
	for _, r := range old {
		if got := byID[r.RowID]; !bytes.Equal(got.Data, r.Data) {
			t.Fatalf("old row %s rewritten:\n%s\nwas\n%s", r.RowID, got.Data, r.Data)
		}
		delete(byID, r.RowID)
	}
	for _, r := range byID {
		added = append(added, r)
	}
	if len(added) != 1 || !strings.HasPrefix(added[0].RowID, "root/") {
		t.Fatalf("rows added: %+v", added)
	}
	rec, ok, err := StateRecord(env.DB, "crow", 6)
	if err != nil || !ok || rec.Root == "" {
		t.Fatalf("crow v6 after the upgrade: %+v %v %v", rec, ok, err)
	}
	checkRecordProof(t, rec)
	rep, err := Verifier{DB: env.DB, Versions: mapVersions{5: HashHex(hashOf("crow v5")), 6: HashHex(hashOf("crow v6"))},
		ProjectID: RecordsProjectID(env.DB)}.VerifyProject(ctx, "crow")
	if err != nil || len(rep.Versions) != 2 {
		t.Fatalf("VerifyProject: %+v %v", rep, err)
	}
	for _, c := range rep.Versions {
		if !c.Match || c.Packet == nil || CheckPacket(*c.Packet) != nil || c.Status != StatusUnverified {
			t.Fatalf("version %d: %+v", c.Version, c)
		}
	}
	// Every old record is still the one read.
	for _, r := range old {
		if !strings.HasPrefix(r.RowID, "state/") && !strings.HasPrefix(r.RowID, "memory/") {
			continue
		}
		var want Record
		json.Unmarshal(r.Data, &want)
		got, ok, err := ReadRecord(env.DB, r.RowID)
		if err != nil || !ok || !reflectEqual(got, want) {
			t.Fatalf("ReadRecord(%s) = %+v %v %v, want %+v", r.RowID, got, ok, err, want)
		}
	}
}

func reflectEqual(a, b Record) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// The rows the worker writes for the readers scenario, byte for byte
// (testdata/anchors-batch.json; regenerate with -update-batch-rows): one row
// per root, whose Batch holds its leaves, and the chain record. Changing
// the row format breaks this test on purpose: readers of rows already
// written must keep reading them.
func TestBatchRowGolden(t *testing.T) {
	env := readersWorker(t)
	rows := anchorsRows(t, env.DB)
	b, _ := json.MarshalIndent(rows, "", " ")
	writeOrCompare(t, batchRows, append(b, '\n'), *updateBatchRows)
	var roots, states, memories int
	for _, r := range rows {
		var rr RootRecord
		switch {
		case strings.HasPrefix(r.RowID, "chain/"):
		case strings.HasPrefix(r.RowID, "root/") && json.Unmarshal(r.Data, &rr) == nil && len(rr.Batch) > 0 && rr.Items == nil:
			roots++
			recs, err := BatchRecords(rr)
			if err != nil {
				t.Fatal(err)
			}
			if rr.Leaves == RecordState {
				states += len(recs)
			} else {
				memories += len(recs)
			}
		default:
			t.Fatalf("row %s: not a root's batch row", r.RowID)
		}
	}
	if roots != 6 || states != 8 || memories != 9 {
		t.Fatalf("%d roots, %d state and %d memory versions; want 6, 8, 9", roots, states, memories)
	}
	// The batch encodings, pinned.
	var pid, sh, eh [32]byte
	pid[0], sh[31], eh[0] = 0xaa, 0xbb, 0xcc
	if got := fmt.Sprintf("%x", encodeStateBatch([]stateLeafIn{{Project: "crow", ProjectID: pid, Version: 300, StateHash: sh}})); got !=
		"010463726f77aa00000000000000000000000000000000000000000000000000000000000000ac02"+"00000000000000000000000000000000000000000000000000000000000000bb" {
		t.Errorf("state batch = %s", got)
	}
	if got := fmt.Sprintf("%x", encodeMemoryBatch([]memoryLeafIn{{Number: 7, EventHash: eh}, {Number: 5, EventHash: eh}})); got !=
		"020e"+"cc00000000000000000000000000000000000000000000000000000000000000"+"03"+"cc00000000000000000000000000000000000000000000000000000000000000" {
		t.Errorf("memory batch = %s", got)
	}
}

// Batches decode to what was encoded; a truncated one, or one whose leaves
// make another root, is ErrBadBatch.
func TestBatchCodec(t *testing.T) {
	var ls []stateLeafIn
	var ms []memoryLeafIn
	for i := range 50 {
		ls = append(ls, stateLeafIn{Project: fmt.Sprint("p", i%3), ProjectID: hashOf(fmt.Sprint("pid", i%3)), Version: uint64(i*7 + 1), StateHash: hashOf(fmt.Sprint("s", i))})
		ms = append(ms, memoryLeafIn{Number: uint64(1000 - i*i%97), EventHash: hashOf(fmt.Sprint("e", i/2))})
	}
	gotLs, err := decodeStateBatch(encodeStateBatch(ls))
	if err != nil || fmt.Sprint(gotLs) != fmt.Sprint(ls) {
		t.Fatalf("states: %v", err)
	}
	gotMs, err := decodeMemoryBatch(encodeMemoryBatch(ms))
	if err != nil || fmt.Sprint(gotMs) != fmt.Sprint(ms) {
		t.Fatalf("memories: %v", err)
	}
	b := encodeMemoryBatch(ms)
	if _, err := decodeMemoryBatch(b[:len(b)-1]); !errors.Is(err, ErrBadBatch) {
		t.Fatalf("truncated: %v", err)
	}
	if _, err := decodeStateBatch(b); !errors.Is(err, ErrBadBatch) {
		t.Fatalf("a memory batch as states: %v", err)
	}
	rr := RootRecord{Kind: RecordRoot, Leaves: RecordMemory, Root: HashHex(hashOf("another root")), Batch: b}
	if _, err := BatchRecords(rr); !errors.Is(err, ErrBadBatch) {
		t.Fatalf("leaves of another root: %v", err)
	}
}

// The index follows the store: a root row written after the first lookup
// (replicated from home) is found; a root row deleted (a reorg dropped it
// and its memories changed) makes its versions pending; lookups from many
// goroutines agree.
func TestBatchIndexFollowsTheStore(t *testing.T) {
	home := readersWorker(t)
	sat := storetest.Start(t, t.TempDir())
	rows := anchorsRows(t, home.DB)
	var first, later []anchorsRow
	for _, r := range rows {
		var rr RootRecord
		json.Unmarshal(r.Data, &rr)
		if rr.Leaves == RecordMemory && strings.Contains(string(r.Data), `"root_id":6`) {
			later = append(later, r) // the last memory root (#9)
		} else {
			first = append(first, r)
		}
	}
	loadRows(t, sat, first)
	if _, ok, err := MemoryRecord(sat.DB, 9); ok || err != nil {
		t.Fatalf("#9 before its root replicated: %v %v", ok, err)
	}
	loadRows(t, sat, later)
	rec, ok, err := MemoryRecord(sat.DB, 9)
	if err != nil || !ok || rec.Number != 9 || rec.MemoryID != "" {
		t.Fatalf("#9 after its root replicated: %+v %v %v", rec, ok, err) // no memory_versions here: no memory id
	}
	if n := indexOf(sat.DB).rebuilds; n != 1 {
		t.Fatalf("%d full rebuilds, want 1: the new root is found in the change queue", n)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := uint64(1); n <= 9; n++ {
				if rec, ok, err := MemoryRecord(sat.DB, n); err != nil || !ok || rec.Number != n {
					t.Errorf("goroutine %d: #%d: %+v %v %v", g, n, rec, ok, err)
				}
			}
		}()
	}
	wg.Wait()
	if _, err := sat.Writer.Write(testCtx(t), store.Mutation{Table: store.TableAnchors, RowID: later[0].RowID, Op: store.OpDelete}); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := MemoryRecord(sat.DB, 9); ok || err != nil {
		t.Fatalf("#9 after its root was deleted: %v %v", ok, err)
	}
	if _, ok, err := MemoryRecord(sat.DB, 8); !ok || err != nil {
		t.Fatalf("#8 after another root was deleted: %v %v", ok, err)
	}
	// Written again, and the change queue pruned past it (the search
	// indexer prunes it): found by rereading every root row.
	loadRows(t, sat, later)
	seq, _ := storeSeq(sat.DB)
	if err := sat.DB.PruneQueue(seq); err != nil {
		t.Fatal(err)
	}
	before := indexOf(sat.DB).rebuilds
	if rec, ok, err := MemoryRecord(sat.DB, 9); !ok || err != nil || rec.Number != 9 {
		t.Fatalf("#9 written again after a prune: %+v %v %v", rec, ok, err)
	}
	if indexOf(sat.DB).rebuilds != before+1 {
		t.Fatal("no rebuild after the queue was pruned")
	}
}

// The worker follows roots recorded in the per-item format as it did: a
// dropped root is sent again and only its root row changes (one row per
// root; the per-version rows stay as they are, their records follow the
// root); a dropped memory root that cannot be rebuilt (a memory forgotten
// meanwhile) is deleted with its per-version rows, and its other memories
// are anchored again under a batch row.
func TestWorkerFollowsPerItemRoots(t *testing.T) {
	env := storetest.Start(t, t.TempDir())
	ctx := testCtx(t)
	readersData(t, env, 1)
	readersData(t, env, 2)
	old := readRows(t, perItemRows)
	loadRows(t, env, old)
	ch := newDetChain()
	ch.block = 300
	roots := map[string]RootRecord{}
	for _, r := range old {
		var rr RootRecord
		if strings.HasPrefix(r.RowID, "root/") && json.Unmarshal(r.Data, &rr) == nil {
			roots[r.RowID] = rr
			ch.dropped[rr.TxHash] = true // this chain lost them all (a fresh chain after a failover)
			ch.sent[mustRoot(t, rr.Root)] = 1
		}
	}
	clk := clock.NewFake(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
	w := NewWorker(WorkerConfig{DB: env.DB, Writer: env.Writer, Chain: ch, Seed: goldenSeed(), Clock: clk, Interval: time.Hour,
		RPCURL: "http://127.0.0.1:8545", Recheck: true})
	if err := w.Round(ctx); err != nil {
		t.Fatal(err)
	}
	now := map[string]anchorsRow{}
	for _, r := range anchorsRows(t, env.DB) {
		now[r.RowID] = r
	}
	for _, r := range old {
		rr, isRoot := roots[r.RowID]
		switch {
		case isRoot:
			var got RootRecord
			json.Unmarshal(now[r.RowID].Data, &got)
			if got.Resent != 1 || got.TxHash == rr.TxHash || !slices.Equal(got.Items, rr.Items) || len(got.Batch) != 0 {
				t.Fatalf("root %s after the re-send: %+v", r.RowID, got)
			}
		case !bytes.Equal(now[r.RowID].Data, r.Data):
			t.Fatalf("row %s rewritten by the re-send", r.RowID)
		}
	}
	if len(now) != len(old) {
		t.Fatalf("%d rows after the re-send, %d before", len(now), len(old))
	}
	sa, err := Records{DB: env.DB}.StateAnchor("crow", 2)
	rec, _, _ := ReadRecord(env.DB, StateRecordID("crow", 2))
	rr := roots["root/"+rec.Root]
	var got RootRecord
	json.Unmarshal(now["root/"+rec.Root].Data, &got)
	if err != nil || sa.Status != StatusFinal || sa.TxHash != got.TxHash || sa.TxHash == rr.TxHash {
		t.Fatalf("crow v2 after the re-send: %+v %v (root %+v)", sa, err, got)
	}

	// Memory #1's root dropped again, and mem-1 forgotten meanwhile.
	mrec, _, _ := ReadRecord(env.DB, VersionRecordID(1))
	var mroot RootRecord
	json.Unmarshal(now["root/"+mrec.Root].Data, &mroot)
	ch.mu.Lock()
	ch.dropped[mroot.TxHash] = true
	ch.mu.Unlock()
	if err := ShredMemoryKey(env.DB, "mem-1"); err != nil {
		t.Fatal(err)
	}
	// Final roots are followed again only at a start with Recheck.
	w = NewWorker(WorkerConfig{DB: env.DB, Writer: env.Writer, Chain: ch, Seed: goldenSeed(), Clock: clk, Interval: time.Hour,
		RPCURL: "http://127.0.0.1:8545", Recheck: true})
	if err := w.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := ReadRootRecord(env.DB, mrec.Root); ok {
		t.Fatal("the root that cannot be rebuilt still has a record")
	}
	for _, id := range mroot.Items {
		if r, err := env.DB.Get(store.TableAnchors, id); err != nil || !r.Deleted {
			t.Fatalf("%s: not deleted with its root (%v)", id, err)
		}
	}
	if err := w.Round(ctx); err != nil { // anchors the root's other memories again
		t.Fatal(err)
	}
	for _, id := range mroot.Items {
		rec, ok, err := ReadRecord(env.DB, id)
		switch {
		case id == VersionRecordID(1):
			if ok || err != nil {
				t.Fatalf("forgotten #1 anchored again: %+v %v", rec, err)
			}
		case err != nil || !ok || rec.Root == mrec.Root:
			t.Fatalf("%s after its root was dropped: %+v %v %v", id, rec, ok, err)
		default:
			rr, _, _ := ReadRootRecord(env.DB, rec.Root)
			if len(rr.Batch) == 0 || rr.Items != nil {
				t.Fatalf("%s anchored again under %+v, not a batch row", id, rr)
			}
		}
	}
}
