package audit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/crow-sync/crow/anchor"
	"github.com/crow-sync/crow/audit"
	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/projects"
	"github.com/crow-sync/crow/state"
	"github.com/crow-sync/crow/store"
	"github.com/crow-sync/crow/store/storetest"
)

// fixture is a home store with numbered memories in two projects and two
// state versions of project "crow".
type fixture struct {
	env  *storetest.Env
	mem  *memory.Service
	ids  []string // memory ids, in number order (ids[i] has number i+1)
	nums map[string]uint64
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	env := storetest.Start(t, t.TempDir())
	f := &fixture{env: env, mem: memory.NewService(env.DB, env.Writer, nil, memory.Options{}), nums: map[string]uint64{}}
	ctx := context.Background()
	for i := range 6 {
		project := "crow"
		if i%3 == 2 {
			project = "other"
		}
		m, err := f.mem.Add(ctx, memory.CreateInput{Content: fmt.Sprintf("memory %d of %s", i, project), Project: project})
		if err != nil {
			t.Fatal(err)
		}
		f.ids = append(f.ids, m.ID)
	}
	f.number(t)
	svc := projects.New(env.DB, env.Writer, true)
	consolidate := func(ops ...map[string]any) {
		var raw []json.RawMessage
		for _, o := range ops {
			b, _ := json.Marshal(o)
			raw = append(raw, b)
		}
		res, err := svc.Consolidate(ctx, "crow", projects.Request{Ops: raw})
		if err != nil || len(res.Rejected) > 0 {
			t.Fatalf("consolidating: %v %+v", err, res.Rejected)
		}
	}
	consolidate(map[string]any{"op": "add_decision", "title": "Badger", "statement": "badger is the store",
		"evidence_memory_ids": []uint64{f.nums[f.ids[0]], f.nums[f.ids[1]]}})
	consolidate(map[string]any{"op": "add_risk", "title": "Disk", "severity": "high", "evidence_memory_ids": []uint64{f.nums[f.ids[3]]}},
		map[string]any{"op": "set_phase", "phase": "alpha"})
	return f
}

