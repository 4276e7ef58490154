package state

import "fmt"

// The core ops (SPEC §10). Their fields are fixed by the spec.

// Statuses.
const (
	DecisionProposed   = "proposed"
	DecisionConfirmed  = "confirmed"
	DecisionRejected   = "rejected"
	DecisionSuperseded = "superseded"

	MilestonePlanned    = "planned"
	MilestoneInProgress = "in_progress"
	MilestoneDone       = "done"

	RiskOpen      = "open"
	RiskMitigated = "mitigated"
	RiskClosed    = "closed"
	RiskAccepted  = "accepted"

	SeverityLow  = "low"
	SeverityMed  = "med"
	SeverityHigh = "high"
)

type addDecision struct {
	Title     string   `json:"title"`
	Statement string   `json:"statement"`
	Evidence  []uint64 `json:"evidence_memory_ids"`
}

func (o *addDecision) check() error {
	var p problems
	p.line("title", o.Title, MaxTitleLen)
	p.text("statement", o.Statement, MaxTextLen, true)
	p.evidence(o.Evidence, true)
	return p.err()
}

func (o *addDecision) apply(b *builder) (string, error) {
	id, err := newID("dec", "decisions", b.st.Decisions)
	if err != nil {
		return "", err
	}
	pv, err := b.provenance(id, Provenance{}, o.Evidence)
	if err != nil {
		return "", err
	}
	b.st.Decisions = append(b.st.Decisions, Decision{ID: id, Title: o.Title, Statement: o.Statement,
		Status: DecisionProposed, Provenance: pv})
	return id, nil
}

type setDecisionStatus struct {
	ID       string   `json:"id"`
	Status   string   `json:"status"`
	Evidence []uint64 `json:"evidence_memory_ids"`
}

func (o *setDecisionStatus) check() error {
	var p problems
	p.id("id", o.ID)
	p.enum("status", o.Status, DecisionConfirmed, DecisionRejected)
	p.evidence(o.Evidence, false)
	return p.err()
}

func (o *setDecisionStatus) apply(b *builder) (string, error) {
	i, err := find("decision", "dec", b.st.Decisions, o.ID)
	if err != nil {
		return "", err
	}
	d := b.st.Decisions[i]
	switch d.Status {
	case DecisionSuperseded:
		return "", fmt.Errorf("%s is superseded by %s; its status can no longer change", d.ID, d.SupersededBy)
	case o.Status:
		return "", fmt.Errorf("%s is already %s", d.ID, d.Status)
	}
	if d.Provenance, err = b.provenance(d.ID, d.Provenance, o.Evidence); err != nil {
		return "", err
	}
	d.Status = o.Status
	b.st.Decisions[i] = d
	return d.ID, nil
}

type supersedeDecision struct {
	ID       string   `json:"id"`
	ByID     string   `json:"by_id"`
	Evidence []uint64 `json:"evidence_memory_ids"`
}

func (o *supersedeDecision) check() error {
	var p problems
	p.id("id", o.ID)
	p.id("by_id", o.ByID)
	if o.ID != "" && o.ID == o.ByID {
		p.add("a decision cannot supersede itself (id and by_id are both %s)", quote(o.ID))
	}
	p.evidence(o.Evidence, false)
	return p.err()
}

func (o *supersedeDecision) apply(b *builder) (string, error) {
	i, err := find("decision", "dec", b.st.Decisions, o.ID)
	if err != nil {
		return "", err
	}
	j, err := find("decision", "dec", b.st.Decisions, o.ByID)
	if err != nil {
		return "", fmt.Errorf("by_id: %w", err)
	}
	old, by := b.st.Decisions[i], b.st.Decisions[j]
	if old.Status == DecisionSuperseded {
		return "", fmt.Errorf("%s is already superseded by %s", old.ID, old.SupersededBy)
	}
	if by.Status == DecisionSuperseded {
		return "", fmt.Errorf("%s is itself superseded by %s; supersede %s by a current decision", by.ID, by.SupersededBy, old.ID)
	}
	if old.Provenance, err = b.provenance(old.ID, old.Provenance, o.Evidence); err != nil {
		return "", err
	}
	old.Status, old.SupersededBy = DecisionSuperseded, NullString(by.ID)
	b.st.Decisions[i] = old
	return old.ID, nil
}

