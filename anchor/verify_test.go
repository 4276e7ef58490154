package anchor_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/crow-sync/crow/anchor"
	"github.com/crow-sync/crow/projects"
	"github.com/crow-sync/crow/state"
	"github.com/crow-sync/crow/store"
	"github.com/crow-sync/crow/store/storetest"
)

// fakeChain is an anchor.ChainReader over a map (version → state hash).
type fakeChain struct {
	anchors map[uint64][32]byte
	err     error
}

func (c fakeChain) GetAnchor(_ context.Context, _ [32]byte, v uint64) (anchor.Anchor, bool, error) {
	if c.err != nil {
		return anchor.Anchor{}, false, c.err
	}
	h, ok := c.anchors[v]
	if !ok {
		return anchor.Anchor{}, false, nil
	}
	return anchor.Anchor{ID: 100 + v, Version: v, StateHash: h, AnchoredAt: time.Unix(1700000000, 0),
		AnchoredBy: "0xOwner", TxHash: fmt.Sprintf("0xtx%d", v), Block: 7}, true, nil
}

func (fakeChain) Info() anchor.ChainInfo {
	return anchor.ChainInfo{Kind: "embedded", ChainID: 1337, Contract: "0xContract"}
}

// fakeVersions is an anchor.Versions over a map (version → state hash).
type fakeVersions map[uint64]string

func (f fakeVersions) Latest(project string) (*state.Version, error) {
	var top uint64
	for v := range f {
		top = max(top, v)
	}
	if top == 0 {
		return nil, fmt.Errorf("project %q: %w", project, projects.ErrNoState)
	}
	return f.Version(project, top)
}

func (f fakeVersions) Version(project string, n uint64) (*state.Version, error) {
	h, ok := f[n]
	if !ok {
		return nil, fmt.Errorf("project %q version %d: %w", project, n, projects.ErrNoState)
	}
	return &state.Version{Project: project, Version: n, StateHash: h}, nil
}

func hash(b byte) [32]byte { return [32]byte{b} }

