package state

import (
	"encoding/json"
	"time"
)

// SchemaVersion is the Project State schema version this package builds and hashes.
const SchemaVersion = 2

// Version is one stored version of a project's state: what the home instance writes to the
// state_versions table and what GET /v1/project/{name}/state returns (plus the anchor, which is
// not part of the version). Only State is hashed; Project, SchemaVersion, Version and
// GeneratedAt sit beside it. The JSON field names are frozen with schema version 2.
type Version struct {
	Project       string    `json:"project"`
	SchemaVersion int       `json:"schema_version"`
	Version       uint64    `json:"version"` // = State.Meta.Version
	StateHash     string    `json:"state_hash"`
	GeneratedAt   time.Time `json:"generated_at"` // Request.GeneratedAt in UTC; not hashed
	State         State     `json:"state"`
}

// State is the hashed Project State (schema version 2). Items are never removed: a list only
// grows, in creation order, and an item's status records what became of it. Every list
// encodes as [] when empty, never null. Field meanings are in the package doc.
type State struct {
	Phase         string         `json:"phase"`         // "" until set_phase
	CurrentFocus  string         `json:"current_focus"` // "" until set_focus
	Decisions     []Decision     `json:"decisions"`
	Milestones    []Milestone    `json:"milestones"`
	Risks         []Risk         `json:"risks"`
	Assumptions   []Assumption   `json:"assumptions"`
	OpenQuestions []OpenQuestion `json:"open_questions"`
	Priorities    []Priority     `json:"priorities"`
	Constraints   []Constraint   `json:"constraints"`
	Vision        []Vision       `json:"vision"`
	Vocabulary    []Term         `json:"vocabulary"`
	Metrics       []Metric       `json:"metrics"`
	Meta          Meta           `json:"state_meta"`
}

// MarshalJSON encodes nil lists as [] so that a State has one JSON form.
func (s State) MarshalJSON() ([]byte, error) {
	type plain State // without this method
	p := plain(s)
	p.Decisions = orEmpty(p.Decisions)
	p.Milestones = orEmpty(p.Milestones)
	p.Risks = orEmpty(p.Risks)
	p.Assumptions = orEmpty(p.Assumptions)
	p.OpenQuestions = orEmpty(p.OpenQuestions)
	p.Priorities = orEmpty(p.Priorities)
	p.Constraints = orEmpty(p.Constraints)
	p.Vision = orEmpty(p.Vision)
	p.Vocabulary = orEmpty(p.Vocabulary)
	p.Metrics = orEmpty(p.Metrics)
	return json.Marshal(p)
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Meta is state_meta: where this version sits in the project's chain.
type Meta struct {
	Version uint64 `json:"version"`
	// ConsolidatedUntilEvent is the highest memory number the consolidating client says it
	// reviewed. It never decreases along the chain.
	ConsolidatedUntilEvent uint64 `json:"consolidated_until_event"`
	// PreviousStateHash is the state_hash of version Version-1; null for version 1.
	PreviousStateHash NullString `json:"previous_state_hash"`
}

// Provenance is carried by every item: the memories that justify it and the versions that
// created and last changed it. Its fields are flattened into the item's JSON object.
type Provenance struct {
	// EvidenceMemoryIDs are memory numbers, ascending, without duplicates; never empty for
	// an item built by Apply. They only grow: later ops add their evidence to the item's.
	EvidenceMemoryIDs MemoryIDs `json:"evidence_memory_ids"`
	// EvidenceRoot is the Merkle root of the event hashes of EvidenceMemoryIDs ("0x" + hex).
	EvidenceRoot   string `json:"evidence_root"`
	CreatedVersion uint64 `json:"created_version"`
	UpdatedVersion uint64 `json:"updated_version"`
}

// Decision is an item of decisions (id dec_0001…). Status is proposed, confirmed, rejected or
// superseded; SupersededBy names the decision that replaced it (null until then).
type Decision struct {
	ID           string     `json:"id"`
	Title        string     `json:"title"`
	Statement    string     `json:"statement"`
	Status       string     `json:"status"`
	SupersededBy NullString `json:"superseded_by"`
	Provenance
}

// Milestone is an item of milestones (id mil_0001…). Status is planned, in_progress or done.
type Milestone struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	Status string `json:"status"`
	Provenance
}

// Risk is an item of risks (id risk_0001…). Severity is low, med or high; status is open,
// mitigated, closed or accepted.
type Risk struct {
	ID       string `json:"id"`
	Title    string `json:"title"`
	Severity string `json:"severity"`
	Status   string `json:"status"`
	Provenance
}

// Assumption is an item of assumptions (id asm_0001…): something the project relies on
// without having verified it. Status is holding or invalidated; Statement may be "".
type Assumption struct {
	ID        string `json:"id"`
	Title     string `json:"title"`
	Statement string `json:"statement"`
	Status    string `json:"status"`
	Provenance
}

// OpenQuestion is an item of open_questions (id oq_0001…). Title is the question; status is
// open or answered; Answer is null until answered.
type OpenQuestion struct {
	ID     string     `json:"id"`
	Title  string     `json:"title"`
	Status string     `json:"status"`
	Answer NullString `json:"answer"`
	Provenance
}

// Priority is an item of priorities (id pri_0001…). Rank orders priorities (1 = most
// important; ties allowed); status is active, done or dropped.
type Priority struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	Rank   int    `json:"rank"`
	Status string `json:"status"`
	Provenance
}

// Constraint is an item of constraints (id con_0001…): a limit the project must respect
// (budget, regulation, platform). Status is active or removed; Statement may be "".
type Constraint struct {
	ID        string `json:"id"`
	Title     string `json:"title"`
	Statement string `json:"statement"`
	Status    string `json:"status"`
	Provenance
}

// Vision is an item of vision (id vis_0001…). At most one is current; set_vision adds a new
// current one and marks the previous one superseded, with SupersededBy naming the new one.
type Vision struct {
	ID           string     `json:"id"`
	Statement    string     `json:"statement"`
	Status       string     `json:"status"`
	SupersededBy NullString `json:"superseded_by"`
	Provenance
}

// Term is an item of vocabulary (id voc_0001…): a project-specific term and its definition.
// Terms are unique, compared without regard to case.
type Term struct {
	ID         string `json:"id"`
	Term       string `json:"term"`
	Definition string `json:"definition"`
	Provenance
}

// Metric is an item of metrics (id met_0001…): a named, measured value. Names are unique,
// compared without regard to case. Value, Unit and Target are text ("42", "p99 < 200"); Unit
// and Target may be "".
type Metric struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Value  string `json:"value"`
	Unit   string `json:"unit"`
	Target string `json:"target"`
	Provenance
}

// NullString is a string that encodes as JSON null when empty (superseded_by, answer,
// previous_state_hash). null and "" decode to "".
type NullString string

// MarshalJSON encodes "" as null.
func (n NullString) MarshalJSON() ([]byte, error) {
	if n == "" {
		return []byte("null"), nil
	}
	return json.Marshal(string(n))
}

// MemoryIDs is a list of memory numbers; it encodes as [] when nil.
type MemoryIDs []uint64

// MarshalJSON encodes nil as [].
func (m MemoryIDs) MarshalJSON() ([]byte, error) {
	if m == nil {
		return []byte("[]"), nil
	}
	return json.Marshal([]uint64(m))
}
