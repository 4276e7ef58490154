package state

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// baseOps builds the version every op case starts from (version 1).
var baseOps = []string{
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

func baseVersion(t testing.TB) *Version {
	t.Helper()
	return build(t, nil, baseOps...)
}

type opCase struct {
	name string
	op   string
	err  string            // substring of the rejection; "" if the op must apply
	want func(s State) any // for a valid op: what must hold (returns nil if fine, else a description)
}

func rootOf(ids ...uint64) string {
	hs := make([][32]byte, len(ids))
	for i, n := range ids {
		hs[i] = eventHash(n)
	}
	return EvidenceRoot(hs)
}

func expect(cond bool, format string, args ...any) any {
	if cond {
		return nil
	}
	return fmt.Sprintf(format, args...)
}

// opCases are the table of TestOps; the fuzz targets start from them too.
func opCases() []opCase {
	long := func(n int) string { return strings.Repeat("é", n) }
	many := func(n int) string {
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprint(i%testMemories + 1)
		}
		return "[" + strings.Join(ids, ",") + "]"
	}
	return []opCase{
		// Decoding, shared by every op.
		{name: "not an object", op: `[1]`, err: "op must be a JSON object"},
		{name: "a string", op: `"add_decision"`, err: "op must be a JSON object"},
		{name: "empty", op: ``, err: "op must be a JSON object"},
		{name: "invalid JSON", op: `{"op":`, err: "op is not valid JSON"},
		{name: "trailing data", op: `{"op":"set_phase","phase":"x"} {}`, err: "data after the object"},
		{name: "missing op", op: `{"title":"x"}`, err: `missing "op"; one of add_assumption, add_constraint`},
		{name: "op not a string", op: `{"op":1}`, err: `"op" must be a string`},
		{name: "unknown op", op: `{"op":"delete_decision","id":"dec_0001"}`, err: `unknown op "delete_decision"`},
		{name: "op in other case", op: `{"op":"Add_Decision"}`, err: `unknown op "Add_Decision"`},
		{name: "unknown field", op: `{"op":"add_decision","title":"t","statement":"s","evidence_memory_ids":[1],"why":"x"}`,
			err: `unknown field "why" for add_decision (its fields: title, statement, evidence_memory_ids)`},
		{name: "field in other case", op: `{"op":"add_decision","Title":"t","statement":"s","evidence_memory_ids":[1]}`, err: `unknown field "Title"`},
		{name: "field of another op", op: `{"op":"set_milestone_status","id":"mil_0001","status":"done","evidence_memory_ids":[1]}`,
			err: `unknown field "evidence_memory_ids" for set_milestone_status (its fields: id, status)`},
		{name: "duplicate field", op: `{"op":"set_phase","phase":"a","phase":"b"}`, err: `field "phase" appears twice`},
		{name: "duplicate op", op: `{"op":"set_phase","op":"set_focus","phase":"a"}`, err: `field "op" appears twice`},
		{name: "null field", op: `{"op":"add_milestone","title":"t","status":null,"evidence_memory_ids":[1]}`, err: "status is null; omit it or give a value"},
		{name: "string for evidence", op: `{"op":"add_risk","title":"t","severity":"low","evidence_memory_ids":"1"}`,
			err: "evidence_memory_ids must be a list of memory numbers (positive integers), not string"},
		{name: "negative evidence", op: `{"op":"add_risk","title":"t","severity":"low","evidence_memory_ids":[-1]}`,
			err: "evidence_memory_ids must be a list of memory numbers (positive integers), not number -1"},
		{name: "fractional evidence", op: `{"op":"add_risk","title":"t","severity":"low","evidence_memory_ids":[1.5]}`, err: "not number 1.5"},
		{name: "number for title", op: `{"op":"add_risk","title":7,"severity":"low","evidence_memory_ids":[1]}`, err: "title must be a string, not number"},
		{name: "too big", op: `{"op":"set_phase","phase":"` + strings.Repeat("x", MaxOpBytes) + `"}`, err: "bytes of JSON; at most 65536"},

		// add_decision
		{name: "add_decision", op: `{"op":"add_decision","title":"Usar consenso Clique PoA","statement":"Proof of Authority da un anclaje rápido","evidence_memory_ids":[7,3,3]}`,
			want: func(s State) any {
				d := s.Decisions[3]
				return expect(d.ID == "dec_0004" && d.Status == "proposed" && d.SupersededBy == "" && d.Title == "Usar consenso Clique PoA" &&
					slices.Equal(d.EvidenceMemoryIDs, MemoryIDs{3, 7}) && d.EvidenceRoot == rootOf(3, 7) &&
					d.CreatedVersion == 2 && d.UpdatedVersion == 2, "got %+v", d)
			}},
		{name: "add_decision 200 runes, multi-line statement", op: `{"op":"add_decision","title":"` + long(200) + `","statement":"a\nb\tc","evidence_memory_ids":[1]}`,
			want: func(s State) any {
				return expect(s.Decisions[3].Statement == "a\nb\tc", "statement %q", s.Decisions[3].Statement)
			}},
		{name: "add_decision no title", op: `{"op":"add_decision","statement":"s","evidence_memory_ids":[1]}`, err: "title is missing or blank"},
		{name: "add_decision blank title", op: `{"op":"add_decision","title":" \t","statement":"s","evidence_memory_ids":[1]}`, err: "title is missing or blank"},
		{name: "add_decision long title", op: `{"op":"add_decision","title":"` + long(201) + `","statement":"s","evidence_memory_ids":[1]}`, err: "title is 201 characters long; at most 200"},
		{name: "add_decision title with newline", op: `{"op":"add_decision","title":"a\nb","statement":"s","evidence_memory_ids":[1]}`, err: "title contains U+000A, a control character; it must be one line"},
		{name: "add_decision no statement", op: `{"op":"add_decision","title":"t","evidence_memory_ids":[1]}`, err: "statement is missing or blank"},
		{name: "add_decision long statement", op: `{"op":"add_decision","title":"t","statement":"` + long(2001) + `","evidence_memory_ids":[1]}`, err: "statement is 2001 characters long; at most 2000"},
		{name: "add_decision control in statement", op: `{"op":"add_decision","title":"t","statement":"a\u0001","evidence_memory_ids":[1]}`, err: "statement contains U+0001, a control character other than tab and line breaks"},
		{name: "add_decision no evidence", op: `{"op":"add_decision","title":"t","statement":"s"}`, err: "evidence_memory_ids is missing or empty: cite at least one memory"},
		{name: "add_decision empty evidence", op: `{"op":"add_decision","title":"t","statement":"s","evidence_memory_ids":[]}`, err: "evidence_memory_ids is missing or empty"},
		{name: "add_decision 101 memories", op: `{"op":"add_decision","title":"t","statement":"s","evidence_memory_ids":` + many(101) + `}`, err: "evidence_memory_ids has 101 numbers; at most 100"},
		{name: "add_decision 100 memories", op: `{"op":"add_decision","title":"t","statement":"s","evidence_memory_ids":` + many(100) + `}`,
			want: func(s State) any {
				return expect(len(s.Decisions[3].EvidenceMemoryIDs) == 100, "evidence %v", s.Decisions[3].EvidenceMemoryIDs)
			}},
		{name: "add_decision memory 0", op: `{"op":"add_decision","title":"t","statement":"s","evidence_memory_ids":[0]}`, err: "memory numbers start at 1, not 0"},
		{name: "add_decision memory 2^53", op: `{"op":"add_decision","title":"t","statement":"s","evidence_memory_ids":[9007199254740992]}`, err: "9007199254740992 is not a memory number (above 2^53-1)"},
		{name: "add_decision unknown memory", op: `{"op":"add_decision","title":"t","statement":"s","evidence_memory_ids":[1,999]}`, err: "memory #999 does not exist"},
		{name: "add_decision memory of another project", op: `{"op":"add_decision","title":"t","statement":"s","evidence_memory_ids":[900]}`, err: `memory #900 belongs to project "otro", not "sistema-pagos"`},
		{name: "add_decision memory without event hash", op: `{"op":"add_decision","title":"t","statement":"s","evidence_memory_ids":[901]}`, err: "memory #901 has no event hash yet"},
		{name: "add_decision every bad memory", op: `{"op":"add_decision","title":"t","statement":"s","evidence_memory_ids":[901,999,900]}`,
			err: `memory #900 belongs to project "otro", not "sistema-pagos"; memory #901 has no event hash yet (home has not numbered it); cite it once it has; memory #999 does not exist`},
		{name: "add_decision every bad field", op: `{"op":"add_decision","title":"","statement":""}`,
			err: "title is missing or blank; statement is missing or blank; evidence_memory_ids is missing or empty: cite at least one memory"},

		// set_decision_status
		{name: "set_decision_status confirmed", op: `{"op":"set_decision_status","id":"dec_0001","status":"confirmed"}`,
			want: func(s State) any {
				d := s.Decisions[0]
				return expect(d.Status == "confirmed" && slices.Equal(d.EvidenceMemoryIDs, MemoryIDs{1, 2}) && d.EvidenceRoot == rootOf(1, 2) &&
					d.CreatedVersion == 1 && d.UpdatedVersion == 2, "got %+v", d)
			}},
		{name: "set_decision_status rejected with evidence", op: `{"op":"set_decision_status","id":"dec_0001","status":"rejected","evidence_memory_ids":[20,1]}`,
			want: func(s State) any {
				d := s.Decisions[0]
				return expect(d.Status == "rejected" && slices.Equal(d.EvidenceMemoryIDs, MemoryIDs{1, 2, 20}) && d.EvidenceRoot == rootOf(1, 2, 20), "got %+v", d)
			}},
		{name: "set_decision_status confirmed to rejected", op: `{"op":"set_decision_status","id":"dec_0002","status":"rejected"}`,
			want: func(s State) any { return expect(s.Decisions[1].Status == "rejected", "got %+v", s.Decisions[1]) }},
		{name: "set_decision_status proposed", op: `{"op":"set_decision_status","id":"dec_0001","status":"proposed"}`, err: `status must be one of confirmed, rejected, not "proposed"`},
		{name: "set_decision_status superseded", op: `{"op":"set_decision_status","id":"dec_0001","status":"superseded"}`, err: `status must be one of confirmed, rejected, not "superseded"`},
		{name: "set_decision_status no status", op: `{"op":"set_decision_status","id":"dec_0001"}`, err: "status is missing or empty; one of confirmed, rejected"},
		{name: "set_decision_status no id", op: `{"op":"set_decision_status","status":"confirmed"}`, err: "id is missing or empty"},
		{name: "set_decision_status long id", op: `{"op":"set_decision_status","id":"dec_` + strings.Repeat("0", 40) + `","status":"confirmed"}`, err: "id is 44 bytes long; item ids are at most 32"},
		{name: "set_decision_status unknown id", op: `{"op":"set_decision_status","id":"dec_0099","status":"confirmed"}`, err: "decision dec_0099 does not exist"},
		{name: "set_decision_status milestone id", op: `{"op":"set_decision_status","id":"mil_0001","status":"confirmed"}`, err: `"mil_0001" is not a decision id (those look like dec_0001)`},
		{name: "set_decision_status of superseded", op: `{"op":"set_decision_status","id":"dec_0003","status":"confirmed"}`, err: "dec_0003 is superseded by dec_0002; its status can no longer change"},
		{name: "set_decision_status same", op: `{"op":"set_decision_status","id":"dec_0002","status":"confirmed"}`, err: "dec_0002 is already confirmed"},
		{name: "set_decision_status bad evidence", op: `{"op":"set_decision_status","id":"dec_0001","status":"confirmed","evidence_memory_ids":[999]}`, err: "memory #999 does not exist"},

		// supersede_decision
		{name: "supersede_decision", op: `{"op":"supersede_decision","id":"dec_0001","by_id":"dec_0002"}`,
			want: func(s State) any {
				old, by := s.Decisions[0], s.Decisions[1]
				return expect(old.Status == "superseded" && old.SupersededBy == "dec_0002" && old.UpdatedVersion == 2 &&
					by.Status == "confirmed" && by.UpdatedVersion == 1, "got %+v and %+v", old, by)
			}},
		{name: "supersede_decision with evidence", op: `{"op":"supersede_decision","id":"dec_0001","by_id":"dec_0002","evidence_memory_ids":[30]}`,
			want: func(s State) any {
				return expect(slices.Equal(s.Decisions[0].EvidenceMemoryIDs, MemoryIDs{1, 2, 30}), "got %+v", s.Decisions[0])
			}},
		{name: "supersede_decision by itself", op: `{"op":"supersede_decision","id":"dec_0001","by_id":"dec_0001"}`, err: "a decision cannot supersede itself (id and by_id are both dec_0001)"},
		{name: "supersede_decision no by_id", op: `{"op":"supersede_decision","id":"dec_0001"}`, err: "by_id is missing or empty"},
		{name: "supersede_decision no id", op: `{"op":"supersede_decision","by_id":"dec_0001"}`, err: "id is missing or empty"},
		{name: "supersede_decision unknown id", op: `{"op":"supersede_decision","id":"dec_0009","by_id":"dec_0001"}`, err: "decision dec_0009 does not exist"},
		{name: "supersede_decision unknown by_id", op: `{"op":"supersede_decision","id":"dec_0001","by_id":"dec_0009"}`, err: "by_id: decision dec_0009 does not exist"},
		{name: "supersede_decision by a risk", op: `{"op":"supersede_decision","id":"dec_0001","by_id":"risk_0001"}`, err: `by_id: "risk_0001" is not a decision id`},
		{name: "supersede_decision twice", op: `{"op":"supersede_decision","id":"dec_0003","by_id":"dec_0001"}`, err: "dec_0003 is already superseded by dec_0002"},
		{name: "supersede_decision by superseded", op: `{"op":"supersede_decision","id":"dec_0001","by_id":"dec_0003"}`, err: "dec_0003 is itself superseded by dec_0002; supersede dec_0001 by a current decision"},

		// add_milestone, set_milestone_status
		{name: "add_milestone", op: `{"op":"add_milestone","title":"Beta privada","evidence_memory_ids":[15]}`,
			want: func(s State) any {
				m := s.Milestones[1]
				return expect(m.ID == "mil_0002" && m.Status == "planned" && m.EvidenceRoot == rootOf(15) && m.CreatedVersion == 2, "got %+v", m)
			}},
		{name: "add_milestone done", op: `{"op":"add_milestone","title":"Beta privada","status":"done","evidence_memory_ids":[15]}`,
			want: func(s State) any { return expect(s.Milestones[1].Status == "done", "got %+v", s.Milestones[1]) }},
		{name: "add_milestone bad status", op: `{"op":"add_milestone","title":"t","status":"finished","evidence_memory_ids":[15]}`, err: `status must be one of planned, in_progress, done, not "finished"`},
		{name: "add_milestone empty status", op: `{"op":"add_milestone","title":"t","status":"","evidence_memory_ids":[15]}`, err: "status is missing or empty; one of planned, in_progress, done"},
		{name: "add_milestone no evidence", op: `{"op":"add_milestone","title":"t"}`, err: "evidence_memory_ids is missing or empty"},
		{name: "set_milestone_status", op: `{"op":"set_milestone_status","id":"mil_0001","status":"in_progress"}`,
			want: func(s State) any {
				m := s.Milestones[0]
				return expect(m.Status == "in_progress" && m.UpdatedVersion == 2 && m.CreatedVersion == 1, "got %+v", m)
			}},
		{name: "set_milestone_status same", op: `{"op":"set_milestone_status","id":"mil_0001","status":"planned"}`, err: "mil_0001 is already planned"},
		{name: "set_milestone_status bad", op: `{"op":"set_milestone_status","id":"mil_0001","status":"late"}`, err: `status must be one of planned, in_progress, done, not "late"`},
		{name: "set_milestone_status unknown", op: `{"op":"set_milestone_status","id":"mil_0002","status":"done"}`, err: "milestone mil_0002 does not exist"},

		// add_risk, set_risk_status
		{name: "add_risk", op: `{"op":"add_risk","title":"Caída del proveedor","severity":"med","evidence_memory_ids":[16]}`,
			want: func(s State) any {
				r := s.Risks[1]
				return expect(r.ID == "risk_0002" && r.Severity == "med" && r.Status == "open", "got %+v", r)
			}},
		{name: "add_risk medium", op: `{"op":"add_risk","title":"t","severity":"medium","evidence_memory_ids":[16]}`, err: `severity must be one of low, med, high, not "medium"`},
		{name: "add_risk no severity", op: `{"op":"add_risk","title":"t","evidence_memory_ids":[16]}`, err: "severity is missing or empty; one of low, med, high"},
		{name: "set_risk_status", op: `{"op":"set_risk_status","id":"risk_0001","status":"accepted"}`,
			want: func(s State) any {
				return expect(s.Risks[0].Status == "accepted" && s.Risks[0].UpdatedVersion == 2, "got %+v", s.Risks[0])
			}},
		{name: "set_risk_status same", op: `{"op":"set_risk_status","id":"risk_0001","status":"open"}`, err: "risk_0001 is already open"},
		{name: "set_risk_status bad", op: `{"op":"set_risk_status","id":"risk_0001","status":"gone"}`, err: `status must be one of open, mitigated, closed, accepted, not "gone"`},
		{name: "set_risk_status decision id", op: `{"op":"set_risk_status","id":"dec_0001","status":"closed"}`, err: `"dec_0001" is not a risk id (those look like risk_0001)`},

		// set_focus, set_phase
		{name: "set_focus", op: `{"op":"set_focus","focus":"Abrir a los primeros tenants"}`,
			want: func(s State) any {
				return expect(s.CurrentFocus == "Abrir a los primeros tenants", "focus %q", s.CurrentFocus)
			}},
		{name: "set_focus same", op: `{"op":"set_focus","focus":"Revisión PCI"}`, err: `current_focus is already "Revisión PCI"`},
		{name: "set_focus blank", op: `{"op":"set_focus","focus":""}`, err: "focus is missing or blank"},
		{name: "set_focus long", op: `{"op":"set_focus","focus":"` + long(501) + `"}`, err: "focus is 501 characters long; at most 500"},
		{name: "set_focus two lines", op: `{"op":"set_focus","focus":"a\r\nb"}`, err: "focus contains U+000D"},
		{name: "set_focus with evidence", op: `{"op":"set_focus","focus":"x","evidence_memory_ids":[1]}`, err: `unknown field "evidence_memory_ids" for set_focus (its fields: focus)`},
		{name: "set_phase", op: `{"op":"set_phase","phase":"ga"}`,
			want: func(s State) any { return expect(s.Phase == "ga", "phase %q", s.Phase) }},
		{name: "set_phase same", op: `{"op":"set_phase","phase":"beta"}`, err: `phase is already "beta"`},
		{name: "set_phase long", op: `{"op":"set_phase","phase":"` + long(101) + `"}`, err: "phase is 101 characters long; at most 100"},
		{name: "set_phase missing", op: `{"op":"set_phase"}`, err: "phase is missing or blank"},

		// assumptions
		{name: "add_assumption", op: `{"op":"add_assumption","title":"Stripe sigue en LATAM","statement":"No cambian las tarifas","evidence_memory_ids":[17]}`,
			want: func(s State) any {
				a := s.Assumptions[2]
				return expect(a.ID == "asm_0003" && a.Status == "holding" && a.Statement == "No cambian las tarifas", "got %+v", a)
			}},
		{name: "add_assumption without statement", op: `{"op":"add_assumption","title":"t","evidence_memory_ids":[17]}`,
			want: func(s State) any { return expect(s.Assumptions[2].Statement == "", "got %+v", s.Assumptions[2]) }},
		{name: "add_assumption no evidence", op: `{"op":"add_assumption","title":"t"}`, err: "evidence_memory_ids is missing or empty"},
		{name: "invalidate_assumption", op: `{"op":"invalidate_assumption","id":"asm_0001","evidence_memory_ids":[18]}`,
			want: func(s State) any {
				a := s.Assumptions[0]
				return expect(a.Status == "invalidated" && slices.Equal(a.EvidenceMemoryIDs, MemoryIDs{7, 18}) && a.EvidenceRoot == rootOf(7, 18), "got %+v", a)
			}},
		{name: "invalidate_assumption twice", op: `{"op":"invalidate_assumption","id":"asm_0002"}`, err: "asm_0002 is already invalidated"},
		{name: "invalidate_assumption unknown", op: `{"op":"invalidate_assumption","id":"asm_0009"}`, err: "assumption asm_0009 does not exist"},

		// open questions
		{name: "add_open_question", op: `{"op":"add_open_question","title":"¿Hace falta SOC2?","evidence_memory_ids":[19]}`,
			want: func(s State) any {
				q := s.OpenQuestions[2]
				return expect(q.ID == "oq_0003" && q.Status == "open" && q.Answer == "", "got %+v", q)
			}},
		{name: "add_open_question no title", op: `{"op":"add_open_question","evidence_memory_ids":[19]}`, err: "title is missing or blank"},
		{name: "answer_open_question", op: `{"op":"answer_open_question","id":"oq_0001","answer":"Un QSA externo","evidence_memory_ids":[21]}`,
			want: func(s State) any {
				q := s.OpenQuestions[0]
				return expect(q.Status == "answered" && q.Answer == "Un QSA externo" && slices.Equal(q.EvidenceMemoryIDs, MemoryIDs{8, 21}), "got %+v", q)
			}},
		{name: "answer_open_question twice", op: `{"op":"answer_open_question","id":"oq_0002","answer":"x","evidence_memory_ids":[21]}`, err: "oq_0002 is already answered"},
		{name: "answer_open_question no answer", op: `{"op":"answer_open_question","id":"oq_0001","evidence_memory_ids":[21]}`, err: "answer is missing or blank"},
		{name: "answer_open_question no evidence", op: `{"op":"answer_open_question","id":"oq_0001","answer":"x"}`, err: "evidence_memory_ids is missing or empty"},

		// priorities
		{name: "add_priority", op: `{"op":"add_priority","title":"Latencia","rank":2,"evidence_memory_ids":[22]}`,
			want: func(s State) any {
				p := s.Priorities[1]
				return expect(p.ID == "pri_0002" && p.Rank == 2 && p.Status == "active", "got %+v", p)
			}},
		{name: "add_priority no rank", op: `{"op":"add_priority","title":"t","evidence_memory_ids":[22]}`, err: "rank is missing or out of range: 1 (most important) to 1000, not 0"},
		{name: "add_priority rank 1001", op: `{"op":"add_priority","title":"t","rank":1001,"evidence_memory_ids":[22]}`, err: "not 1001"},
		{name: "add_priority negative rank", op: `{"op":"add_priority","title":"t","rank":-3,"evidence_memory_ids":[22]}`, err: "not -3"},
		{name: "add_priority rank as string", op: `{"op":"add_priority","title":"t","rank":"1","evidence_memory_ids":[22]}`, err: "rank must be an integer, not string"},
		{name: "add_priority fractional rank", op: `{"op":"add_priority","title":"t","rank":1.5,"evidence_memory_ids":[22]}`, err: "rank must be an integer, not number 1.5"},
		{name: "set_priority_status", op: `{"op":"set_priority_status","id":"pri_0001","status":"done"}`,
			want: func(s State) any {
				return expect(s.Priorities[0].Status == "done" && s.Priorities[0].UpdatedVersion == 2, "got %+v", s.Priorities[0])
			}},
		{name: "set_priority_status same", op: `{"op":"set_priority_status","id":"pri_0001","status":"active"}`, err: "pri_0001 is already active"},
		{name: "set_priority_status bad", op: `{"op":"set_priority_status","id":"pri_0001","status":"paused"}`, err: `status must be one of active, done, dropped, not "paused"`},

		// constraints
		{name: "add_constraint", op: `{"op":"add_constraint","title":"GDPR","statement":"Datos en la UE","evidence_memory_ids":[23]}`,
			want: func(s State) any {
				c := s.Constraints[2]
				return expect(c.ID == "con_0003" && c.Status == "active" && c.Statement == "Datos en la UE", "got %+v", c)
			}},
		{name: "add_constraint long statement", op: `{"op":"add_constraint","title":"t","statement":"` + long(2001) + `","evidence_memory_ids":[23]}`, err: "statement is 2001 characters long"},
		{name: "remove_constraint", op: `{"op":"remove_constraint","id":"con_0001"}`,
			want: func(s State) any {
				c := s.Constraints[0]
				return expect(c.Status == "removed" && c.UpdatedVersion == 2 && len(s.Constraints) == 2, "got %+v", c)
			}},
		{name: "remove_constraint twice", op: `{"op":"remove_constraint","id":"con_0002"}`, err: "con_0002 is already removed"},
		{name: "remove_constraint unknown", op: `{"op":"remove_constraint","id":"con_0003"}`, err: "constraint con_0003 does not exist"},

		// vision
		{name: "set_vision", op: `{"op":"set_vision","statement":"La pasarela de pagos de América","evidence_memory_ids":[24]}`,
			want: func(s State) any {
				old, cur := s.Vision[0], s.Vision[1]
				return expect(old.Status == "superseded" && old.SupersededBy == "vis_0002" && old.UpdatedVersion == 2 &&
					cur.ID == "vis_0002" && cur.Status == "current" && cur.SupersededBy == "" && cur.EvidenceRoot == rootOf(24), "got %+v and %+v", old, cur)
			}},
		{name: "set_vision same", op: `{"op":"set_vision","statement":"La pasarela de pagos de LATAM","evidence_memory_ids":[24]}`, err: "the current vision vis_0001 already says this"},
		{name: "set_vision no statement", op: `{"op":"set_vision","evidence_memory_ids":[24]}`, err: "statement is missing or blank"},
		{name: "set_vision no evidence", op: `{"op":"set_vision","statement":"x"}`, err: "evidence_memory_ids is missing or empty"},

		// vocabulary
		{name: "add_vocabulary", op: `{"op":"add_vocabulary","term":"Tenant","definition":"Un comercio cliente","evidence_memory_ids":[25]}`,
			want: func(s State) any {
				v := s.Vocabulary[1]
				return expect(v.ID == "voc_0002" && v.Term == "Tenant" && v.Definition == "Un comercio cliente", "got %+v", v)
			}},
		{name: "add_vocabulary redefines", op: `{"op":"add_vocabulary","term":"rls","definition":"Row-level security de PostgreSQL","evidence_memory_ids":[25]}`,
			want: func(s State) any {
				v := s.Vocabulary[0]
				return expect(len(s.Vocabulary) == 1 && v.ID == "voc_0001" && v.Term == "rls" && v.Definition == "Row-level security de PostgreSQL" &&
					slices.Equal(v.EvidenceMemoryIDs, MemoryIDs{13, 25}) && v.CreatedVersion == 1 && v.UpdatedVersion == 2, "got %+v", s.Vocabulary)
			}},
		{name: "add_vocabulary same", op: `{"op":"add_vocabulary","term":"RLS","definition":"Row level security","evidence_memory_ids":[25]}`, err: `voc_0001 already defines "RLS" this way`},
		{name: "add_vocabulary no definition", op: `{"op":"add_vocabulary","term":"x","evidence_memory_ids":[25]}`, err: "definition is missing or blank"},
		{name: "add_vocabulary long term", op: `{"op":"add_vocabulary","term":"` + long(101) + `","definition":"d","evidence_memory_ids":[25]}`, err: "term is 101 characters long; at most 100"},

		// metrics
		{name: "set_metric new", op: `{"op":"set_metric","name":"tenants","value":"12","evidence_memory_ids":[26]}`,
			want: func(s State) any {
				m := s.Metrics[1]
				return expect(m.ID == "met_0002" && m.Name == "tenants" && m.Value == "12" && m.Unit == "" && m.Target == "", "got %+v", m)
			}},
		{name: "set_metric update keeps unit and target", op: `{"op":"set_metric","name":"LATENCY","value":"95","evidence_memory_ids":[26]}`,
			want: func(s State) any {
				m := s.Metrics[0]
				return expect(len(s.Metrics) == 1 && m.ID == "met_0001" && m.Name == "LATENCY" && m.Value == "95" && m.Unit == "ms" && m.Target == "100" &&
					slices.Equal(m.EvidenceMemoryIDs, MemoryIDs{14, 26}), "got %+v", s.Metrics)
			}},
		{name: "set_metric clears unit", op: `{"op":"set_metric","name":"latency","value":"120","unit":"","evidence_memory_ids":[26]}`,
			want: func(s State) any {
				return expect(s.Metrics[0].Unit == "" && s.Metrics[0].Target == "100", "got %+v", s.Metrics[0])
			}},
		{name: "set_metric same", op: `{"op":"set_metric","name":"latency","value":"120","unit":"ms","evidence_memory_ids":[26]}`, err: `met_0001 (latency) already has this value, unit and target`},
		{name: "set_metric no value", op: `{"op":"set_metric","name":"latency","evidence_memory_ids":[26]}`, err: "value is missing or blank"},
		{name: "set_metric long unit", op: `{"op":"set_metric","name":"x","value":"1","unit":"` + long(33) + `","evidence_memory_ids":[26]}`, err: "unit is 33 characters long; at most 32"},
		{name: "set_metric no evidence", op: `{"op":"set_metric","name":"x","value":"1"}`, err: "evidence_memory_ids is missing or empty"},
	}
}

