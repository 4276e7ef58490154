package state

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Request is one consolidation: what POST /v1/project/{name}/state/ops and the MCP tool
// update_project_state carry.
type Request struct {
	// Ops are the ops to apply, in order; at most MaxOpsPerRequest.
	Ops []json.RawMessage
	// ConsolidatedUntilEvent becomes state_meta.consolidated_until_event of the new version.
	// It may not be lower than the previous version's nor above the highest memory number. A
	// caller that has no new mark passes the previous version's.
	ConsolidatedUntilEvent uint64
	// GeneratedAt is the new version's generated_at (the builder reads no clock).
	GeneratedAt time.Time
}

// Result is what Apply did with a request. Its JSON has the whole new version under
// "version"; the REST answer of SPEC §10 puts that version's number and state_hash there.
type Result struct {
	// Version is the new version to store, or nil if no op was applied (Unchanged).
	Version *Version `json:"version"`
	// Applied lists the ops that were applied, in request order.
	Applied []AppliedOp `json:"applied"`
	// Rejected lists the ops that were not, in request order, with the reason.
	Rejected []Rejection `json:"rejected"`
	// Unchanged is true when no op was applied: there is no new version, and the request's
	// consolidated_until_event is not recorded.
	Unchanged bool `json:"unchanged"`
	// AppliedCount is len(Applied).
	AppliedCount int `json:"applied_count"`
}

// AppliedOp reports one applied op.
type AppliedOp struct {
	Index int    `json:"index"` // position in Request.Ops
	Op    string `json:"op"`
	// ItemID is the item the op added or changed ("" for set_focus and set_phase; the new
	// vision item for set_vision; the superseded decision for supersede_decision).
	ItemID string `json:"item_id,omitempty"`
	// EvidenceMemoryIDs are the memories the op itself cited, ascending, de-duplicated.
	EvidenceMemoryIDs MemoryIDs `json:"evidence_memory_ids"`
	// EventHashes are their event hashes ("0x" + hex), in the same order.
	EventHashes []string `json:"event_hashes"`
}

// Rejection reports one op that was not applied.
type Rejection struct {
	Index int             `json:"index"` // position in Request.Ops
	Op    json.RawMessage `json:"op"`    // the op as received (a JSON string if it was not JSON)
	Error string          `json:"error"` // what is wrong with it
}

// Apply validates and applies req's ops, in order, on top of prev (nil for a project's first
// version), and returns the new version. It is deterministic: the same prev, project, req and
// evidence give the same result, byte for byte. It does not modify prev.
//
// Each op is checked against the grammar and then against the state built so far (which
// includes the ops applied before it in this request). An invalid op changes nothing and is
// reported in Result.Rejected; the others still apply. An op that would change nothing (a
// status it already has, the same focus) is invalid too. If no op applies, Result.Unchanged
// is true and there is no new version.
//
// The request as a whole is refused, with an error and nothing applied, when it has more than
// MaxOpsPerRequest ops (ErrTooManyOps), when ConsolidatedUntilEvent is below prev's
// (ErrUntilBackwards) or above highestNumber (ErrUntilAhead), when project is empty,
// GeneratedAt is zero or prev belongs to another project (ErrInvalidRequest), or when prev
// does not verify (ErrCorruptVersion).
func Apply(prev *Version, project string, req Request, ev Evidence, highestNumber uint64) (Result, error) {
	if err := checkRequest(prev, project, req, highestNumber); err != nil {
		return Result{}, err
	}
	b := &builder{project: project, version: 1, ev: ev, memo: map[uint64]lookup{}}
	if prev != nil {
		b.st, b.version = cloneState(prev.State), prev.Version+1
	} else {
		b.st = cloneState(State{})
	}
	res := Result{Applied: []AppliedOp{}, Rejected: []Rejection{}}
	for i, raw := range req.Ops {
		b.cited = nil
		name, o, err := decodeOp(raw)
		var id string
		if err == nil {
			id, err = o.apply(b)
		}
		if err != nil {
			res.Rejected = append(res.Rejected, Rejection{Index: i, Op: echo(raw), Error: err.Error()})
			continue
		}
		a := AppliedOp{Index: i, Op: name, ItemID: id, EvidenceMemoryIDs: MemoryIDs{}, EventHashes: []string{}}
		for _, n := range b.cited {
			h := b.memo[n].ref.EventHash
			a.EvidenceMemoryIDs = append(a.EvidenceMemoryIDs, n)
			a.EventHashes = append(a.EventHashes, hex0x(h[:]))
		}
		res.Applied = append(res.Applied, a)
	}
	res.AppliedCount = len(res.Applied)
	if res.AppliedCount == 0 {
		res.Unchanged = true
		return res, nil
	}
	b.st.Meta = Meta{Version: b.version, ConsolidatedUntilEvent: req.ConsolidatedUntilEvent}
	if prev != nil {
		b.st.Meta.PreviousStateHash = NullString(prev.StateHash)
	}
	h, err := Hash(b.st)
	if err != nil {
		return Result{}, fmt.Errorf("hashing version %d: %w", b.version, err)
	}
	res.Version = &Version{Project: project, SchemaVersion: SchemaVersion, Version: b.version, StateHash: h,
		GeneratedAt: req.GeneratedAt.UTC(), State: b.st}
	return res, nil
}

