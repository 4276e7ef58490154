package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"
)

// versionOf makes a verifying version 1 of s, for tests that need a state Apply cannot build
// quickly (full lists, missing evidence).
func versionOf(t testing.TB, s State) *Version {
	t.Helper()
	s.Meta = Meta{Version: 1}
	h, err := Hash(s)
	if err != nil {
		t.Fatal(err)
	}
	return &Version{Project: testProject, SchemaVersion: SchemaVersion, Version: 1, StateHash: h, GeneratedAt: testTime, State: s}
}

func TestApplyRequestErrors(t *testing.T) {
	base := build(t, nil, baseOps...) // consolidated_until_event 0
	ahead, err := Apply(base, testProject, Request{Ops: raws(`{"op":"set_phase","phase":"ga"}`), ConsolidatedUntilEvent: 50, GeneratedAt: testTime}, newTestEvidence(), 100)
	if err != nil || ahead.Version == nil {
		t.Fatal(ahead, err)
	}
	marked := ahead.Version // consolidated_until_event 50
	tampered := *marked
	tampered.State.Phase = "alpha"
	phase := raws(`{"op":"set_phase","phase":"rc"}`)
	hundred := make([]json.RawMessage, 100)
	for i := range hundred {
		hundred[i] = json.RawMessage(fmt.Sprintf(`{"op":"set_phase","phase":"p%d"}`, i))
	}
	cases := []struct {
		name    string
		prev    *Version
		project string
		req     Request
		highest uint64
		want    error // nil: accepted
	}{
		{"101 ops", base, testProject, Request{Ops: append(slices.Clone(hundred), phase...), GeneratedAt: testTime}, 100, ErrTooManyOps},
		{"100 ops", base, testProject, Request{Ops: hundred, GeneratedAt: testTime}, 100, nil},
		{"no project", nil, "", Request{Ops: phase, GeneratedAt: testTime}, 100, ErrInvalidRequest},
		{"no generated_at", nil, testProject, Request{Ops: phase}, 100, ErrInvalidRequest},
		{"prev of another project", base, "otro", Request{Ops: phase, GeneratedAt: testTime}, 100, ErrInvalidRequest},
		{"mark goes back", marked, testProject, Request{Ops: phase, ConsolidatedUntilEvent: 49, GeneratedAt: testTime}, 100, ErrUntilBackwards},
		{"mark goes back, no ops", marked, testProject, Request{ConsolidatedUntilEvent: 0, GeneratedAt: testTime}, 100, ErrUntilBackwards},
		{"mark stays", marked, testProject, Request{Ops: phase, ConsolidatedUntilEvent: 50, GeneratedAt: testTime}, 100, nil},
		{"mark passes the highest number", marked, testProject, Request{Ops: phase, ConsolidatedUntilEvent: 101, GeneratedAt: testTime}, 100, ErrUntilAhead},
		{"mark at the highest number", marked, testProject, Request{Ops: phase, ConsolidatedUntilEvent: 100, GeneratedAt: testTime}, 100, nil},
		{"mark beyond 2^53-1", nil, testProject, Request{Ops: phase, ConsolidatedUntilEvent: 1 << 53, GeneratedAt: testTime}, 1 << 60, ErrUntilAhead},
		{"first version, no memories", nil, testProject, Request{Ops: phase, GeneratedAt: testTime}, 0, nil},
		{"prev does not verify", &tampered, testProject, Request{Ops: phase, ConsolidatedUntilEvent: 50, GeneratedAt: testTime}, 100, ErrCorruptVersion},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := Apply(c.prev, c.project, c.req, newTestEvidence(), c.highest)
			if c.want == nil {
				if err != nil || res.Version == nil {
					t.Fatalf("got %+v, %v", res, err)
				}
				return
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
			if res.Version != nil || res.Applied != nil || res.Rejected != nil {
				t.Fatalf("refused request but result %+v", res)
			}
		})
	}
}

// TestApplyUnchanged: no valid op → no new version, even when the mark moves.
func TestApplyUnchanged(t *testing.T) {
	base := baseVersion(t)
	for _, ops := range [][]string{nil, {`{"op":"set_phase","phase":"beta"}`, `{"op":"nope"}`}} {
		res, err := Apply(base, testProject, Request{Ops: raws(ops...), ConsolidatedUntilEvent: 200, GeneratedAt: testTime}, newTestEvidence(), highestTestMem)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Unchanged || res.Version != nil || res.AppliedCount != 0 || len(res.Rejected) != len(ops) {
			t.Fatalf("%d ops: %+v", len(ops), res)
		}
		if got := mustJSON(t, res); !contains(got, `"version":null,"applied":[],`) || !contains(got, `"unchanged":true,"applied_count":0`) {
			t.Fatalf("result JSON %s", got)
		}
	}
}