// number runs home's Numberer until every memory of f has its number.
func (f *fixture) number(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- memory.NewNumberer(f.env.DB, f.env.Writer, slog.New(slog.DiscardHandler)).Serve(ctx)
	}()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(10 * time.Second)
	for _, id := range f.ids {
		for {
			m, err := f.mem.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if m.Number != nil {
				f.nums[id] = *m.Number
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("memory %s never numbered", id)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// rewrite changes one row's data in place, as an attacker with the files would.
func rewrite(t *testing.T, db *store.DB, table, id string, edit func(map[string]any)) {
	t.Helper()
	err := db.Update(context.Background(), func(txn *store.Txn) error {
		r, err := txn.GetRow(table, id)
		if err != nil {
			return err
		}
		var d map[string]any
		if err := json.Unmarshal(r.Data, &d); err != nil {
			return err
		}
		edit(d)
		if r.Data, err = json.Marshal(d); err != nil {
			return err
		}
		_, err = txn.PutRow(r)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func run(t *testing.T, db *store.DB, opts audit.Options) audit.Report {
	t.Helper()
	r, err := audit.Run(context.Background(), audit.NewStoreSource(db), opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func mismatches(r audit.Report) string {
	var b strings.Builder
	for _, m := range r.Mismatches {
		b.WriteString(m.String() + "\n")
	}
	return b.String()
}

func TestCleanStorePasses(t *testing.T) {
	f := newFixture(t)
	r := run(t, f.env.DB, audit.Options{})
	if !r.OK || len(r.Mismatches) != 0 {
		t.Fatalf("a clean store fails:\n%s", mismatches(r))
	}
	// The store has memory_versions: 6 versions, 6 memories rows, 2 states.
	if r.Source != audit.KindVersions || r.Next != "" || r.Total != 6+6+2 || r.Done != 14 {
		t.Errorf("source %q next %q total %d done %d", r.Source, r.Next, r.Total, r.Done)
	}
	want := map[string]uint64{audit.CheckContentHash: 6 + 6, audit.CheckEventHash: 6, audit.CheckNumbering: 7,
		audit.CheckEvidenceRoot: 3, audit.CheckStateHash: 2, audit.CheckStateChain: 2}
	for name, n := range want {
		if c := r.Check(name); c.OK != n || c.Checked != n {
			t.Errorf("%s: %+v, want %d ok", name, c, n)
		}
	}
	// Not anchored yet: pending, not a failure.
	if c := r.Check(audit.CheckMemoryAnchor); c.Skipped != 6 || c.Mismatches != 0 {
		t.Errorf("memory anchors %+v, want 6 skipped", c)
	}

	// Edits change the live rows, never a numbered version: the audit still
	// passes (the edited content is a new version once home numbers it).
	ctx := context.Background()
	if _, err := f.mem.Update(ctx, f.ids[0], memory.PatchInput{Category: ptr("decision")}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.mem.Update(ctx, f.ids[1], memory.PatchInput{Content: ptr("rewritten")}); err != nil {
		t.Fatal(err)
	}
	r = run(t, f.env.DB, audit.Options{})
	if !r.OK {
		t.Fatalf("edits fail the audit:\n%s", mismatches(r))
	}
	if c := r.Check(audit.CheckEventHash); c.OK != 6 || c.Skipped != 0 {
		t.Errorf("event hashes after an edit: %+v", c)
	}
}

func ptr[T any](v T) *T { return &v }

func TestAlteredContentIsNamed(t *testing.T) {
	f := newFixture(t)
	id := f.ids[4]
	rewrite(t, f.env.DB, store.TableMemories, id, func(d map[string]any) { d["content"] = "memory 4 of crow, altered" })
	r := run(t, f.env.DB, audit.Options{})
	if r.OK || len(r.Mismatches) != 1 {
		t.Fatalf("want one mismatch, got:\n%s", mismatches(r))
	}
	m := r.Mismatches[0]
	if m.Check != audit.CheckContentHash || m.MemoryID != id || m.Number != f.nums[id] ||
		m.Want != memory.ContentHash("memory 4 of crow, altered") || m.Got != memory.ContentHash("memory 4 of crow") {
		t.Errorf("mismatch %+v", m)
	}
	if s := m.String(); !strings.Contains(s, id) || !strings.Contains(s, fmt.Sprintf("#%d", f.nums[id])) {
		t.Errorf("%q does not name the memory", s)
	}
}

func TestAlteredEventHashIsNamed(t *testing.T) {
	f := newFixture(t)
	id := f.ids[0] // cited by the decision
	forged := "0x" + strings.Repeat("ab", 32)
	rewrite(t, f.env.DB, store.TableMemoryVersions, memory.VersionRowID(f.nums[id]), func(d map[string]any) { d["event_hash"] = forged })
	r := run(t, f.env.DB, audit.Options{})
	got := mismatches(r)
	if r.Check(audit.CheckEventHash).Mismatches != 1 || !strings.Contains(got, "event_hash: memory "+id+" #1") {
		t.Errorf("the event hash is not named:\n%s", got)
	}
	// Both versions carry the decision, whose root no longer recomputes.
	if c := r.Check(audit.CheckEvidenceRoot); c.Mismatches != 2 || !strings.Contains(got, "evidence_root: project crow v1 dec_0001") {
		t.Errorf("evidence roots %+v:\n%s", c, got)
	}
}

func TestAlteredStateVersionIsNamed(t *testing.T) {
	f := newFixture(t)
	db := f.env.DB
	// v1's decision retitled, its state_hash kept.
	rewrite(t, db, store.TableStateVersions, "crow/00000000000000000001", func(d map[string]any) {
		d["state"].(map[string]any)["decisions"].([]any)[0].(map[string]any)["title"] = "Bolt"
	})
	r := run(t, db, audit.Options{})
	got := mismatches(r)
	if len(r.Mismatches) != 2 || r.Check(audit.CheckStateHash).Mismatches != 1 || r.Check(audit.CheckStateChain).Mismatches != 1 ||
		!strings.Contains(got, "state_hash: project crow v1") || !strings.Contains(got, "state_chain: project crow v2") {
		t.Fatalf("want v1's hash and v2's link named, got:\n%s", got)
	}

	// A forger who also rehashes v1 still breaks v2's link; and one who
	// forges an evidence root and rehashes is caught by the root.
	f = newFixture(t)
	db = f.env.DB
	var v state.Version
	rw := func(id string, edit func(v *state.Version)) {
		rewrite(t, db, store.TableStateVersions, id, func(d map[string]any) {
			b, _ := json.Marshal(d)
			if err := json.Unmarshal(b, &v); err != nil {
				t.Fatal(err)
			}
			edit(&v)
			v.StateHash, _ = state.Hash(v.State)
			b, _ = json.Marshal(v)
			clear(d)
			_ = json.Unmarshal(b, &d)
		})
	}
	rw("crow/00000000000000000002", func(v *state.Version) { v.State.Risks[0].EvidenceRoot = "0x" + strings.Repeat("00", 32) })
	r = run(t, db, audit.Options{})
	got = mismatches(r)
	if len(r.Mismatches) != 1 || !strings.Contains(got, "evidence_root: project crow v2 risk_0001") {
		t.Fatalf("want the forged root named, got:\n%s", got)
	}
}

func TestPagesAddUp(t *testing.T) {
	f := newFixture(t)
	rewrite(t, f.env.DB, store.TableMemories, f.ids[2], func(d map[string]any) { d["content"] = "x" })
	whole := run(t, f.env.DB, audit.Options{})
	for _, limit := range []int{1, 2, 3, 5, 7, 100} {
		var merged audit.Report
		cursor, pages := "", 0
		var lastDone, total uint64
		for {
			page := run(t, f.env.DB, audit.Options{After: cursor, Limit: limit, Progress: func(done, t uint64) { lastDone, total = done, t }})
			if cursor == "" && total != whole.Total {
				t.Errorf("limit %d: progress total %d, want %d", limit, total, whole.Total)
			}
			if lastDone != page.Done {
				t.Errorf("limit %d: progress ended at %d, page did %d", limit, lastDone, page.Done)
			}
			merged.Add(page)
			pages++
			if cursor = page.Next; cursor == "" {
				break
			}
			if pages > 50 {
				t.Fatal("no end")
			}
		}
		if fmt.Sprint(merged.Checks) != fmt.Sprint(whole.Checks) || mismatches(merged) != mismatches(whole) ||
			merged.Done != whole.Done || merged.OK || merged.Total != whole.Total {
			t.Errorf("limit %d (%d pages):\n%v\n%s\nwant\n%v\n%s", limit, pages, merged.Checks, mismatches(merged), whole.Checks, mismatches(whole))
		}
	}
	if _, err := audit.Run(context.Background(), audit.NewStoreSource(f.env.DB), audit.Options{After: "zz"}); err == nil {
		t.Error("a bad cursor is accepted")
	}
}

func TestProjectOnly(t *testing.T) {
	f := newFixture(t)
	rewrite(t, f.env.DB, store.TableMemories, f.ids[2], func(d map[string]any) { d["content"] = "x" }) // of "other"
	r := run(t, f.env.DB, audit.Options{Project: "crow"})
	if !r.OK || r.Total != 4+4+2 || r.Check(audit.CheckContentHash).OK != 4+4 || r.Check(audit.CheckStateHash).OK != 2 {
		t.Errorf("project crow: ok %v total %d %v\n%s", r.OK, r.Total, r.Checks, mismatches(r))
	}
	r = run(t, f.env.DB, audit.Options{Project: "other"})
	if r.OK || r.Mismatches[0].MemoryID != f.ids[2] {
		t.Errorf("project other:\n%s", mismatches(r))
	}
	if _, err := audit.Run(context.Background(), audit.NewStoreSource(f.env.DB), audit.Options{Project: "nope"}); err == nil {
		t.Error("an unknown project is audited")
	}
}

// chainFake is a chain holding the memory events of some blocks and
// answering a verdict per state version.
type chainFake struct {
	blocks   map[uint64][][32]byte
	verdicts []anchor.VersionCheck
}

func (c chainFake) MemoryEventsBetween(ctx context.Context, from, to uint64) ([]anchor.MemoryEvent, error) {
	var out []anchor.MemoryEvent
	for b := from; b <= to; b++ {
		for _, h := range c.blocks[b] {
			out = append(out, anchor.MemoryEvent{MemoryAnchor: anchor.MemoryAnchor{EventHash: h}, Block: b})
		}
	}
	return out, nil
}

func (c chainFake) VerifyProject(ctx context.Context, project string) (anchor.Report, error) {
	return anchor.Report{Project: project, Versions: c.verdicts}, nil
}

func TestAgainstTheChain(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	chain := chainFake{blocks: map[uint64][][32]byte{}}
	// Memories 1-4 anchored in blocks 7 and 8, as home records them; memory 3's
	// event is missing from its block.
	var muts []store.Mutation
	for i, id := range f.ids[:4] {
		m, err := f.mem.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		block := uint64(7 + i/2)
		if i != 2 {
			h, _ := state.ParseHash(*m.EventHash)
			chain.blocks[block] = append(chain.blocks[block], h)
		}
		root := "0x" + strings.Repeat(fmt.Sprintf("%02x", block), 32) // the block's batch root
		data, _ := json.Marshal(anchor.Record{Kind: anchor.RecordMemory, Status: anchor.StatusFinal, MemoryID: id, Root: root,
			Number: *m.Number, EventHash: *m.EventHash, TxHash: fmt.Sprintf("0xtx%d", block), Block: block})
		muts = append(muts, store.Mutation{Table: store.TableAnchors, RowID: anchor.MemoryRecordID(id), Op: store.OpPut, Data: data})
	}
	if _, err := f.env.Writer.Write(ctx, muts...); err != nil {
		t.Fatal(err)
	}
	// The Verifier's verdicts: v1 final; v2's record commits another hash
	// (mismatch); v3's root is not on chain (missing); v4 in a block, not
	// final yet; v5 pending.
	chain.verdicts = []anchor.VersionCheck{
		{Version: 1, StateHash: "0x01", Root: "0xr1", RootID: 1, Status: anchor.StatusFinal, Match: true},
		{Version: 2, StateHash: "0x02", Root: "0xr2", RootID: 2, Status: anchor.StatusMismatch},
		{Version: 3, StateHash: "0x03", Root: "0xr3", Status: anchor.StatusMissing, Match: true},
		{Version: 4, StateHash: "0x04", Root: "0xr4", RootID: 4, Status: anchor.StatusIncluded, Match: true},
		{Version: 5, StateHash: "0x05", Status: anchor.StatusPending},
	}
	r := run(t, f.env.DB, audit.Options{MemoryChain: chain, StateAnchors: chain, ChainKind: anchor.KindEmbedded})
	got := mismatches(r)
	if c := r.Check(audit.CheckMemoryAnchor); c.OK != 3 || c.Mismatches != 1 || c.Skipped != 2 {
		t.Errorf("memory anchors %+v", c)
	}
	if !strings.Contains(got, "memory_anchor: memory "+f.ids[2]+" #3: block 8 (tx 0xtx8) has no MemoryAnchored event") {
		t.Errorf("the unanchored memory is not named:\n%s", got)
	}
	if c := r.Check(audit.CheckStateAnchor); c.OK != 2 || c.Mismatches != 2 || c.Skipped != 1 ||
		!strings.Contains(got, "state_anchor: project crow v2: the records or the chain contradict this version (mismatch) (want 0xr2, got 0x02)") ||
		!strings.Contains(got, "state_anchor: project crow v3: the records or the chain contradict this version (missing) (want 0xr3, got 0x03)") ||
		strings.Contains(got, "crow v1") || strings.Contains(got, "crow v4") || strings.Contains(got, "crow v5") {
		t.Errorf("state anchors %+v:\n%s", c, got)
	}
	if r.Chain != anchor.KindEmbedded {
		t.Errorf("chain %q", r.Chain)
	}
}
