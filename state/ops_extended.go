package state

import (
	"fmt"
	"strings"
)

// The extended ops. Their fields are this package's (documented in doc.go).

// Statuses of the extended items.
const (
	AssumptionHolding     = "holding"
	AssumptionInvalidated = "invalidated"

	QuestionOpen     = "open"
	QuestionAnswered = "answered"

	PriorityActive  = "active"
	PriorityDone    = "done"
	PriorityDropped = "dropped"

	ConstraintActive  = "active"
	ConstraintRemoved = "removed"

	VisionCurrent    = "current"
	VisionSuperseded = "superseded"
)

type addAssumption struct {
	Title     string   `json:"title"`
	Statement string   `json:"statement"`
	Evidence  []uint64 `json:"evidence_memory_ids"`
}

func (o *addAssumption) check() error {
	var p problems
	p.line("title", o.Title, MaxTitleLen)
	p.text("statement", o.Statement, MaxTextLen, false)
	p.evidence(o.Evidence, true)
	return p.err()
}

func (o *addAssumption) apply(b *builder) (string, error) {
	id, err := newID("asm", "assumptions", b.st.Assumptions)
	if err != nil {
		return "", err
	}
	pv, err := b.provenance(id, Provenance{}, o.Evidence)
	if err != nil {
		return "", err
	}
	b.st.Assumptions = append(b.st.Assumptions, Assumption{ID: id, Title: o.Title, Statement: o.Statement,
		Status: AssumptionHolding, Provenance: pv})
	return id, nil
}

type invalidateAssumption struct {
	ID       string   `json:"id"`
	Evidence []uint64 `json:"evidence_memory_ids"`
}

func (o *invalidateAssumption) check() error {
	var p problems
	p.id("id", o.ID)
	p.evidence(o.Evidence, false)
	return p.err()
}

func (o *invalidateAssumption) apply(b *builder) (string, error) {
	i, err := find("assumption", "asm", b.st.Assumptions, o.ID)
	if err != nil {
		return "", err
	}
	a := b.st.Assumptions[i]
	if a.Status == AssumptionInvalidated {
		return "", fmt.Errorf("%s is already invalidated", a.ID)
	}
	if a.Provenance, err = b.provenance(a.ID, a.Provenance, o.Evidence); err != nil {
		return "", err
	}
	a.Status = AssumptionInvalidated
	b.st.Assumptions[i] = a
	return a.ID, nil
}

type addOpenQuestion struct {
	Title    string   `json:"title"`
	Evidence []uint64 `json:"evidence_memory_ids"`
}

func (o *addOpenQuestion) check() error {
	var p problems
	p.line("title", o.Title, MaxTitleLen)
	p.evidence(o.Evidence, true)
	return p.err()
}

func (o *addOpenQuestion) apply(b *builder) (string, error) {
	id, err := newID("oq", "open_questions", b.st.OpenQuestions)
	if err != nil {
		return "", err
	}
	pv, err := b.provenance(id, Provenance{}, o.Evidence)
	if err != nil {
		return "", err
	}
	b.st.OpenQuestions = append(b.st.OpenQuestions, OpenQuestion{ID: id, Title: o.Title, Status: QuestionOpen, Provenance: pv})
	return id, nil
}

type answerOpenQuestion struct {
	ID       string   `json:"id"`
	Answer   string   `json:"answer"`
	Evidence []uint64 `json:"evidence_memory_ids"`
}

func (o *answerOpenQuestion) check() error {
	var p problems
	p.id("id", o.ID)
	p.text("answer", o.Answer, MaxTextLen, true)
	p.evidence(o.Evidence, true)
	return p.err()
}

func (o *answerOpenQuestion) apply(b *builder) (string, error) {
	i, err := find("open question", "oq", b.st.OpenQuestions, o.ID)
	if err != nil {
		return "", err
	}
	q := b.st.OpenQuestions[i]
	if q.Status == QuestionAnswered {
		return "", fmt.Errorf("%s is already answered", q.ID)
	}
	if q.Provenance, err = b.provenance(q.ID, q.Provenance, o.Evidence); err != nil {
		return "", err
	}
	q.Status, q.Answer = QuestionAnswered, NullString(o.Answer)
	b.st.OpenQuestions[i] = q
	return q.ID, nil
}

