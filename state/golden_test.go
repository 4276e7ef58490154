package state

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// goldenState is a hand-made state with every list filled and strings that exercise the
// canonical form: non-ASCII, an emoji, characters Go's encoder escapes (<, >, &, U+2028) and
// control characters JCS escapes (tab, line feed).
func goldenState() State {
	pv := func(root string, created, updated uint64, ids ...uint64) Provenance {
		return Provenance{EvidenceMemoryIDs: ids, EvidenceRoot: root, CreatedVersion: created, UpdatedVersion: updated}
	}
	r := func(ids ...uint64) string { return rootOf(ids...) }
	return State{
		Phase:        "beta",
		CurrentFocus: "Revisión PCI <antes> de abrir & escalar\u2028😀",
		Decisions: []Decision{
			{ID: "dec_0001", Title: "MySQL", Statement: "Primera idea", Status: DecisionSuperseded, SupersededBy: "dec_0002", Provenance: pv(r(1), 1, 2, 1)},
			{ID: "dec_0002", Title: "PostgreSQL con RLS para multi-tenancy", Statement: "La seguridad por fila saca el filtrado\tpor tenant\nde la capa de aplicación",
				Status: DecisionConfirmed, Provenance: pv(r(2, 12, 45), 2, 3, 2, 12, 45)},
		},
		Milestones:    []Milestone{{ID: "mil_0001", Title: "Schema de BD", Status: MilestoneDone, Provenance: pv(r(3), 1, 2, 3)}},
		Risks:         []Risk{{ID: "risk_0001", Title: "Performance de RLS con 100K tenants", Severity: SeverityMed, Status: RiskOpen, Provenance: pv(r(4, 5), 3, 3, 4, 5)}},
		Assumptions:   []Assumption{{ID: "asm_0001", Title: "Pocos tenants grandes", Status: AssumptionInvalidated, Provenance: pv(r(6, 7), 1, 3, 6, 7)}},
		OpenQuestions: []OpenQuestion{{ID: "oq_0001", Title: "¿Quién audita PCI?", Status: QuestionAnswered, Answer: "Un QSA \"externo\"", Provenance: pv(r(8, 9), 2, 3, 8, 9)}},
		Priorities:    []Priority{{ID: "pri_0001", Title: "PCI primero", Rank: 1, Status: PriorityActive, Provenance: pv(r(10), 1, 1, 10)}},
		Constraints:   []Constraint{{ID: "con_0001", Title: "Datos en la UE", Statement: "GDPR art. 44", Status: ConstraintActive, Provenance: pv(r(11), 1, 1, 11)}},
		Vision: []Vision{
			{ID: "vis_0001", Statement: "Pagos para LATAM", Status: VisionSuperseded, SupersededBy: "vis_0002", Provenance: pv(r(13), 1, 2, 13)},
			{ID: "vis_0002", Statement: "Pagos para América", Status: VisionCurrent, Provenance: pv(r(14), 2, 2, 14)},
		},
		Vocabulary: []Term{{ID: "voc_0001", Term: "RLS", Definition: "Row-level security \\ PostgreSQL", Provenance: pv(r(15), 1, 1, 15)}},
		Metrics:    []Metric{{ID: "met_0001", Name: "latency p99", Value: "120", Unit: "ms", Target: "< 100", Provenance: pv(r(16), 1, 3, 16)}},
		Meta:       Meta{Version: 3, ConsolidatedUntilEvent: 150, PreviousStateHash: "0x7b2e0000000000000000000000000000000000000000000000000000000000f4c0"},
	}
}

