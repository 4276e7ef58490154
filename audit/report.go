package audit

import (
	"fmt"
	"strings"
)

// Check names, in the order of Report.Checks.
const (
	CheckContentHash  = "content_hash"
	CheckEventHash    = "event_hash"
	CheckNumbering    = "numbering"
	CheckMemoryAnchor = "memory_anchor"
	CheckEvidenceRoot = "evidence_root"
	CheckStateHash    = "state_hash"
	CheckStateChain   = "state_chain"
	CheckStateAnchor  = "state_anchor"
)

var checkOrder = []string{CheckContentHash, CheckEventHash, CheckNumbering, CheckMemoryAnchor,
	CheckEvidenceRoot, CheckStateHash, CheckStateChain, CheckStateAnchor}

// Skip reasons.
const (
	SkipPending    = "pending"    // not anchored yet
	SkipUnverified = "unverified" // anchored by home's record; no chain read here
	SkipForgotten  = "forgotten"  // content erased: only the number and event hash remain
	SkipEdited     = "edited"     // edited after numbering; no memory_versions table keeps the numbered version
	SkipUnnumbered = "unnumbered" // home has not numbered it yet
)

// Caps on the lists of one Report; the counts are always complete.
const (
	MaxMismatches = 1000
	MaxSkips      = 100
)

// Report is the answer of an audit (or of one page of it). JSON field names
// are part of the REST API (GET /v1/audit).
type Report struct {
	Project string `json:"project,omitempty"` // "" audits every project
	// Source says what was audited: "memory_versions" or "memories".
	Source string `json:"source"`
	// Chain says whether anchors were read from a chain ("embedded" or "rpc"),
	// or "" when only home's replicated records were compared.
	Chain  string  `json:"chain"`
	Checks []Check `json:"checks"`
	// Mismatches lists the failures (at most MaxMismatches; MismatchesOmitted
	// counts the rest).
	Mismatches        []Mismatch `json:"mismatches"`
	MismatchesOmitted uint64     `json:"mismatches_omitted,omitempty"`
	// Skipped lists items not checked (at most MaxSkips; SkippedOmitted
	// counts the rest). Not a failure.
	Skipped        []Skip `json:"skipped"`
	SkippedOmitted uint64 `json:"skipped_omitted,omitempty"`
	// OK: no mismatch.
	OK bool `json:"ok"`
	// Done is how many items (memory versions and state versions) this
	// report covers; Total, on a first page (no cursor), how many the whole
	// audit visits (0 on later pages).
	Done  uint64 `json:"done"`
	Total uint64 `json:"total"`
	// Next is the cursor of the next page; "" when the audit is complete.
	Next string `json:"next"`
}

// Check counts one check: Checked = OK + Mismatches + Skipped.
type Check struct {
	Name       string `json:"name"`
	Checked    uint64 `json:"checked"`
	OK         uint64 `json:"ok"`
	Mismatches uint64 `json:"mismatches"`
	Skipped    uint64 `json:"skipped"`
}

// Mismatch is one failed check: what it is about, and Want (recomputed, or
// read from the chain) against Got (stored).
type Mismatch struct {
	Check    string `json:"check"`
	MemoryID string `json:"memory_id,omitempty"`
	Number   uint64 `json:"number,omitempty"`
	Project  string `json:"project,omitempty"`
	Version  uint64 `json:"version,omitempty"`
	Item     string `json:"item,omitempty"` // a state item id (evidence_root)
	Want     string `json:"want"`
	Got      string `json:"got"`
	Detail   string `json:"detail"`
}

// Subject names what the mismatch or skip is about, for people.
func subject(memoryID string, number uint64, project string, version uint64, item string) string {
	var parts []string
	if memoryID != "" {
		parts = append(parts, "memory "+memoryID)
	}
	if number != 0 {
		parts = append(parts, fmt.Sprintf("#%d", number))
	}
	if project != "" && memoryID == "" {
		parts = append(parts, "project "+project)
	}
	if version != 0 {
		parts = append(parts, fmt.Sprintf("v%d", version))
	}
	if item != "" {
		parts = append(parts, item)
	}
	return strings.Join(parts, " ")
}