type addPriority struct {
	Title    string   `json:"title"`
	Rank     int      `json:"rank"`
	Evidence []uint64 `json:"evidence_memory_ids"`
}

func (o *addPriority) check() error {
	var p problems
	p.line("title", o.Title, MaxTitleLen)
	if o.Rank < 1 || o.Rank > MaxRank {
		p.add("rank is missing or out of range: 1 (most important) to %d, not %d", MaxRank, o.Rank)
	}
	p.evidence(o.Evidence, true)
	return p.err()
}

func (o *addPriority) apply(b *builder) (string, error) {
	id, err := newID("pri", "priorities", b.st.Priorities)
	if err != nil {
		return "", err
	}
	pv, err := b.provenance(id, Provenance{}, o.Evidence)
	if err != nil {
		return "", err
	}
	b.st.Priorities = append(b.st.Priorities, Priority{ID: id, Title: o.Title, Rank: o.Rank, Status: PriorityActive, Provenance: pv})
	return id, nil
}

type setPriorityStatus struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

func (o *setPriorityStatus) check() error {
	var p problems
	p.id("id", o.ID)
	p.enum("status", o.Status, PriorityActive, PriorityDone, PriorityDropped)
	return p.err()
}

func (o *setPriorityStatus) apply(b *builder) (string, error) {
	i, err := find("priority", "pri", b.st.Priorities, o.ID)
	if err != nil {
		return "", err
	}
	pr := &b.st.Priorities[i]
	if pr.Status == o.Status {
		return "", fmt.Errorf("%s is already %s", pr.ID, pr.Status)
	}
	pr.Status, pr.UpdatedVersion = o.Status, b.version
	return pr.ID, nil
}

type addConstraint struct {
	Title     string   `json:"title"`
	Statement string   `json:"statement"`
	Evidence  []uint64 `json:"evidence_memory_ids"`
}

func (o *addConstraint) check() error {
	var p problems
	p.line("title", o.Title, MaxTitleLen)
	p.text("statement", o.Statement, MaxTextLen, false)
	p.evidence(o.Evidence, true)
	return p.err()
}

func (o *addConstraint) apply(b *builder) (string, error) {
	id, err := newID("con", "constraints", b.st.Constraints)
	if err != nil {
		return "", err
	}
	pv, err := b.provenance(id, Provenance{}, o.Evidence)
	if err != nil {
		return "", err
	}
	b.st.Constraints = append(b.st.Constraints, Constraint{ID: id, Title: o.Title, Statement: o.Statement,
		Status: ConstraintActive, Provenance: pv})
	return id, nil
}

type removeConstraint struct {
	ID       string   `json:"id"`
	Evidence []uint64 `json:"evidence_memory_ids"`
}

func (o *removeConstraint) check() error {
	var p problems
	p.id("id", o.ID)
	p.evidence(o.Evidence, false)
	return p.err()
}

func (o *removeConstraint) apply(b *builder) (string, error) {
	i, err := find("constraint", "con", b.st.Constraints, o.ID)
	if err != nil {
		return "", err
	}
	c := b.st.Constraints[i]
	if c.Status == ConstraintRemoved {
		return "", fmt.Errorf("%s is already removed", c.ID)
	}
	if c.Provenance, err = b.provenance(c.ID, c.Provenance, o.Evidence); err != nil {
		return "", err
	}
	c.Status = ConstraintRemoved
	b.st.Constraints[i] = c
	return c.ID, nil
}

type setVision struct {
	Statement string   `json:"statement"`
	Evidence  []uint64 `json:"evidence_memory_ids"`
}

func (o *setVision) check() error {
	var p problems
	p.text("statement", o.Statement, MaxTextLen, true)
	p.evidence(o.Evidence, true)
	return p.err()
}