// TestApplyChain builds three versions and checks the links, then breaks them.
func TestApplyChain(t *testing.T) {
	v1 := build(t, nil, baseOps...)
	v2 := build(t, v1, `{"op":"set_phase","phase":"ga"}`)
	v3 := build(t, v2, `{"op":"add_risk","title":"Fraude","severity":"high","evidence_memory_ids":[40]}`)
	if v1.Version != 1 || v1.State.Meta.PreviousStateHash != "" || !contains(mustJSON(t, v1), `"previous_state_hash":null`) {
		t.Fatalf("v1 meta %+v", v1.State.Meta)
	}
	for _, l := range [][2]*Version{{v1, v2}, {v2, v3}} {
		prev, next := l[0], l[1]
		if next.Version != prev.Version+1 || next.State.Meta.Version != next.Version || string(next.State.Meta.PreviousStateHash) != prev.StateHash {
			t.Fatalf("v%d → v%d: meta %+v", prev.Version, next.Version, next.State.Meta)
		}
		if err := VerifyLink(*prev, *next); err != nil {
			t.Fatal(err)
		}
	}
	if v3.State.Risks[1].CreatedVersion != 3 || v3.State.Risks[0].CreatedVersion != 1 || v3.State.Risks[0].UpdatedVersion != 1 {
		t.Fatalf("risks %+v", v3.State.Risks)
	}

	otherProject := *v2
	otherProject.Project = "otro"
	badLink := *v3
	badLink.State.Meta.PreviousStateHash = NullString(v1.StateHash)
	badLink.StateHash, _ = Hash(badLink.State)
	backwards := *v3
	backwards.State.Meta.ConsolidatedUntilEvent = 0
	v2marked := *v2
	v2marked.State.Meta.ConsolidatedUntilEvent = 7
	v2marked.StateHash, _ = Hash(v2marked.State)
	backwards.State.Meta.PreviousStateHash = NullString(v2marked.StateHash)
	backwards.StateHash, _ = Hash(backwards.State)
	for name, l := range map[string][2]Version{
		"skips a version":   {*v1, *v3},
		"reversed":          {*v2, *v1},
		"other project":     {otherProject, *v3},
		"links elsewhere":   {*v2, badLink},
		"mark goes back":    {v2marked, backwards},
		"prev is corrupt":   {func() Version { v := *v1; v.StateHash = v2.StateHash; return v }(), *v2},
		"next is corrupt":   {*v1, func() Version { v := *v2; v.State.Phase = "x"; return v }()},
		"same version":      {*v2, *v2},
		"first has no link": {*v1, *v1},
	} {
		if err := VerifyLink(l[0], l[1]); !errors.Is(err, ErrCorruptVersion) {
			t.Errorf("%s: VerifyLink = %v", name, err)
		}
	}
}

func TestVerify(t *testing.T) {
	v2 := build(t, baseVersion(t), `{"op":"set_phase","phase":"ga"}`)
	if err := Verify(*v2); err != nil {
		t.Fatal(err)
	}
	rehash := func(v Version) Version { v.StateHash, _ = Hash(v.State); return v }
	bad := map[string]Version{
		"schema 1":        func() Version { v := *v2; v.SchemaVersion = 1; return v }(),
		"version 0":       func() Version { v := *v2; v.Version, v.State.Meta.Version = 0, 0; return rehash(v) }(),
		"version ≠ meta":  func() Version { v := *v2; v.Version = 3; return v }(),
		"v1 with link":    func() Version { v := *v2; v.Version, v.State.Meta.Version = 1, 1; return rehash(v) }(),
		"v2 without link": func() Version { v := *v2; v.State.Meta.PreviousStateHash = ""; return rehash(v) }(),
		"state edited":    func() Version { v := *v2; v.State.CurrentFocus += "!"; return v }(),
		"hash edited":     func() Version { v := *v2; v.StateHash = "0x00"; return v }(),
		"no canonical form": func() Version {
			v := *v2
			v.State.Decisions = append(slices.Clone(v.State.Decisions), Decision{Provenance: Provenance{EvidenceMemoryIDs: MemoryIDs{1 << 62}}})
			return v
		}(),
	}
	for name, v := range bad {
		if err := Verify(v); !errors.Is(err, ErrCorruptVersion) {
			t.Errorf("%s: Verify = %v", name, err)
		}
	}
}