// String is the mismatch on one line.
func (m Mismatch) String() string {
	s := fmt.Sprintf("%s: %s: %s", m.Check, subject(m.MemoryID, m.Number, m.Project, m.Version, m.Item), m.Detail)
	if m.Want != "" || m.Got != "" {
		s += fmt.Sprintf(" (want %s, got %s)", orNone(m.Want), orNone(m.Got))
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return `""`
	}
	return s
}

// Skip is an item a check could not verify (see the package doc).
type Skip struct {
	Check    string `json:"check"`
	Reason   string `json:"reason"`
	MemoryID string `json:"memory_id,omitempty"`
	Number   uint64 `json:"number,omitempty"`
	Project  string `json:"project,omitempty"`
	Version  uint64 `json:"version,omitempty"`
	Detail   string `json:"detail,omitempty"`
}

// String is the skip on one line.
func (s Skip) String() string {
	out := fmt.Sprintf("%s: %s: %s", s.Check, subject(s.MemoryID, s.Number, s.Project, s.Version, ""), s.Reason)
	if s.Detail != "" {
		out += " (" + s.Detail + ")"
	}
	return out
}

func newReport(project string) Report {
	r := Report{Project: project, Mismatches: []Mismatch{}, Skipped: []Skip{}, OK: true}
	for _, n := range checkOrder {
		r.Checks = append(r.Checks, Check{Name: n})
	}
	return r
}

// Check returns the counts of the named check.
func (r *Report) Check(name string) Check {
	for _, c := range r.Checks {
		if c.Name == name {
			return c
		}
	}
	return Check{Name: name}
}

func (r *Report) counts(name string) *Check {
	for i := range r.Checks {
		if r.Checks[i].Name == name {
			return &r.Checks[i]
		}
	}
	r.Checks = append(r.Checks, Check{Name: name})
	return &r.Checks[len(r.Checks)-1]
}

func (r *Report) ok(check string) {
	c := r.counts(check)
	c.Checked++
	c.OK++
}

func (r *Report) fail(m Mismatch) {
	c := r.counts(m.Check)
	c.Checked++
	c.Mismatches++
	r.OK = false
	if len(r.Mismatches) < MaxMismatches {
		r.Mismatches = append(r.Mismatches, m)
	} else {
		r.MismatchesOmitted++
	}
}

func (r *Report) skip(s Skip) {
	c := r.counts(s.Check)
	c.Checked++
	c.Skipped++
	if len(r.Skipped) < MaxSkips {
		r.Skipped = append(r.Skipped, s)
	} else {
		r.SkippedOmitted++
	}
}

// Add folds page, the report of the next page, into r: counts summed, lists
// appended up to their caps, Next and Chain taken from page.
func (r *Report) Add(page Report) {
	if r.Checks == nil {
		*r = newReport(page.Project)
		r.Total = page.Total
	}
	for _, c := range page.Checks {
		rc := r.counts(c.Name)
		rc.Checked += c.Checked
		rc.OK += c.OK
		rc.Mismatches += c.Mismatches
		rc.Skipped += c.Skipped
	}
	for _, m := range page.Mismatches {
		if len(r.Mismatches) < MaxMismatches {
			r.Mismatches = append(r.Mismatches, m)
		} else {
			r.MismatchesOmitted++
		}
	}
	r.MismatchesOmitted += page.MismatchesOmitted
	for _, s := range page.Skipped {
		if len(r.Skipped) < MaxSkips {
			r.Skipped = append(r.Skipped, s)
		} else {
			r.SkippedOmitted++
		}
	}
	r.SkippedOmitted += page.SkippedOmitted
	r.OK = r.OK && page.OK
	r.Done += page.Done
	r.Next = page.Next
	r.Source = page.Source
	if page.Chain != "" {
		r.Chain = page.Chain
	}
}

// MismatchCount is the number of mismatches over every check (the list in
// Mismatches may be capped; the counts are not).
func (r *Report) MismatchCount() uint64 {
	var n uint64
	for _, c := range r.Checks {
		n += c.Mismatches
	}
	return n
}