func checkRequest(prev *Version, project string, req Request, highestNumber uint64) error {
	var until uint64
	if prev != nil {
		until = prev.State.Meta.ConsolidatedUntilEvent
	}
	switch {
	case len(req.Ops) > MaxOpsPerRequest:
		return fmt.Errorf("%w: %d ops; at most %d per request", ErrTooManyOps, len(req.Ops), MaxOpsPerRequest)
	case project == "":
		return fmt.Errorf("%w: no project", ErrInvalidRequest)
	case req.GeneratedAt.IsZero():
		return fmt.Errorf("%w: no generated_at", ErrInvalidRequest)
	case prev != nil && prev.Project != project:
		return fmt.Errorf("%w: the previous version is of project %q, not %q", ErrInvalidRequest, prev.Project, project)
	case req.ConsolidatedUntilEvent < until:
		return fmt.Errorf("%w: %d is below %d, the mark of version %d", ErrUntilBackwards, req.ConsolidatedUntilEvent, until, prev.Version)
	case req.ConsolidatedUntilEvent > highestNumber:
		return fmt.Errorf("%w: %d is above %d, the highest memory number", ErrUntilAhead, req.ConsolidatedUntilEvent, highestNumber)
	case req.ConsolidatedUntilEvent > maxMemoryNumber:
		return fmt.Errorf("%w: %d is above 2^53-1", ErrUntilAhead, req.ConsolidatedUntilEvent)
	}
	if prev != nil {
		if err := Verify(*prev); err != nil {
			return fmt.Errorf("checking the previous version: %w", err)
		}
	}
	return nil
}

// builder is the state being built by one Apply call.
type builder struct {
	st      State
	version uint64 // the version being built: created_version/updated_version of what changes
	project string
	ev      Evidence
	memo    map[uint64]lookup // Evidence answers, so each number is looked up once
	cited   []uint64          // the current op's citations, ascending (set by provenance)
}

type lookup struct {
	ref   MemoryRef
	found bool
}

// memory looks up memory n and says why it cannot be cited, or "" if it can.
func (b *builder) memory(n uint64) (MemoryRef, string) {
	l, ok := b.memo[n]
	if !ok {
		if b.ev != nil {
			l.ref, l.found = b.ev.Lookup(n)
		}
		b.memo[n] = l
	}
	switch {
	case !l.found:
		return l.ref, fmt.Sprintf("memory #%d does not exist", n)
	case l.ref.Project != b.project:
		return l.ref, fmt.Sprintf("memory #%d belongs to project %q, not %q", n, quote(l.ref.Project), b.project)
	case !l.ref.HasEventHash:
		return l.ref, fmt.Sprintf("memory #%d has no event hash yet (home has not numbered it); cite it once it has", n)
	}
	return l.ref, ""
}