// goldenFirstOps are the ops of the first version of the golden chain: a frozen copy of
// baseOps as it was when testdata/chain.json was written.
var goldenFirstOps = []string{
	`{"op":"add_decision","title":"PostgreSQL con RLS","statement":"La seguridad por fila","evidence_memory_ids":[2,1]}`, // dec_0001 proposed
	`{"op":"add_decision","title":"Clique PoA","statement":"Anclaje barato","evidence_memory_ids":[3]}`,                  // dec_0002
	`{"op":"set_decision_status","id":"dec_0002","status":"confirmed"}`,                                                  // dec_0002 confirmed
	`{"op":"add_decision","title":"MySQL","statement":"Primera idea","evidence_memory_ids":[4]}`,                         // dec_0003
	`{"op":"supersede_decision","id":"dec_0003","by_id":"dec_0002"}`,                                                     // dec_0003 superseded
	`{"op":"add_milestone","title":"Schema de BD","evidence_memory_ids":[5]}`,                                            // mil_0001 planned
	`{"op":"add_risk","title":"RLS con 100K tenants","severity":"high","evidence_memory_ids":[6]}`,                       // risk_0001 open
	`{"op":"add_assumption","title":"Los tenants son pocos","evidence_memory_ids":[7]}`,                                  // asm_0001 holding
	`{"op":"add_assumption","title":"Sin picos","statement":"Carga plana","evidence_memory_ids":[7]}`,                    // asm_0002
	`{"op":"invalidate_assumption","id":"asm_0002"}`,                                                                     // asm_0002 invalidated
	`{"op":"add_open_question","title":"¿Quién audita PCI?","evidence_memory_ids":[8]}`,                                  // oq_0001 open
	`{"op":"add_open_question","title":"¿Qué región?","evidence_memory_ids":[8]}`,                                        // oq_0002
	`{"op":"answer_open_question","id":"oq_0002","answer":"eu-west","evidence_memory_ids":[9]}`,                          // oq_0002 answered
	`{"op":"add_priority","title":"PCI primero","rank":1,"evidence_memory_ids":[10]}`,                                    // pri_0001 active
	`{"op":"add_constraint","title":"Presupuesto 500 EUR/mes","evidence_memory_ids":[11]}`,                               // con_0001 active
	`{"op":"add_constraint","title":"Solo AWS","evidence_memory_ids":[11]}`,                                              // con_0002
	`{"op":"remove_constraint","id":"con_0002"}`,                                                                         // con_0002 removed
	`{"op":"set_vision","statement":"La pasarela de pagos de LATAM","evidence_memory_ids":[12]}`,                         // vis_0001 current
	`{"op":"add_vocabulary","term":"RLS","definition":"Row level security","evidence_memory_ids":[13]}`,                  // voc_0001
	`{"op":"set_metric","name":"latency","value":"120","unit":"ms","target":"100","evidence_memory_ids":[14]}`,           // met_0001
	`{"op":"set_phase","phase":"beta"}`,
	`{"op":"set_focus","focus":"Revisión PCI"}`,
}

// goldenChain runs a fixed scenario of four requests (the third applies nothing) and returns
// each result, for testdata/chain.json.
func goldenChain(t *testing.T) []Result {
	t.Helper()
	reqs := []struct {
		until uint64
		ops   []string
	}{
		{14, goldenFirstOps},
		{30, []string{
			`{"op":"add_decision","title":"Usar consenso Clique PoA","statement":"Proof of Authority da un anclaje rápido y económico","evidence_memory_ids":[12,45,67]}`,
			`{"op":"supersede_decision","id":"dec_0001","by_id":"dec_0004","evidence_memory_ids":[67]}`,
			`{"op":"set_milestone_status","id":"mil_0001","status":"done"}`,
			`{"op":"add_risk","title":"Caída del proveedor","severity":"medium","evidence_memory_ids":[16]}`,
			`{"op":"set_metric","name":"Latency","value":"95","evidence_memory_ids":[30]}`,
			`{"op":"add_decision","title":"x","statement":"y","evidence_memory_ids":[901]}`,
		}},
		{40, []string{`{"op":"set_phase","phase":"beta"}`, `{"op":"launch"}`}},
		{40, []string{
			`{"op":"set_phase","phase":"ga"}`,
			`{"op":"set_vision","statement":"La pasarela de pagos de América","evidence_memory_ids":[40,31]}`,
			`{"op":"answer_open_question","id":"oq_0001","answer":"Un QSA externo","evidence_memory_ids":[35]}`,
		}},
	}
	var prev *Version
	var out []Result
	for i, r := range reqs {
		res, err := Apply(prev, testProject, Request{Ops: raws(r.ops...), ConsolidatedUntilEvent: r.until,
			GeneratedAt: testTime.Add(time.Duration(i) * time.Minute)}, newTestEvidence(), highestTestMem)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		out = append(out, res)
		if res.Version != nil {
			prev = res.Version
		}
	}
	return out
}