func (o *setVision) apply(b *builder) (string, error) {
	cur := -1
	for i, v := range b.st.Vision {
		if v.Status == VisionCurrent {
			cur = i
		}
	}
	if cur >= 0 && b.st.Vision[cur].Statement == o.Statement {
		return "", fmt.Errorf("the current vision %s already says this", b.st.Vision[cur].ID)
	}
	id, err := newID("vis", "vision", b.st.Vision)
	if err != nil {
		return "", err
	}
	pv, err := b.provenance(id, Provenance{}, o.Evidence)
	if err != nil {
		return "", err
	}
	if cur >= 0 {
		old := &b.st.Vision[cur]
		old.Status, old.SupersededBy, old.UpdatedVersion = VisionSuperseded, NullString(id), b.version
	}
	b.st.Vision = append(b.st.Vision, Vision{ID: id, Statement: o.Statement, Status: VisionCurrent, Provenance: pv})
	return id, nil
}

type addVocabulary struct {
	Term       string   `json:"term"`
	Definition string   `json:"definition"`
	Evidence   []uint64 `json:"evidence_memory_ids"`
}

func (o *addVocabulary) check() error {
	var p problems
	p.line("term", o.Term, MaxNameLen)
	p.text("definition", o.Definition, MaxTextLen, true)
	p.evidence(o.Evidence, true)
	return p.err()
}

// apply defines the term, or redefines it if a term equal to it without regard to case is
// already defined (the item keeps its id and takes the new spelling and definition).
func (o *addVocabulary) apply(b *builder) (string, error) {
	for i, t := range b.st.Vocabulary {
		if !strings.EqualFold(t.Term, o.Term) {
			continue
		}
		if t.Term == o.Term && t.Definition == o.Definition {
			return "", fmt.Errorf("%s already defines %q this way", t.ID, quote(t.Term))
		}
		pv, err := b.provenance(t.ID, t.Provenance, o.Evidence)
		if err != nil {
			return "", err
		}
		b.st.Vocabulary[i] = Term{ID: t.ID, Term: o.Term, Definition: o.Definition, Provenance: pv}
		return t.ID, nil
	}
	id, err := newID("voc", "vocabulary", b.st.Vocabulary)
	if err != nil {
		return "", err
	}
	pv, err := b.provenance(id, Provenance{}, o.Evidence)
	if err != nil {
		return "", err
	}
	b.st.Vocabulary = append(b.st.Vocabulary, Term{ID: id, Term: o.Term, Definition: o.Definition, Provenance: pv})
	return id, nil
}

type setMetric struct {
	Name     string   `json:"name"`
	Value    string   `json:"value"`
	Unit     *string  `json:"unit"`
	Target   *string  `json:"target"`
	Evidence []uint64 `json:"evidence_memory_ids"`
}

func (o *setMetric) check() error {
	var p problems
	p.line("name", o.Name, MaxNameLen)
	p.line("value", o.Value, MaxValueLen)
	if o.Unit != nil {
		p.optionalLine("unit", *o.Unit, MaxUnitLen)
	}
	if o.Target != nil {
		p.optionalLine("target", *o.Target, MaxValueLen)
	}
	p.evidence(o.Evidence, true)
	return p.err()
}

// apply records the metric, or updates the metric of the same name without regard to case
// (it keeps its id; unit and target keep their values unless given, "" clears them).
func (o *setMetric) apply(b *builder) (string, error) {
	i := -1
	var m Metric
	for j, old := range b.st.Metrics {
		if strings.EqualFold(old.Name, o.Name) {
			i, m = j, old
			break
		}
	}
	if i < 0 {
		id, err := newID("met", "metrics", b.st.Metrics)
		if err != nil {
			return "", err
		}
		m.ID = id
	}
	next := Metric{ID: m.ID, Name: o.Name, Value: o.Value, Unit: m.Unit, Target: m.Target}
	if o.Unit != nil {
		next.Unit = *o.Unit
	}
	if o.Target != nil {
		next.Target = *o.Target
	}
	if i >= 0 && next.Name == m.Name && next.Value == m.Value && next.Unit == m.Unit && next.Target == m.Target {
		return "", fmt.Errorf("%s (%s) already has this value, unit and target", m.ID, quote(m.Name))
	}
	pv, err := b.provenance(m.ID, m.Provenance, o.Evidence)
	if err != nil {
		return "", err
	}
	next.Provenance = pv
	if i < 0 {
		b.st.Metrics = append(b.st.Metrics, next)
	} else {
		b.st.Metrics[i] = next
	}
	return next.ID, nil
}