// TestOps applies each case's op on the base version: a valid op must give version 2 with
// the expected change; an invalid one must be rejected with the expected reason.
func TestOps(t *testing.T) {
	base := baseVersion(t)
	cases := opCases()
	seen := map[string]bool{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if seen[c.name] {
				t.Fatalf("duplicate case name")
			}
			seen[c.name] = true
			before := canonical(t, base.State)
			v, err := applyOne(t, base, c.op)
			if canonical(t, base.State) != before {
				t.Fatal("Apply changed the previous version")
			}
			if c.err != "" {
				if err == "" {
					t.Fatalf("applied; want rejection %q", c.err)
				}
				if !contains(err, c.err) {
					t.Fatalf("rejected with\n  %q\nwant it to contain\n  %q", err, c.err)
				}
				return
			}
			if err != "" {
				t.Fatalf("rejected: %s", err)
			}
			if v.Version != 2 || v.State.Meta.PreviousStateHash != NullString(base.StateHash) {
				t.Fatalf("version %d, previous %s", v.Version, v.State.Meta.PreviousStateHash)
			}
			if msg := c.want(v.State); msg != nil {
				t.Fatal(msg)
			}
		})
	}
	// Every op of the grammar has at least one valid and one invalid case.
	for _, name := range OpNames() {
		var valid, invalid bool
		for _, c := range cases {
			if strings.Contains(c.op, `"op":"`+name+`"`) {
				if c.err == "" {
					valid = true
				} else {
					invalid = true
				}
			}
		}
		if !valid || !invalid {
			t.Errorf("op %s: valid case %v, invalid case %v", name, valid, invalid)
		}
	}
}