// TestApplyDeterministic runs one request with every kind of op and rejection 100 times: the
// result, version and canonical state must be byte-identical each time.
func TestApplyDeterministic(t *testing.T) {
	base := baseVersion(t)
	var ops []json.RawMessage
	for _, c := range opCases() {
		if len(ops) == MaxOpsPerRequest {
			break
		}
		ops = append(ops, json.RawMessage(c.op))
	}
	ops[len(ops)-1] = json.RawMessage(`{"op":"add_decision","zeta":1,"alpha":2,"mid":3,"title":"t"}`) // several unknown fields
	req := Request{Ops: ops, ConsolidatedUntilEvent: 77, GeneratedAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 3600))}
	var first, firstCanon string
	for i := range 100 {
		res, err := Apply(base, testProject, req, newTestEvidence(), highestTestMem)
		if err != nil {
			t.Fatal(err)
		}
		got, canon := mustJSON(t, res), canonical(t, res.Version.State)
		if i == 0 {
			first, firstCanon = got, canon
			if res.AppliedCount == 0 || len(res.Rejected) == 0 {
				t.Fatalf("want both applied and rejected ops: %+v", res)
			}
			if !contains(got, `unknown field \"alpha\" for add_decision (its fields: title, statement, evidence_memory_ids); unknown field \"mid\"`) {
				t.Fatalf("unknown fields not reported in order: %s", got)
			}
			if res.Version.GeneratedAt.Location() != time.UTC || !res.Version.GeneratedAt.Equal(req.GeneratedAt) {
				t.Fatalf("generated_at %v", res.Version.GeneratedAt)
			}
			continue
		}
		if got != first || canon != firstCanon {
			t.Fatalf("run %d differs from run 0", i)
		}
	}
}

// TestApplyDoesNotModifyPrev applies ops touching every list and checks prev deeply.
func TestApplyDoesNotModifyPrev(t *testing.T) {
	base := baseVersion(t)
	before := mustJSON(t, base)
	var ops []string
	for _, c := range opCases() {
		if c.err == "" && len(ops) < MaxOpsPerRequest {
			ops = append(ops, c.op)
		}
	}
	snapshot := *base
	snapshot.State = cloneState(base.State)
	res, err := Apply(base, testProject, Request{Ops: raws(ops...), GeneratedAt: testTime}, newTestEvidence(), highestTestMem)
	if err != nil || res.Version == nil {
		t.Fatal(res, err)
	}
	if mustJSON(t, base) != before || !reflect.DeepEqual(snapshot.State, base.State) {
		t.Fatal("Apply modified the previous version")
	}
}

// TestApplyAppliedOps checks the report of applied ops: item ids, the op's own citations
// ascending and de-duplicated, and their event hashes; and that ops see the effect of the
// ops before them in the same request.
func TestApplyAppliedOps(t *testing.T) {
	ev := newTestEvidence()
	res, err := Apply(nil, testProject, Request{Ops: raws(
		`{"op":"add_decision","title":"A","statement":"a","evidence_memory_ids":[45,12,67,12]}`,
		`{"op":"add_decision","title":"B","statement":"b","evidence_memory_ids":[12]}`,
		`{"op":"supersede_decision","id":"dec_0001","by_id":"dec_0002","evidence_memory_ids":[70]}`,
		`{"op":"set_focus","focus":"f"}`,
		`{"op":"set_decision_status","id":"dec_0002","status":"confirmed","evidence_memory_ids":[12]}`,
	), ConsolidatedUntilEvent: 70, GeneratedAt: testTime}, ev, highestTestMem)
	if err != nil || len(res.Rejected) > 0 {
		t.Fatal(res.Rejected, err)
	}
	x := func(ns ...uint64) []string {
		out := []string{}
		for _, n := range ns {
			h := eventHash(n)
			out = append(out, hex0x(h[:]))
		}
		return out
	}
	want := []AppliedOp{
		{0, "add_decision", "dec_0001", MemoryIDs{12, 45, 67}, x(12, 45, 67)},
		{1, "add_decision", "dec_0002", MemoryIDs{12}, x(12)},
		{2, "supersede_decision", "dec_0001", MemoryIDs{70}, x(70)},
		{3, "set_focus", "", MemoryIDs{}, x()},
		{4, "set_decision_status", "dec_0002", MemoryIDs{12}, x(12)},
	}
	if !reflect.DeepEqual(res.Applied, want) {
		t.Fatalf("applied\n%+v\nwant\n%+v", res.Applied, want)
	}
	d := res.Version.State.Decisions
	if d[0].Status != "superseded" || !slices.Equal(d[0].EvidenceMemoryIDs, MemoryIDs{12, 45, 67, 70}) || d[0].EvidenceRoot != rootOf(12, 45, 67, 70) ||
		d[0].CreatedVersion != 1 || d[0].UpdatedVersion != 1 {
		t.Fatalf("dec_0001 %+v", d[0])
	}
	for n, calls := range ev.calls {
		if calls != 1 {
			t.Errorf("memory #%d looked up %d times", n, calls)
		}
	}
	if !contains(mustJSON(t, res.Applied[3]), `{"index":3,"op":"set_focus","evidence_memory_ids":[],"event_hashes":[]}`) {
		t.Fatalf("set_focus report %s", mustJSON(t, res.Applied[3]))
	}
}

