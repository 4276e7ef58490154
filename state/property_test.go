package state

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

// randomOp returns a random op: mostly well formed, often invalid against the state (ids
// that do not exist yet, statuses already set, uncitable memories), sometimes malformed.
func randomOp(r *rand.Rand) json.RawMessage {
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	id := func(prefix string) string {
		if r.IntN(20) == 0 {
			prefix = pick("dec", "mil", "risk", "asm", "oq", "pri", "con")
		}
		return fmt.Sprintf("%s_%04d", prefix, 1+r.IntN(5))
	}
	evidence := func() []uint64 {
		var ids []uint64
		for range r.IntN(4) {
			ids = append(ids, uint64(1+r.IntN(25)))
		}
		if r.IntN(15) == 0 {
			ids = append(ids, []uint64{memOther, memUnnumbered, 999}[r.IntN(3)])
		}
		return ids
	}
	text := func() string { return pick("A", "B", "C", "") }
	m := map[string]any{}
	name := opNames[r.IntN(len(opNames))]
	m["op"] = name
	switch name {
	case "add_decision":
		m["title"], m["statement"], m["evidence_memory_ids"] = text(), text(), evidence()
	case "set_decision_status":
		m["id"], m["status"] = id("dec"), pick("confirmed", "rejected", "proposed")
		if r.IntN(2) == 0 {
			m["evidence_memory_ids"] = evidence()
		}
	case "supersede_decision":
		m["id"], m["by_id"] = id("dec"), id("dec")
	case "add_milestone":
		m["title"], m["evidence_memory_ids"] = text(), evidence()
		if r.IntN(2) == 0 {
			m["status"] = pick("planned", "in_progress", "done", "x")
		}
	case "set_milestone_status":
		m["id"], m["status"] = id("mil"), pick("planned", "in_progress", "done")
	case "add_risk":
		m["title"], m["severity"], m["evidence_memory_ids"] = text(), pick("low", "med", "high", "medium"), evidence()
	case "set_risk_status":
		m["id"], m["status"] = id("risk"), pick("open", "mitigated", "closed", "accepted")
	case "set_focus":
		m["focus"] = text()
	case "set_phase":
		m["phase"] = text()
	case "add_assumption", "add_constraint":
		m["title"], m["evidence_memory_ids"] = text(), evidence()
		if r.IntN(2) == 0 {
			m["statement"] = text()
		}
	case "invalidate_assumption":
		m["id"] = id("asm")
	case "remove_constraint":
		m["id"] = id("con")
	case "add_open_question":
		m["title"], m["evidence_memory_ids"] = text(), evidence()
	case "answer_open_question":
		m["id"], m["answer"], m["evidence_memory_ids"] = id("oq"), text(), evidence()
	case "add_priority":
		m["title"], m["rank"], m["evidence_memory_ids"] = text(), r.IntN(4), evidence()
	case "set_priority_status":
		m["id"], m["status"] = id("pri"), pick("active", "done", "dropped")
	case "set_vision":
		m["statement"], m["evidence_memory_ids"] = text(), evidence()
	case "add_vocabulary":
		m["term"], m["definition"], m["evidence_memory_ids"] = pick("RLS", "rls", "Tenant"), text(), evidence()
	case "set_metric":
		m["name"], m["value"], m["evidence_memory_ids"] = pick("latency", "Latency", "tenants"), text(), evidence()
		if r.IntN(2) == 0 {
			m["unit"] = pick("ms", "")
		}
	}
	switch r.IntN(40) {
	case 0:
		m["extra"] = 1
	case 1:
		m["op"] = "drop_everything"
	}
	b, _ := json.Marshal(m) // map keys are sorted: the op is the same for a seed
	return b
}

func randomOps(r *rand.Rand, n int) []json.RawMessage {
	ops := make([]json.RawMessage, n)
	for i := range ops {
		ops[i] = randomOp(r)
	}
	return ops
}

