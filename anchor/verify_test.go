package anchor_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/crow-sync/crow/anchor"
	"github.com/crow-sync/crow/anchor/merkle"
	"github.com/crow-sync/crow/identity"
	"github.com/crow-sync/crow/projects"
	"github.com/crow-sync/crow/state"
	"github.com/crow-sync/crow/store"
	"github.com/crow-sync/crow/store/storetest"
)

// fakeChain is an anchor.ChainReader over a map of anchored roots.
type fakeChain struct {
	roots map[[32]byte]anchor.RootInfo
	err   error
}

func (c fakeChain) GetRoot(_ context.Context, root [32]byte) (anchor.RootInfo, bool, error) {
	if c.err != nil {
		return anchor.RootInfo{}, false, c.err
	}
	ri, ok := c.roots[root]
	return ri, ok, nil
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

func h(b byte) string { return anchor.HashHex(hash(b)) }

// home writes anchors records as home's worker does.
type home struct {
	t    *testing.T
	env  *storetest.Env
	seed identity.Seed
}

func newHome(t *testing.T) home {
	var seed identity.Seed
	seed[0] = 7
	hm := home{t: t, env: storetest.Start(t, t.TempDir()), seed: seed}
	crow, pub, sig := anchor.SignBinding(seed, "0x00000000000000000000000000000000000000Aa")
	hm.put(anchor.ChainRecordID(1337, "0xContract"), anchor.ChainRecord{Kind: anchor.RecordChain, ChainKind: "embedded", ChainID: 1337,
		Contract: "0xContract", AnchoringAddress: "0x00000000000000000000000000000000000000Aa", CrowID: crow, RootPublicKey: pub, AddressSignature: sig})
	return hm
}

func (hm home) put(id string, v any) {
	hm.t.Helper()
	data, _ := json.Marshal(v)
	if _, err := hm.env.Writer.Write(context.Background(), store.Mutation{Table: store.TableAnchors, RowID: id, Op: store.OpPut, Data: data}); err != nil {
		hm.t.Fatal(err)
	}
}

// batch records versions (version → state hash) of project "crow", under
// project id pid, as committed by one root, on chain chainID; the root's
// record gets rootStatus ("": no root record, as after a reorg dropped
// it). It returns the root.
func (hm home) batch(pid [32]byte, versions map[uint64]string, rootStatus string, chainID uint64) [32]byte {
	hm.t.Helper()
	var vs []uint64
	var leaves []merkle.Hash
	for v, sh := range versions {
		hs, _ := state.ParseHash(sh)
		vs = append(vs, v)
		leaves = append(leaves, merkle.StateLeaf(pid, v, hs))
	}
	tree, err := merkle.New(leaves)
	if err != nil {
		hm.t.Fatal(err)
	}
	root := anchor.HashHex(tree.Root())
	first := slices.Min(vs) // names the root's transaction
	var items []string
	for i, v := range vs {
		proof, _ := tree.Proof(leaves[i])
		ps := []string{}
		for _, p := range proof {
			ps = append(ps, anchor.HashHex(p))
		}
		hm.put(anchor.StateRecordID("crow", v), anchor.Record{Kind: anchor.RecordState, Status: anchor.StatusIncluded, Project: "crow",
			ProjectID: anchor.HashHex(pid), Version: v, StateHash: versions[v], Root: root, Proof: ps, RootID: 40, TxHash: "0xrecord",
			Block: 4, ChainID: chainID, Contract: "0xContract"})
		items = append(items, anchor.StateRecordID("crow", v))
	}
	if rootStatus != "" {
		hm.put(anchor.RootRecordID(tree.Root()), anchor.RootRecord{Kind: anchor.RecordRoot, Leaves: anchor.RecordState, Status: rootStatus,
			Root: root, Count: len(vs), RootID: 41, TxHash: fmt.Sprintf("0xtx%d", first), Block: 5, ChainID: chainID, Contract: "0xContract", Items: items})
	}
	return tree.Root()
}

// Every verdict of a version against home's records and a chain: final,
// pending (no record; a root dropped by a reorg), mismatch (the record
// commits another hash; a proof that does not lead to the root), missing
// (the chain lacks the root), unverified (anchored on another chain); and
// without a chain, unverified for what home's records say is anchored.
func TestVerifierVerdicts(t *testing.T) {
	hm := newHome(t)
	ctx := context.Background()
	pid := hash(0xAA)
	r1 := hm.batch(pid, map[uint64]string{1: h(1), 3: h(33), 6: h(6)}, anchor.StatusFinal, 1337) // 3: home anchored another hash
	r4 := hm.batch(pid, map[uint64]string{4: h(4)}, anchor.StatusIncluded, 1337)                 // the chain lacks it
	hm.batch(pid, map[uint64]string{7: h(7)}, "", 1337)                                          // dropped by a reorg
	hm.batch(pid, map[uint64]string{9: h(9)}, anchor.StatusFinal, 5)                             // another chain
	// 8: a record whose proof does not lead to its root.
	hm.batch(pid, map[uint64]string{8: h(8)}, anchor.StatusFinal, 1337)
	rec8, _, _ := anchor.ReadRecord(hm.env.DB, anchor.StateRecordID("crow", 8))
	rec8.Proof = []string{h(0x88)}
	hm.put(anchor.StateRecordID("crow", 8), rec8)

	// 2: no record; 5: not replicated here.
	versions := fakeVersions{1: h(1), 2: h(2), 3: h(3), 4: h(4), 6: h(6), 7: h(7), 8: h(8), 9: h(9)}
	at := time.Unix(1700000000, 0)
	chain := fakeChain{roots: map[[32]byte]anchor.RootInfo{r1: {ID: 41, AnchoredAt: at, Count: 3}}}
	if _, ok := chain.roots[r4]; ok {
		t.Fatal("r4 on the fake chain")
	}
	pidOf := func(string) ([32]byte, bool) { return pid, true }

	type verdict struct {
		status string
		match  bool
	}
	check := func(name string, rep anchor.Report, want map[uint64]verdict) {
		t.Helper()
		if len(rep.Versions) != len(want) || rep.Verified {
			t.Fatalf("%s: report %+v", name, rep)
		}
		for _, c := range rep.Versions {
			if w := want[c.Version]; c.Status != w.status || c.Match != w.match {
				t.Errorf("%s, version %d: %s match=%v, want %s match=%v", name, c.Version, c.Status, c.Match, w.status, w.match)
			}
		}
	}
	v := anchor.Verifier{DB: hm.env.DB, Chain: chain, ProjectID: pidOf, Versions: versions}
	rep, err := v.VerifyProject(ctx, "crow")
	if err != nil {
		t.Fatal(err)
	}
	check("chain", rep, map[uint64]verdict{1: {anchor.StatusFinal, true}, 2: {anchor.StatusPending, false}, 3: {anchor.StatusMismatch, false},
		4: {anchor.StatusMissing, true}, 6: {anchor.StatusFinal, true}, 7: {anchor.StatusPending, true}, 8: {anchor.StatusMismatch, false},
		9: {anchor.StatusUnverified, true}})
	if c := rep.Versions[0]; c.RootID != 41 || c.Root != anchor.HashHex(r1) || c.TxHash != "0xtx1" || c.AnchoredAt != "2023-11-14T22:13:20Z" ||
		c.AnchoredBy != "0x00000000000000000000000000000000000000Aa" || c.BlockNumber != 5 || c.Packet == nil || c.Packet.TxHash != "0xtx1" {
		t.Errorf("final version's chain fields: %+v", c)
	}
	if rep.Project != "crow" || rep.ProjectID != anchor.HashHex(pid) || rep.HowTo != anchor.HowToVerify ||
		rep.Chain == nil || *rep.Chain != (anchor.ChainDoc{Kind: "embedded", ChainID: 1337, Contract: "0xContract"}) {
		t.Errorf("report header: %+v", rep)
	}
	for _, c := range rep.Versions {
		if c.Contradicted() != (c.Status == anchor.StatusMismatch || c.Status == anchor.StatusMissing) {
			t.Errorf("version %d (%s): Contradicted() = %v", c.Version, c.Status, c.Contradicted())
		}
	}

	// One version: the newest by default, or the one asked for.
	one, err := v.VerifyVersion(ctx, "crow", 0)
	if err != nil || len(one.Versions) != 1 || one.Versions[0].Version != 9 || one.Verified {
		t.Fatalf("newest: %+v %v", one, err)
	}
	one, err = v.VerifyVersion(ctx, "crow", 6)
	if err != nil || len(one.Versions) != 1 || !one.Verified || one.Packet == nil || one.Packet.Version != 6 || anchor.CheckPacket(*one.Packet) != nil {
		t.Fatalf("version 6: %+v %v", one, err)
	}
	one, err = v.VerifyVersion(ctx, "crow", 3)
	if err != nil || len(one.Versions) != 1 || one.Versions[0].Status != anchor.StatusMismatch || one.Verified {
		t.Fatalf("version 3: %+v %v", one, err)
	}
	if _, err := v.VerifyVersion(ctx, "crow", 5); !errors.Is(err, projects.ErrNoState) {
		t.Fatalf("version not held here: %v", err)
	}

	// All on chain: verified.
	all := anchor.Verifier{DB: hm.env.DB, Chain: chain, ProjectID: pidOf, Versions: fakeVersions{1: h(1), 6: h(6)}}
	if rep, err := all.VerifyProject(ctx, "crow"); err != nil || !rep.Verified {
		t.Fatalf("all anchored: %+v %v", rep, err)
	}

	// No chain: what home's records say is anchored (with a proof that
	// checks out) is unverified, never verified; mismatches stay.
	off := anchor.Verifier{DB: hm.env.DB, ProjectID: pidOf, Versions: versions}
	rep, err = off.VerifyProject(ctx, "crow")
	if err != nil || rep.Chain != nil {
		t.Fatalf("no chain: %+v %v", rep, err)
	}
	check("no chain", rep, map[uint64]verdict{1: {anchor.StatusUnverified, true}, 2: {anchor.StatusPending, false}, 3: {anchor.StatusMismatch, false},
		4: {anchor.StatusUnverified, true}, 6: {anchor.StatusUnverified, true}, 7: {anchor.StatusPending, true}, 8: {anchor.StatusMismatch, false},
		9: {anchor.StatusUnverified, true}})
	if c := rep.Versions[0]; c.TxHash != "0xtx1" || c.RootID != 41 || c.BlockNumber != 5 || c.AnchoredAt != "" {
		t.Errorf("no chain: the records' fields: %+v", c)
	}
	if rep, err := (anchor.Verifier{DB: hm.env.DB, ProjectID: pidOf, Versions: fakeVersions{1: h(1)}}).VerifyProject(ctx, "crow"); err != nil || rep.Verified {
		t.Fatalf("no chain is never verified: %+v %v", rep, err)
	}

	// Errors: no state at all; a chain that cannot be read.
	if _, err := (anchor.Verifier{DB: hm.env.DB, ProjectID: pidOf, Versions: fakeVersions{}}).VerifyProject(ctx, "x"); !errors.Is(err, projects.ErrNoState) {
		t.Fatalf("no versions: %v", err)
	}
	broken := anchor.Verifier{DB: hm.env.DB, Chain: fakeChain{err: errors.New("connection refused")}, ProjectID: pidOf, Versions: versions}
	if _, err := broken.VerifyProject(ctx, "crow"); !errors.Is(err, anchor.ErrChainUnreadable) {
		t.Fatalf("unreadable chain: %v", err)
	}
}

// Records gives home's anchoring of a version: its root's status and
// transaction; pending without a record, without a root record, or for a
// record from before roots (anchored again).
func TestRecordsStateAnchor(t *testing.T) {
	hm := newHome(t)
	pid := hash(0xAA)
	hm.batch(pid, map[uint64]string{1: h(1)}, anchor.StatusIncluded, 1337)
	hm.batch(pid, map[uint64]string{2: h(2)}, "", 1337)
	hm.put(anchor.StateRecordID("crow", 3), anchor.Record{Kind: anchor.RecordState, Status: anchor.StatusAnchored, Project: "crow", Version: 3,
		AnchorID: 9, TxHash: "0xt", Block: 3})
	r := anchor.Records{DB: hm.env.DB}
	if a, err := r.StateAnchor("crow", 1); err != nil ||
		a != (projects.StateAnchor{Status: anchor.StatusIncluded, OnchainAnchorID: 41, TxHash: "0xtx1", BlockNumber: 5}) {
		t.Fatalf("recorded: %+v %v", a, err)
	}
	for _, v := range []uint64{2, 3, 4} {
		if a, err := r.StateAnchor("crow", v); err != nil || a.Status != anchor.StatusPending {
			t.Fatalf("version %d: %+v %v, want pending", v, a, err)
		}
	}
	if a, err := (anchor.Records{}).StateAnchor("crow", 1); err != nil || a.Status != anchor.StatusPending {
		t.Fatalf("no DB: %+v %v", a, err)
	}
}

func TestVersionCheckContradicted(t *testing.T) {
	for status, want := range map[string]bool{
		anchor.StatusIncluded: false, anchor.StatusFinal: false, anchor.StatusAnchored: false, anchor.StatusPending: false,
		anchor.StatusUnverified: false, anchor.StatusMismatch: true, anchor.StatusMissing: true, anchor.StatusConflict: true,
	} {
		if got := (anchor.VersionCheck{Status: status}).Contradicted(); got != want {
			t.Errorf("%s: Contradicted() = %v, want %v", status, got, want)
		}
	}
}

// zeroGuard is a ChainReader that fails the test when asked for the zero
// root, and counts the reads.
type zeroGuard struct {
	fakeChain
	t     *testing.T
	reads *int
}

func (g zeroGuard) GetRoot(ctx context.Context, root [32]byte) (anchor.RootInfo, bool, error) {
	*g.reads++
	if root == ([32]byte{}) {
		g.t.Error("the chain was read with a zero root")
	}
	return g.fakeChain.GetRoot(ctx, root)
}

// An instance that cannot name the project on chain (a satellite before
// home recorded a project id) reports project_id "", and still verifies
// each version by its root (the chain is read by root, the packet's
// project id is the record's); a record from before roots is pending and
// no chain read is made for it.
func TestVerifierWithoutProjectID(t *testing.T) {
	hm := newHome(t)
	ctx := context.Background()
	// An old record (no root, no project_id) says version 1 is anchored.
	hm.put(anchor.StateRecordID("crow", 1), anchor.Record{Kind: anchor.RecordState, Status: anchor.StatusAnchored, Project: "crow", Version: 1,
		StateHash: h(1), AnchorID: 1, TxHash: "0xold", Block: 2})
	r2 := hm.batch(hash(0xAA), map[uint64]string{2: h(2)}, anchor.StatusFinal, 1337)
	reads := 0
	chain := zeroGuard{fakeChain{roots: map[[32]byte]anchor.RootInfo{r2: {ID: 41, AnchoredAt: time.Unix(1700000000, 0), Count: 1}}}, t, &reads}
	pids := []func(string) ([32]byte, bool){
		func(string) ([32]byte, bool) { return [32]byte{}, false },
		func(string) ([32]byte, bool) { return [32]byte{}, true }, // a zero id is never used
		nil,
	}
	for _, pid := range pids {
		v := anchor.Verifier{DB: hm.env.DB, Chain: chain, ProjectID: pid, Versions: fakeVersions{1: h(1), 2: h(2)}}
		rep, err := v.VerifyProject(ctx, "crow")
		if err != nil || rep.ProjectID != "" || rep.Verified || len(rep.Versions) != 2 {
			t.Fatalf("report: %+v %v", rep, err)
		}
		if c := rep.Versions[0]; c.Status != anchor.StatusPending || c.Packet != nil {
			t.Errorf("version 1 (a record from before roots): %+v", c)
		}
		if c := rep.Versions[1]; c.Status != anchor.StatusFinal || !c.Match || c.Packet.ProjectID != anchor.HashHex(hash(0xAA)) {
			t.Errorf("version 2 (in a root): %+v", c)
		}
		one, err := v.VerifyVersion(ctx, "crow", 2)
		if err != nil || one.ProjectID != "" || !one.Verified {
			t.Fatalf("one version: %+v %v", one, err)
		}
		b, _ := json.Marshal(rep)
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil || doc["project_id"] != "" {
			t.Fatalf("JSON project_id: %s", b)
		}
	}
	if reads != 2*len(pids) {
		t.Fatalf("the chain was read %d times, want %d (version 2's root, twice per verifier)", reads, 2*len(pids))
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