// provenance returns old (the provenance of item owner; zero for a new item) touched by this
// version, with the memories ids added to its evidence and the evidence root recomputed. Every
// cited memory must be citable; so must the item's earlier evidence if the root changes. It
// records the op's citations in b.cited. It never modifies old's slices.
func (b *builder) provenance(owner string, old Provenance, ids []uint64) (Provenance, error) {
	cited := slices.Compact(slices.Sorted(slices.Values(ids)))
	var p problems
	for _, n := range cited {
		if _, why := b.memory(n); why != "" {
			p.add("%s", why)
		}
	}
	if err := p.err(); err != nil {
		return Provenance{}, err
	}
	pv := old
	if pv.CreatedVersion == 0 {
		pv.CreatedVersion = b.version
	}
	pv.UpdatedVersion = b.version
	all := union(old.EvidenceMemoryIDs, cited)
	if len(all) > MaxEvidencePerItem {
		return Provenance{}, fmt.Errorf("%s would cite %d memories; an item cites at most %d", owner, len(all), MaxEvidencePerItem)
	}
	if len(all) > len(old.EvidenceMemoryIDs) {
		hashes := make([][32]byte, len(all))
		for i, n := range all {
			ref, why := b.memory(n)
			if why != "" {
				p.add("%s (it is evidence of %s)", why, owner)
			}
			hashes[i] = ref.EventHash
		}
		if err := p.err(); err != nil {
			return Provenance{}, err
		}
		pv.EvidenceMemoryIDs, pv.EvidenceRoot = all, EvidenceRoot(hashes)
	}
	b.cited = cited
	return pv, nil
}

// union merges two ascending, duplicate-free lists into a new one.
func union(a, b []uint64) MemoryIDs {
	out := make(MemoryIDs, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && a[i] < b[j]):
			out = append(out, a[i])
			i++
		case i == len(a) || b[j] < a[i]:
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i, j = i+1, j+1
		}
	}
	return out
}

// identified is an item with an id.
type identified interface{ itemID() string }

func (d Decision) itemID() string     { return d.ID }
func (m Milestone) itemID() string    { return m.ID }
func (r Risk) itemID() string         { return r.ID }
func (a Assumption) itemID() string   { return a.ID }
func (q OpenQuestion) itemID() string { return q.ID }
func (p Priority) itemID() string     { return p.ID }
func (c Constraint) itemID() string   { return c.ID }

// find returns the index of the item with that id in list.
func find[T identified](kind, prefix string, list []T, id string) (int, error) {
	if !strings.HasPrefix(id, prefix+"_") {
		return 0, fmt.Errorf("%q is not a %s id (those look like %s_0001)", quote(id), kind, prefix)
	}
	for i := range list {
		if list[i].itemID() == id {
			return i, nil
		}
	}
	return 0, fmt.Errorf("%s %s does not exist", kind, id)
}

// newID returns the id of the next item of a list, or an error if the list is full.
func newID[T any](prefix, list string, items []T) (string, error) {
	if len(items) >= MaxItemsPerList {
		return "", fmt.Errorf("%s already holds %d items, the most a state can hold", list, len(items))
	}
	return fmt.Sprintf("%s_%04d", prefix, len(items)+1), nil
}

// cloneState copies s's lists so that the builder can change them without touching s. Items'
// evidence slices are shared: the builder replaces them, never writes into them.
func cloneState(s State) State {
	s.Decisions = cloneList(s.Decisions)
	s.Milestones = cloneList(s.Milestones)
	s.Risks = cloneList(s.Risks)
	s.Assumptions = cloneList(s.Assumptions)
	s.OpenQuestions = cloneList(s.OpenQuestions)
	s.Priorities = cloneList(s.Priorities)
	s.Constraints = cloneList(s.Constraints)
	s.Vision = cloneList(s.Vision)
	s.Vocabulary = cloneList(s.Vocabulary)
	s.Metrics = cloneList(s.Metrics)
	return s
}

func cloneList[T any](s []T) []T { return append(make([]T, 0, len(s)), s...) }

// echo returns a rejected op as it came, or as a JSON string if it is not JSON (cut short if
// long), so that a Rejection always encodes.
func echo(raw json.RawMessage) json.RawMessage {
	if json.Valid(raw) && len(raw) <= MaxOpBytes {
		return slices.Clone(raw)
	}
	b, _ := json.Marshal(quote(string(raw)))
	return b
}