type addMilestone struct {
	Title    string   `json:"title"`
	Status   *string  `json:"status"`
	Evidence []uint64 `json:"evidence_memory_ids"`
}

func (o *addMilestone) check() error {
	var p problems
	p.line("title", o.Title, MaxTitleLen)
	if o.Status != nil {
		p.enum("status", *o.Status, MilestonePlanned, MilestoneInProgress, MilestoneDone)
	}
	p.evidence(o.Evidence, true)
	return p.err()
}

func (o *addMilestone) apply(b *builder) (string, error) {
	id, err := newID("mil", "milestones", b.st.Milestones)
	if err != nil {
		return "", err
	}
	pv, err := b.provenance(id, Provenance{}, o.Evidence)
	if err != nil {
		return "", err
	}
	status := MilestonePlanned
	if o.Status != nil {
		status = *o.Status
	}
	b.st.Milestones = append(b.st.Milestones, Milestone{ID: id, Title: o.Title, Status: status, Provenance: pv})
	return id, nil
}

type setMilestoneStatus struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

func (o *setMilestoneStatus) check() error {
	var p problems
	p.id("id", o.ID)
	p.enum("status", o.Status, MilestonePlanned, MilestoneInProgress, MilestoneDone)
	return p.err()
}

func (o *setMilestoneStatus) apply(b *builder) (string, error) {
	i, err := find("milestone", "mil", b.st.Milestones, o.ID)
	if err != nil {
		return "", err
	}
	m := &b.st.Milestones[i]
	if m.Status == o.Status {
		return "", fmt.Errorf("%s is already %s", m.ID, m.Status)
	}
	m.Status, m.UpdatedVersion = o.Status, b.version
	return m.ID, nil
}

type addRisk struct {
	Title    string   `json:"title"`
	Severity string   `json:"severity"`
	Evidence []uint64 `json:"evidence_memory_ids"`
}

func (o *addRisk) check() error {
	var p problems
	p.line("title", o.Title, MaxTitleLen)
	p.enum("severity", o.Severity, SeverityLow, SeverityMed, SeverityHigh)
	p.evidence(o.Evidence, true)
	return p.err()
}

func (o *addRisk) apply(b *builder) (string, error) {
	id, err := newID("risk", "risks", b.st.Risks)
	if err != nil {
		return "", err
	}
	pv, err := b.provenance(id, Provenance{}, o.Evidence)
	if err != nil {
		return "", err
	}
	b.st.Risks = append(b.st.Risks, Risk{ID: id, Title: o.Title, Severity: o.Severity, Status: RiskOpen, Provenance: pv})
	return id, nil
}

type setRiskStatus struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

func (o *setRiskStatus) check() error {
	var p problems
	p.id("id", o.ID)
	p.enum("status", o.Status, RiskOpen, RiskMitigated, RiskClosed, RiskAccepted)
	return p.err()
}

func (o *setRiskStatus) apply(b *builder) (string, error) {
	i, err := find("risk", "risk", b.st.Risks, o.ID)
	if err != nil {
		return "", err
	}
	r := &b.st.Risks[i]
	if r.Status == o.Status {
		return "", fmt.Errorf("%s is already %s", r.ID, r.Status)
	}
	r.Status, r.UpdatedVersion = o.Status, b.version
	return r.ID, nil
}

type setFocus struct {
	Focus string `json:"focus"`
}

func (o *setFocus) check() error {
	var p problems
	p.line("focus", o.Focus, MaxFocusLen)
	return p.err()
}

func (o *setFocus) apply(b *builder) (string, error) {
	if b.st.CurrentFocus == o.Focus {
		return "", fmt.Errorf("current_focus is already %q", quote(o.Focus))
	}
	b.st.CurrentFocus = o.Focus
	return "", nil
}

type setPhase struct {
	Phase string `json:"phase"`
}

func (o *setPhase) check() error {
	var p problems
	p.line("phase", o.Phase, MaxPhaseLen)
	return p.err()
}

func (o *setPhase) apply(b *builder) (string, error) {
	if b.st.Phase == o.Phase {
		return "", fmt.Errorf("phase is already %q", quote(o.Phase))
	}
	b.st.Phase = o.Phase
	return "", nil
}