// TestGrammar pins the ops and their fields as doc.go lists them.
func TestGrammar(t *testing.T) {
	want := map[string]string{
		"add_decision":          "title statement evidence_memory_ids",
		"set_decision_status":   "id status evidence_memory_ids",
		"supersede_decision":    "id by_id evidence_memory_ids",
		"add_milestone":         "title status evidence_memory_ids",
		"set_milestone_status":  "id status",
		"add_risk":              "title severity evidence_memory_ids",
		"set_risk_status":       "id status",
		"set_focus":             "focus",
		"set_phase":             "phase",
		"add_assumption":        "title statement evidence_memory_ids",
		"invalidate_assumption": "id evidence_memory_ids",
		"add_open_question":     "title evidence_memory_ids",
		"answer_open_question":  "id answer evidence_memory_ids",
		"add_priority":          "title rank evidence_memory_ids",
		"set_priority_status":   "id status",
		"add_constraint":        "title statement evidence_memory_ids",
		"remove_constraint":     "id evidence_memory_ids",
		"set_vision":            "statement evidence_memory_ids",
		"add_vocabulary":        "term definition evidence_memory_ids",
		"set_metric":            "name value unit target evidence_memory_ids",
	}
	names := OpNames()
	if len(names) != len(want) || !slices.IsSorted(names) {
		t.Fatalf("OpNames() = %v", names)
	}
	for _, n := range names {
		if got := strings.Join(OpFields(n), " "); got != want[n] {
			t.Errorf("%s fields %q, want %q", n, got, want[n])
		}
	}
	if OpFields("nope") != nil {
		t.Error("OpFields of an unknown op")
	}
}