func TestApplyRejectionEcho(t *testing.T) {
	res, err := Apply(nil, testProject, Request{Ops: raws(`{"op":"x", "a": [1, 2]}`, `{"op":`, "\xff"), GeneratedAt: testTime}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := mustJSON(t, res.Rejected)
	for _, want := range []string{`"op":{"op":"x","a":[1,2]}`, `"op":"{\"op\":"`, `"op":"\ufffd"`} {
		if !contains(got, want) {
			t.Errorf("rejections %s lack %s", got, want)
		}
	}
}

// TestApplyLimits covers the limits that need a large state: a full list and an item with
// the most evidence it can hold.
func TestApplyLimits(t *testing.T) {
	var s State
	for i := range MaxItemsPerList {
		s.Decisions = append(s.Decisions, Decision{ID: fmt.Sprintf("dec_%04d", i+1), Title: "t", Statement: "s", Status: DecisionProposed,
			Provenance: Provenance{EvidenceMemoryIDs: MemoryIDs{1}, EvidenceRoot: rootOf(1), CreatedVersion: 1, UpdatedVersion: 1}})
	}
	var many MemoryIDs
	for n := range uint64(MaxEvidencePerItem) {
		many = append(many, 2000+n)
	}
	s.Risks = []Risk{{ID: "risk_0001", Title: "t", Severity: "low", Status: "open", Provenance: Provenance{EvidenceMemoryIDs: many, EvidenceRoot: "0x00", CreatedVersion: 1, UpdatedVersion: 1}}}
	prev := versionOf(t, s)
	if _, err := applyOne(t, prev, `{"op":"add_decision","title":"t","statement":"s","evidence_memory_ids":[1]}`); !contains(err, "decisions already holds 10000 items, the most a state can hold") {
		t.Errorf("full list: %q", err)
	}
	if v, err := applyOne(t, prev, `{"op":"add_milestone","title":"t","evidence_memory_ids":[1]}`); err != "" || v.State.Milestones[0].ID != "mil_0001" {
		t.Errorf("other list: %q", err)
	}
	if _, err := applyOne(t, prev, `{"op":"set_risk_status","id":"risk_0001","status":"closed"}`); err != "" {
		t.Errorf("status only: %q", err)
	}
	// risk_0001 cites 1000 memories; set_risk_status takes no evidence, so use a decision.
	s.Decisions[0].EvidenceMemoryIDs = many
	prev = versionOf(t, s)
	if _, err := applyOne(t, prev, `{"op":"set_decision_status","id":"dec_0001","status":"confirmed","evidence_memory_ids":[5]}`); !contains(err, "dec_0001 would cite 1001 memories; an item cites at most 1000") {
		t.Errorf("full evidence: %q", err)
	}
}

// TestApplyEarlierEvidenceGone: an item whose earlier evidence can no longer be resolved
// still changes status, but cannot take new evidence (its root could not be recomputed).
func TestApplyEarlierEvidenceGone(t *testing.T) {
	s := State{Decisions: []Decision{{ID: "dec_0001", Title: "t", Statement: "s", Status: DecisionProposed,
		Provenance: Provenance{EvidenceMemoryIDs: MemoryIDs{1, 999}, EvidenceRoot: "0xabc", CreatedVersion: 1, UpdatedVersion: 1}}}}
	prev := versionOf(t, s)
	_, err := applyOne(t, prev, `{"op":"set_decision_status","id":"dec_0001","status":"confirmed","evidence_memory_ids":[5]}`)
	if !contains(err, "memory #999 does not exist (it is evidence of dec_0001)") {
		t.Fatalf("got %q", err)
	}
	v, err := applyOne(t, prev, `{"op":"set_decision_status","id":"dec_0001","status":"confirmed","evidence_memory_ids":[1]}`)
	if err != "" || v.State.Decisions[0].EvidenceRoot != "0xabc" || v.State.Decisions[0].Status != "confirmed" {
		t.Fatalf("citing known evidence again: %q %+v", err, v)
	}
}

func TestApplyNilEvidence(t *testing.T) {
	res, err := Apply(nil, testProject, Request{Ops: raws(
		`{"op":"add_decision","title":"t","statement":"s","evidence_memory_ids":[1]}`,
		`{"op":"set_phase","phase":"alpha"}`,
	), GeneratedAt: testTime}, nil, 0)
	if err != nil || res.AppliedCount != 1 || len(res.Rejected) != 1 || res.Rejected[0].Error != "memory #1 does not exist" {
		t.Fatalf("%+v, %v", res, err)
	}
}