// TestGolden pins the Merkle construction, the state hash, the canonical form and the
// builder's output. Regenerate only for a new schema version: go test ./state/ -run TestGolden -update
func TestGolden(t *testing.T) {
	state := goldenState()
	stateJSON, err := json.MarshalIndent(state, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	canon := []byte(canonical(t, state))
	chain := goldenChain(t)
	chainJSON, err := json.MarshalIndent(chain, "", "  ")
	if err != nil {
		t.Fatal(err)
	}

	var values [][2]string
	add := func(k, v string) { values = append(values, [2]string{k, v}) }
	for _, n := range []int{1, 2, 3, 4, 5, 7, 8, 9} {
		var hs [][32]byte
		for i := range n {
			hs = append(hs, fill(byte(i)))
		}
		add(fmt.Sprintf("merkle(%d hashes 0x00…00, 0x01…01, …)", n), EvidenceRoot(hs))
	}
	add("merkle(event-12, event-45, event-67)", rootOf(67, 12, 45))
	h, _ := Hash(State{})
	add("state_hash(empty state)", h)
	h, _ = Hash(state)
	add("state_hash(state.json)", h)
	for _, r := range chain {
		if r.Version != nil {
			add(fmt.Sprintf("state_hash(chain.json version %d)", r.Version.Version), r.Version.StateHash)
		}
	}

	files := map[string][]byte{
		"state.json":           append(stateJSON, '\n'),
		"state.canonical.json": canon,
		"chain.json":           append(chainJSON, '\n'),
	}
	if *update {
		var b strings.Builder
		b.WriteString("# Frozen Project State v2 values. Regenerate only for a new schema version: go test ./state/ -run TestGolden -update\n")
		for _, kv := range values {
			fmt.Fprintf(&b, "%s = %s\n", kv[0], kv[1])
		}
		files["golden.txt"] = []byte(b.String())
		for name, data := range files {
			if err := os.WriteFile(filepath.Join("testdata", name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}

	want := readGolden(t)
	for _, kv := range values {
		if want[kv[0]] != kv[1] {
			t.Errorf("%s = %s, golden.txt has %s", kv[0], kv[1], want[kv[0]])
		}
	}
	if len(want) != len(values) {
		t.Errorf("golden.txt has %d values, the test computes %d", len(want), len(values))
	}
	for name, data := range files {
		got, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data) {
			t.Errorf("testdata/%s differs from what the code produces now", name)
		}
	}

	// The stored files verify on their own, without the code that wrote them.
	var fromFile State
	raw, _ := os.ReadFile("testdata/state.json")
	if err := json.Unmarshal(raw, &fromFile); err != nil {
		t.Fatal(err)
	}
	if c := canonical(t, fromFile); c != string(canon) {
		t.Errorf("state.json decodes to a state with another canonical form:\n%s", c)
	}
	if h, _ := Hash(fromFile); h != want["state_hash(state.json)"] {
		t.Errorf("state.json hashes to %s", h)
	}
	var versions []struct {
		Version *Version `json:"version"`
	}
	raw, _ = os.ReadFile("testdata/chain.json")
	if err := json.Unmarshal(raw, &versions); err != nil {
		t.Fatal(err)
	}
	var prev *Version
	for _, v := range versions {
		if v.Version == nil {
			continue
		}
		if err := Verify(*v.Version); err != nil {
			t.Error(err)
		}
		if prev != nil {
			if err := VerifyLink(*prev, *v.Version); err != nil {
				t.Error(err)
			}
		}
		prev = v.Version
	}
}

func readGolden(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open("testdata/golden.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, " = ")
		if !ok {
			t.Fatalf("golden.txt: bad line %q", line)
		}
		m[k] = v
	}
	return m
}