// Every verdict: anchored, pending, mismatch, conflict (home's record), and
// without a chain unverified (home's record says anchored) or pending.
func TestVerifierVerdicts(t *testing.T) {
	env := storetest.Start(t, t.TempDir())
	ctx := context.Background()
	record := func(v uint64, status, stateHash string) {
		t.Helper()
		data, _ := json.Marshal(anchor.Record{Kind: anchor.RecordState, Status: status, Project: "crow", Version: v,
			StateHash: stateHash, AnchorID: 100 + v, TxHash: fmt.Sprintf("0xrec%d", v), Block: 5})
		if _, err := env.Writer.Write(ctx, store.Mutation{Table: store.TableAnchors, RowID: anchor.StateRecordID("crow", v),
			Op: store.OpPut, Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	h := func(b byte) string { return anchor.HashHex(hash(b)) }
	// 1 anchored, 2 pending, 3 mismatch, 4 conflict, 5 not replicated here.
	versions := fakeVersions{1: h(1), 2: h(2), 3: h(3), 4: h(4), 6: h(6)}
	record(1, anchor.StatusAnchored, h(1))
	record(3, anchor.StatusAnchored, h(3))
	record(4, anchor.StatusConflict, h(4))
	record(6, anchor.StatusAnchored, h(9)) // home's record disagrees with the hash held here
	chain := fakeChain{anchors: map[uint64][32]byte{1: hash(1), 3: hash(33), 6: hash(6)}}
	pid := func(string) ([32]byte, bool) { return hash(0xAA), true }

	v := anchor.Verifier{DB: env.DB, Chain: chain, ProjectID: pid, Versions: versions}
	rep, err := v.VerifyProject(ctx, "crow")
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint64]struct {
		status string
		match  bool
	}{1: {anchor.StatusAnchored, true}, 2: {anchor.StatusPending, false}, 3: {anchor.StatusMismatch, false},
		4: {anchor.StatusConflict, false}, 6: {anchor.StatusAnchored, true}}
	if len(rep.Versions) != len(want) || rep.Verified {
		t.Fatalf("report: %+v", rep)
	}
	for _, c := range rep.Versions {
		if w := want[c.Version]; c.Status != w.status || c.Match != w.match {
			t.Errorf("version %d: %s match=%v, want %s match=%v", c.Version, c.Status, c.Match, w.status, w.match)
		}
	}
	if c := rep.Versions[0]; c.AnchorID != 101 || c.OnchainStateHash != h(1) || c.TxHash != "0xtx1" ||
		c.AnchoredAt != "2023-11-14T22:13:20Z" || c.AnchoredBy != "0xOwner" || c.BlockNumber != 7 {
		t.Errorf("anchored version's chain fields: %+v", c)
	}
	if rep.Project != "crow" || rep.ProjectID != anchor.HashHex(hash(0xAA)) || rep.HowTo != anchor.HowToVerify ||
		rep.Chain == nil || *rep.Chain != (anchor.ChainDoc{Kind: "embedded", ChainID: 1337, Contract: "0xContract"}) {
		t.Errorf("report header: %+v", rep)
	}

	// One version: the newest by default, or the one asked for.
	one, err := v.VerifyVersion(ctx, "crow", 0)
	if err != nil || len(one.Versions) != 1 || one.Versions[0].Version != 6 || !one.Verified {
		t.Fatalf("newest: %+v %v", one, err)
	}
	one, err = v.VerifyVersion(ctx, "crow", 3)
	if err != nil || len(one.Versions) != 1 || one.Versions[0].Status != anchor.StatusMismatch || one.Verified {
		t.Fatalf("version 3: %+v %v", one, err)
	}
	if _, err := v.VerifyVersion(ctx, "crow", 5); !errors.Is(err, projects.ErrNoState) {
		t.Fatalf("version not held here: %v", err)
	}

	// All anchored: verified.
	all := anchor.Verifier{DB: env.DB, Chain: chain, ProjectID: pid, Versions: fakeVersions{1: h(1)}}
	if rep, err := all.VerifyProject(ctx, "crow"); err != nil || !rep.Verified {
		t.Fatalf("all anchored: %+v %v", rep, err)
	}

	// No chain: home's anchored records are unverified (matching or not),
	// its conflict stays, the rest is pending.
	off := anchor.Verifier{DB: env.DB, ProjectID: pid, Versions: versions}
	rep, err = off.VerifyProject(ctx, "crow")
	if err != nil || rep.Chain != nil || rep.Verified {
		t.Fatalf("no chain: %+v %v", rep, err)
	}
	want = map[uint64]struct {
		status string
		match  bool
	}{1: {anchor.StatusUnverified, true}, 2: {anchor.StatusPending, false}, 3: {anchor.StatusUnverified, true},
		4: {anchor.StatusConflict, false}, 6: {anchor.StatusUnverified, false}}
	for _, c := range rep.Versions {
		if w := want[c.Version]; c.Status != w.status || c.Match != w.match {
			t.Errorf("no chain, version %d: %s match=%v, want %s match=%v", c.Version, c.Status, c.Match, w.status, w.match)
		}
	}
	if c := rep.Versions[0]; c.TxHash != "0xrec1" || c.AnchorID != 101 || c.BlockNumber != 5 || c.OnchainStateHash != "" {
		t.Errorf("no chain: the record's fields: %+v", c)
	}

	// Errors: no state at all; a chain that cannot be read.
	if _, err := (anchor.Verifier{DB: env.DB, ProjectID: pid, Versions: fakeVersions{}}).VerifyProject(ctx, "x"); !errors.Is(err, projects.ErrNoState) {
		t.Fatalf("no versions: %v", err)
	}
	broken := anchor.Verifier{DB: env.DB, Chain: fakeChain{err: errors.New("connection refused")}, ProjectID: pid, Versions: versions}
	if _, err := broken.VerifyProject(ctx, "crow"); !errors.Is(err, anchor.ErrChainUnreadable) {
		t.Fatalf("unreadable chain: %v", err)
	}
}

// Records gives home's anchoring record of a version, pending without one.
func TestRecordsStateAnchor(t *testing.T) {
	env := storetest.Start(t, t.TempDir())
	data, _ := json.Marshal(anchor.Record{Kind: anchor.RecordState, Status: anchor.StatusAnchored, Project: "crow", Version: 1,
		AnchorID: 9, TxHash: "0xt", Block: 3})
	if _, err := env.Writer.Write(context.Background(), store.Mutation{Table: store.TableAnchors,
		RowID: anchor.StateRecordID("crow", 1), Op: store.OpPut, Data: data}); err != nil {
		t.Fatal(err)
	}
	r := anchor.Records{DB: env.DB}
	if a, err := r.StateAnchor("crow", 1); err != nil ||
		a != (projects.StateAnchor{Status: anchor.StatusAnchored, OnchainAnchorID: 9, TxHash: "0xt", BlockNumber: 3}) {
		t.Fatalf("recorded: %+v %v", a, err)
	}
	if a, err := r.StateAnchor("crow", 2); err != nil || a != (projects.StateAnchor{Status: anchor.StatusPending}) {
		t.Fatalf("none: %+v %v", a, err)
	}
	if a, err := (anchor.Records{}).StateAnchor("crow", 1); err != nil || a.Status != anchor.StatusPending {
		t.Fatalf("no DB: %+v %v", a, err)
	}
}

func TestVersionCheckContradicted(t *testing.T) {
	for status, want := range map[string]bool{
		anchor.StatusAnchored: false, anchor.StatusPending: false, anchor.StatusUnverified: false,
		anchor.StatusMismatch: true, anchor.StatusConflict: true,
	} {
		if got := (anchor.VersionCheck{Status: status}).Contradicted(); got != want {
			t.Errorf("%s: Contradicted() = %v, want %v", status, got, want)
		}
	}
}

// zeroGuard is a ChainReader that fails the test when asked for the zero
// project id, and counts the reads.
type zeroGuard struct {
	fakeChain
	t     *testing.T
	reads *int
}

func (g zeroGuard) GetAnchor(ctx context.Context, pid [32]byte, v uint64) (anchor.Anchor, bool, error) {
	*g.reads++
	if pid == ([32]byte{}) {
		g.t.Errorf("the chain was read with a zero project id (version %d)", v)
	}
	return g.fakeChain.GetAnchor(ctx, pid, v)
}

// An instance that cannot name the project on chain (a satellite before
// home recorded a project id) reports project_id "" and home's records
// only, as without a chain, and never reads the chain. Records written
// before Record.ProjectID existed name nothing.
func TestVerifierWithoutProjectID(t *testing.T) {
	env := storetest.Start(t, t.TempDir())
	ctx := context.Background()
	h := func(b byte) string { return anchor.HashHex(hash(b)) }
	// An old record (no project_id) says version 1 is anchored.
	data, _ := json.Marshal(anchor.Record{Kind: anchor.RecordState, Status: anchor.StatusAnchored, Project: "crow", Version: 1,
		StateHash: h(1), AnchorID: 1, TxHash: "0xold", Block: 2})
	if _, err := env.Writer.Write(ctx, store.Mutation{Table: store.TableAnchors, RowID: anchor.StateRecordID("crow", 1),
		Op: store.OpPut, Data: data}); err != nil {
		t.Fatal(err)
	}
	reads := 0
	chain := zeroGuard{fakeChain{anchors: map[uint64][32]byte{1: hash(1), 2: hash(2)}}, t, &reads}
	for _, pid := range []func(string) ([32]byte, bool){
		anchor.RecordsProjectID(env.DB),
		func(string) ([32]byte, bool) { return [32]byte{}, false },
		func(string) ([32]byte, bool) { return [32]byte{}, true }, // a zero id is never used
		nil,
	} {
		v := anchor.Verifier{DB: env.DB, Chain: chain, ProjectID: pid, Versions: fakeVersions{1: h(1), 2: h(2)}}
		rep, err := v.VerifyProject(ctx, "crow")
		if err != nil || rep.ProjectID != "" || rep.Chain != nil || rep.Verified || len(rep.Versions) != 2 {
			t.Fatalf("report: %+v %v", rep, err)
		}
		if c := rep.Versions[0]; c.Status != anchor.StatusUnverified || !c.Match || c.TxHash != "0xold" {
			t.Errorf("version 1 (home's record): %+v", c)
		}
		if c := rep.Versions[1]; c.Status != anchor.StatusPending {
			t.Errorf("version 2 (no record): %+v", c)
		}
		one, err := v.VerifyVersion(ctx, "crow", 1)
		if err != nil || one.ProjectID != "" || one.Versions[0].Status != anchor.StatusUnverified {
			t.Fatalf("one version: %+v %v", one, err)
		}
		b, _ := json.Marshal(rep)
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil || doc["project_id"] != "" {
			t.Fatalf("JSON project_id: %s", b)
		}
	}
	if reads != 0 {
		t.Fatalf("the chain was read %d times", reads)
	}
}

// RecordedProjectID takes the project id from the project's own state
// records (the newest that has one), not from a project whose name extends
// it, nor from records without one.
func TestRecordedProjectID(t *testing.T) {
	env := storetest.Start(t, t.TempDir())
	ctx := context.Background()
	put := func(project string, v uint64, pid string) {
		t.Helper()
		data, _ := json.Marshal(anchor.Record{Kind: anchor.RecordState, Status: anchor.StatusAnchored, Project: project,
			ProjectID: pid, Version: v, StateHash: anchor.HashHex(hash(byte(v)))})
		if _, err := env.Writer.Write(ctx, store.Mutation{Table: store.TableAnchors, RowID: anchor.StateRecordID(project, v),
			Op: store.OpPut, Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	put("crow", 1, "")                      // before Record.ProjectID
	put("crow", 2, anchor.HashHex(hash(7))) // the id
	put("crow", 3, "")
	put("crow", 4, "not a hash")
	put("crow/x", 1, anchor.HashHex(hash(8))) // "state/crow/x/…": another project
	put("crowd", 1, anchor.HashHex(hash(9)))
	put("old", 1, "")
	put("b", 1, anchor.HashHex(hash(10)))
	for project, want := range map[string][32]byte{"crow": hash(7), "crow/x": hash(8), "crowd": hash(9), "b": hash(10)} {
		if id, ok, err := anchor.RecordedProjectID(env.DB, project); err != nil || !ok || id != want {
			t.Errorf("%s: %x %v %v, want %x", project, id, ok, err, want)
		}
		if id, ok := anchor.RecordsProjectID(env.DB)(project); !ok || id != want {
			t.Errorf("RecordsProjectID(%s) = %x %v", project, id, ok)
		}
	}
	for _, project := range []string{"old", "cro", "a", "zzz", "crow/"} {
		if id, ok, err := anchor.RecordedProjectID(env.DB, project); err != nil || ok {
			t.Errorf("%s: %x %v %v, want none", project, id, ok, err)
		}
	}
	// A memory record is not a state record.
	data, _ := json.Marshal(anchor.Record{Kind: anchor.RecordMemory, Status: anchor.StatusAnchored, MemoryID: "m"})
	if _, err := env.Writer.Write(ctx, store.Mutation{Table: store.TableAnchors, RowID: anchor.MemoryRecordID("m"),
		Op: store.OpPut, Data: data}); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := anchor.RecordedProjectID(env.DB, "zzz"); err != nil || ok {
		t.Fatalf("after a memory record: %v %v", ok, err)
	}
}