// withoutVersions is the canonical state without what depends on how ops were grouped into
// versions: created_version, updated_version and state_meta.
func withoutVersions(t testing.TB, s State) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(canonical(t, s)), &v); err != nil {
		t.Fatal(err)
	}
	var strip func(any)
	strip = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			delete(x, "created_version")
			delete(x, "updated_version")
			delete(x, "state_meta")
			for _, e := range x {
				strip(e)
			}
		case []any:
			for _, e := range x {
				strip(e)
			}
		}
	}
	strip(v)
	return mustJSON(t, v)
}

// TestSplitRequestsMatchOneRequest: random op sequences applied in one request and split
// across several requests (including one op per request) give the same final state, except
// versions and meta, and the same outcome for every op.
func TestSplitRequestsMatchOneRequest(t *testing.T) {
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 7))
		ops := randomOps(r, 1+r.IntN(MaxOpsPerRequest))
		one, err := Apply(nil, testProject, Request{Ops: ops, GeneratedAt: testTime}, newTestEvidence(), highestTestMem)
		if err != nil {
			t.Fatal(err)
		}
		// Cut points: random, or after every op.
		var cuts []int
		for i := 1; i < len(ops); i++ {
			if seed%5 == 0 || r.IntN(4) == 0 {
				cuts = append(cuts, i)
			}
		}
		cuts = append(cuts, len(ops))
		var prev *Version
		applied, rejected := []AppliedOp{}, []Rejection{}
		start := 0
		for _, end := range cuts {
			res, err := Apply(prev, testProject, Request{Ops: ops[start:end], GeneratedAt: testTime}, newTestEvidence(), highestTestMem)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range res.Applied {
				a.Index += start
				applied = append(applied, a)
			}
			for _, j := range res.Rejected {
				j.Index += start
				rejected = append(rejected, j)
			}
			if res.Version != nil {
				if prev != nil {
					if err := VerifyLink(*prev, *res.Version); err != nil {
						t.Fatal(err)
					}
				}
				prev = res.Version
			}
			start = end
		}
		if (prev == nil) != (one.Version == nil) {
			t.Fatalf("seed %d: one request made a version: %v; split requests: %v", seed, one.Version != nil, prev != nil)
		}
		if !reflect.DeepEqual(applied, one.Applied) || !reflect.DeepEqual(rejected, one.Rejected) {
			t.Fatalf("seed %d: outcomes differ\none:   %s\nsplit: %s", seed, mustJSON(t, one.Rejected), mustJSON(t, rejected))
		}
		if prev != nil {
			if a, b := withoutVersions(t, one.Version.State), withoutVersions(t, prev.State); a != b {
				t.Fatalf("seed %d: states differ\none:   %s\nsplit: %s", seed, a, b)
			}
		}
	}
}

// TestEveryOpChangesStateOrNothing drives the builder op by op: a rejected op must leave the
// state byte-identical, an applied one must change it.
func TestEveryOpChangesStateOrNothing(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	base := baseVersion(t)
	b := &builder{project: testProject, version: 2, ev: newTestEvidence(), memo: map[uint64]lookup{}, st: cloneState(base.State)}
	ops := randomOps(r, 2000)
	for _, c := range opCases() {
		ops = append(ops, json.RawMessage(c.op))
	}
	var nApplied int
	for i, raw := range ops {
		if i%250 == 0 { // keep the state small: canonicalizing it twice per op is the cost here
			b.st = cloneState(base.State)
		}
		before := canonical(t, b.st)
		_, o, err := decodeOp(raw)
		if err == nil {
			_, err = o.apply(b)
		}
		after := canonical(t, b.st)
		switch {
		case err != nil && after != before:
			t.Fatalf("op %d %s was rejected (%v) but changed the state", i, raw, err)
		case err == nil && after == before:
			t.Fatalf("op %d %s was applied but changed nothing", i, raw)
		case err == nil:
			nApplied++
		}
	}
	if nApplied < len(ops)/10 || nApplied > len(ops)*9/10 {
		t.Fatalf("%d of %d ops applied: the generator is off balance", nApplied, len(ops))
	}
	t.Logf("%d of %d ops applied", nApplied, len(ops))
}
