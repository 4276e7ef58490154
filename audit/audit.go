package audit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/crow-sync/crow/anchor"
	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/state"
)

// Errors.
var (
	// ErrBadCursor is returned by Run for an After that is not a Report.Next.
	ErrBadCursor = errors.New("audit: not a cursor of this audit")
	// ErrUnknownProject is returned by Run when Options.Project has neither a
	// memory nor a state version here.
	ErrUnknownProject = errors.New("audit: the project has no memory and no state version here")
)

// Options select and pace an audit.
type Options struct {
	// Project audits only this project's memories and state versions ("":
	// every project, and the numbering as a whole).
	Project string
	// After is the Report.Next of the previous page ("": start).
	After string
	// Limit caps the items (memory versions, state versions) this call
	// visits (<= 0: no cap, the whole audit). A page finishes the project
	// whose states it starts.
	Limit int
	// Progress, if set, is called as items are visited: done so far in
	// this call, and the Total of the whole audit (0 when unknown: not the
	// first page).
	Progress func(done, total uint64)
	// StateAnchors checks state versions against the chain (nil: not
	// checked; every version is skipped as unverified).
	StateAnchors StateAnchors
	// MemoryChain reads memory anchors from the chain (nil: home's anchors
	// records are compared, and an anchored memory is skipped as unverified).
	MemoryChain MemoryChain
	// ChainKind is reported as Report.Chain ("embedded", "rpc"; "" none).
	ChainKind string
}

// progressEvery is how many items pass between Progress calls.
const progressEvery = 256

// Run audits src (see the package doc). It returns an error only when the
// audit itself could not run (a read failed, ctx ended, a bad cursor, an
// unknown project); what it finds wrong is in the Report.
func Run(ctx context.Context, src Source, opts Options) (Report, error) {
	a := &auditor{src: src, opts: opts, r: newReport(opts.Project)}
	a.r.Source, a.r.Chain = src.Kind(), opts.ChainKind
	phase, cur, ok := strings.Cut(opts.After, ":")
	if opts.After == "" {
		phase = "m"
		total, err := a.total(ctx)
		if err != nil {
			return Report{}, err
		}
		if opts.Project != "" && total == 0 {
			return Report{}, fmt.Errorf("%w: %q", ErrUnknownProject, opts.Project)
		}
		a.r.Total = total
	} else if !ok || (phase != "m" && phase != "n" && phase != "s") {
		return Report{}, fmt.Errorf("%w: %q", ErrBadCursor, opts.After)
	}
	var err error
	switch phase {
	case "m":
		err = a.memories(ctx, cur)
	case "n":
		err = a.numbers(ctx)
	case "s":
		err = a.states(ctx, cur)
	}
	if err != nil {
		return Report{}, err
	}
	a.progress(true)
	return a.r, nil
}

type auditor struct {
	src  Source
	opts Options
	r    Report

	// evidence maps a number to its recorded event hash (built once per Run).
	evidence map[uint64]string
	// onChain are the anchored memories to look up on chain, by block.
	onChain map[uint64][]chainCheck
}

type chainCheck struct {
	m   Memory
	rec anchor.Record
}

func (a *auditor) total(ctx context.Context) (uint64, error) {
	m, err := a.src.CountMemories(ctx, a.opts.Project)
	if err != nil {
		return 0, fmt.Errorf("counting memories: %w", err)
	}
	s, err := a.src.CountStates(ctx, a.opts.Project)
	if err != nil {
		return 0, fmt.Errorf("counting state versions: %w", err)
	}
	return m + s, nil
}

// budget is how many items this call may still visit (<= 0: no cap).
func (a *auditor) budget() int {
	if a.opts.Limit <= 0 {
		return 0
	}
	return max(1, a.opts.Limit-int(a.r.Done))
}

func (a *auditor) spent() bool { return a.opts.Limit > 0 && a.r.Done >= uint64(a.opts.Limit) }

func (a *auditor) visited() {
	a.r.Done++
	if a.r.Done%progressEvery == 0 {
		a.progress(false)
	}
}

func (a *auditor) progress(final bool) {
	if a.opts.Progress != nil && (final || a.r.Done%progressEvery == 0) {
		a.opts.Progress(a.r.Done, a.r.Total)
	}
}

// memories audits memory versions after cursor, then goes on to the next
// phase if the budget allows.
func (a *auditor) memories(ctx context.Context, cursor string) error {
	a.onChain = map[uint64][]chainCheck{}
	next, err := a.src.Memories(ctx, a.opts.Project, cursor, a.budget(), func(m Memory) error {
		a.memory(m)
		a.visited()
		return nil
	})
	if err != nil {
		return fmt.Errorf("reading memories: %w", err)
	}
	a.chainMemories(ctx)
	if next != "" {
		a.r.Next = "m:" + next
		return nil
	}
	if a.opts.Project != "" {
		if a.spent() {
			a.r.Next = "s:"
			return nil
		}
		return a.states(ctx, "")
	}
	if a.spent() {
		a.r.Next = "n:"
		return nil
	}
	return a.numbers(ctx)
}

// memory runs the checks of one memory version.
func (a *auditor) memory(m Memory) {
	number := m.Number
	if number == 0 && m.Record != nil {
		number = m.Record.Number
	}
	fail := func(check, want, got, detail string) {
		a.r.fail(Mismatch{Check: check, MemoryID: m.ID, Number: number, Project: m.Project, Want: want, Got: got, Detail: detail})
	}
	skip := func(check, reason, detail string) {
		a.r.skip(Skip{Check: check, Reason: reason, MemoryID: m.ID, Number: number, Detail: detail})
	}
	if m.Bad != "" {
		fail(CheckContentHash, "", "", m.Bad)
		return
	}
	switch got := memory.ContentHash(m.Content); {
	case m.Forgotten:
		skip(CheckContentHash, SkipForgotten, "")
	case got != m.ContentHash:
		fail(CheckContentHash, got, m.ContentHash, "the stored content does not hash to the stored content_hash")
	default:
		a.r.ok(CheckContentHash)
	}
	if m.Row {
		return // its numbered versions carry the rest
	}
	if !a.numbering(m, fail, skip) {
		return
	}
	_, hashOK := parseHash(m.EventHash)
	switch {
	case !hashOK:
		fail(CheckEventHash, "", m.EventHash, "the recorded event hash is not 0x and 64 hex digits")
		return
	case m.Forgotten:
		a.r.ok(CheckEventHash) // only its presence can be checked
	default:
		want := memory.EventHash(m.Number, m.Project, m.ContentHash, m.CreatedAt, m.Origin)
		switch {
		case want == m.EventHash:
			a.r.ok(CheckEventHash)
		case a.src.Kind() == KindRows && m.UpdatedAt.After(m.CreatedAt):
			skip(CheckEventHash, SkipEdited, "edited after it was numbered; this store keeps no memory_versions")
		default:
			fail(CheckEventHash, want, m.EventHash, "the event record (number, project, content_hash, created_at, origin) does not hash to the recorded event hash")
		}
	}
	a.memoryAnchor(m, fail, skip)
}

// numbering checks m's number record; it reports whether m is numbered (so
// its event hash and anchor can be checked).
func (a *auditor) numbering(m Memory, fail func(check, want, got, detail string), skip func(check, reason, detail string)) bool {
	if a.src.Kind() == KindRows {
		switch {
		case m.Record == nil:
			skip(CheckNumbering, SkipUnnumbered, "")
			return false
		case m.Record.Number == 0:
			fail(CheckNumbering, "", "", "the memory_numbers record has no number")
			return false
		}
		a.r.ok(CheckNumbering)
		return true
	}
	switch {
	case m.Number == 0:
		fail(CheckNumbering, "", "", "the memory version has no number")
		return false
	case m.Record != nil && m.Record.Number == m.Number && m.Record.EventHash != m.EventHash:
		fail(CheckNumbering, m.EventHash, m.Record.EventHash, "memory_numbers names this version with another event hash")
	default:
		a.r.ok(CheckNumbering)
	}
	return true
}

// memoryAnchor compares home's anchors record of m, and queues the chain lookup.
func (a *auditor) memoryAnchor(m Memory, fail func(check, want, got, detail string), skip func(check, reason, detail string)) {
	var rec anchor.Record
	if m.Anchor != nil {
		rec = *m.Anchor
	}
	switch {
	case m.Anchor == nil || rec.Root == "" || !anchor.IsAnchored(rec.Status):
		skip(CheckMemoryAnchor, SkipPending, "")
	case !strings.EqualFold(rec.EventHash, m.EventHash):
		fail(CheckMemoryAnchor, m.EventHash, rec.EventHash, "home's anchor record names another event hash")
	case a.opts.MemoryChain == nil || rec.Block == 0:
		skip(CheckMemoryAnchor, SkipUnverified, "home's record says anchored; no chain is read here")
	default:
		a.onChain[rec.Block] = append(a.onChain[rec.Block], chainCheck{m: m, rec: rec})
	}
}

// chainMemories looks the queued memories up on chain, one log query per block.
func (a *auditor) chainMemories(ctx context.Context) {
	blocks := make([]uint64, 0, len(a.onChain))
	for b := range a.onChain {
		blocks = append(blocks, b)
	}
	slices.Sort(blocks)
	for _, b := range blocks {
		checks := a.onChain[b]
		evs, err := a.opts.MemoryChain.MemoryEventsBetween(ctx, b, b)
		seen := map[[32]byte]bool{}
		for _, e := range evs {
			seen[e.EventHash] = true
		}
		for _, c := range checks {
			number := c.m.Number
			switch h, _ := parseHash(c.m.EventHash); {
			case err != nil:
				a.r.skip(Skip{Check: CheckMemoryAnchor, Reason: SkipUnverified, MemoryID: c.m.ID, Number: number,
					Detail: fmt.Sprintf("reading block %d: %v", b, err)})
			case seen[h]:
				a.r.ok(CheckMemoryAnchor)
			default:
				a.r.fail(Mismatch{Check: CheckMemoryAnchor, MemoryID: c.m.ID, Number: number, Project: c.m.Project,
					Want: c.m.EventHash, Detail: fmt.Sprintf("block %d (tx %s) has no MemoryAnchored event with this event hash", b, c.rec.TxHash)})
			}
		}
	}
	a.onChain = nil
}

// numbers checks that every number is recorded once and 1..highest has no
// hole, then goes on to the states.
func (a *auditor) numbers(ctx context.Context) error {
	if err := a.loadEvidence(ctx, true); err != nil {
		return err
	}
	return a.states(ctx, "")
}

// loadEvidence reads every number record; with check, it reports
// duplicates and holes.
func (a *auditor) loadEvidence(ctx context.Context, check bool) error {
	if a.evidence != nil {
		return nil
	}
	ev := map[uint64]string{}
	owner := map[uint64]string{}
	var highest uint64
	err := a.src.Numbers(ctx, func(n NumberRecord) error {
		if n.Number == 0 {
			return nil // named by the memory's own numbering check
		}
		if prev, dup := owner[n.Number]; dup && check && prev != n.MemoryID {
			a.r.fail(Mismatch{Check: CheckNumbering, Number: n.Number, MemoryID: n.MemoryID,
				Detail: fmt.Sprintf("number #%d is recorded for memory %s and for memory %s", n.Number, prev, n.MemoryID)})
			return nil
		}
		owner[n.Number], ev[n.Number] = n.MemoryID, n.EventHash
		highest = max(highest, n.Number)
		return nil
	})
	if err != nil {
		return fmt.Errorf("reading memory numbers: %w", err)
	}
	if check {
		holes := 0
		for n := uint64(1); n <= highest; n++ {
			if _, ok := ev[n]; !ok {
				holes++
				a.r.fail(Mismatch{Check: CheckNumbering, Number: n, Detail: fmt.Sprintf("number #%d is missing (numbers run to #%d)", n, highest)})
			}
		}
		if holes == 0 && a.r.Check(CheckNumbering).Mismatches == 0 {
			a.r.ok(CheckNumbering) // the sequence as a whole
		}
	}
	a.evidence = ev
	return nil
}

// states audits the state versions of the projects from project on (""
// the first), whole projects at a time, until the budget is spent.
func (a *auditor) states(ctx context.Context, from string) error {
	var list []string
	if a.opts.Project != "" {
		list = []string{a.opts.Project}
	} else {
		var err error
		if list, err = a.src.StateProjects(ctx); err != nil {
			return fmt.Errorf("listing projects: %w", err)
		}
	}
	i, _ := slices.BinarySearch(list, from)
	if i < len(list) && !a.spent() {
		if err := a.loadEvidence(ctx, false); err != nil {
			return err
		}
	}
	for ; i < len(list); i++ {
		if a.spent() {
			a.r.Next = "s:" + list[i]
			return nil
		}
		if err := a.project(ctx, list[i]); err != nil {
			return err
		}
	}
	return nil
}

// project checks every state version of project, then their anchors.
func (a *auditor) project(ctx context.Context, project string) error {
	var prev *state.Version
	var prevHash string // prev's recomputed state hash
	var rows uint64
	err := a.src.StateVersions(ctx, project, func(sr StateRow) error {
		rows++
		a.version(project, sr, prev, prevHash)
		a.visited()
		if sr.Bad != "" {
			prev, prevHash = nil, ""
			return nil
		}
		v := sr.Version
		prev = &v
		prevHash, _ = state.Hash(v.State)
		return nil
	})
	if err != nil {
		return fmt.Errorf("reading the state versions of %s: %w", project, err)
	}
	if rows > 0 {
		a.stateAnchors(ctx, project)
	}
	return nil
}

// version runs the checks of one state version; prev is the version before
// it as stored (nil: none, or undecodable) and prevHash prev's recomputed hash.
func (a *auditor) version(project string, sr StateRow, prev *state.Version, prevHash string) {
	_, rowVersion, _ := splitStateRow(sr.RowID)
	v := sr.Version
	fail := func(check, item, want, got, detail string) {
		a.r.fail(Mismatch{Check: check, Project: project, Version: rowVersion, Item: item, Want: want, Got: got, Detail: detail})
	}
	if sr.Bad != "" {
		fail(CheckStateHash, "", "", "", sr.Bad)
		return
	}
	switch h, err := state.Hash(v.State); {
	case err != nil:
		fail(CheckStateHash, "", "", v.StateHash, "the state does not encode: "+err.Error())
	case h != v.StateHash:
		fail(CheckStateHash, "", h, v.StateHash, "the stored state does not hash to the stored state_hash")
	default:
		a.r.ok(CheckStateHash)
	}
	a.link(project, rowVersion, v, prev, prevHash, func(want, got, detail string) { fail(CheckStateChain, "", want, got, detail) })
	for _, it := range state.Items(v.State) {
		a.evidenceRoot(it, func(want, got, detail string) { fail(CheckEvidenceRoot, it.ID, want, got, detail) })
	}
}

// link checks that v is the version its row says and follows prev.
func (a *auditor) link(project string, rowVersion uint64, v state.Version, prev *state.Version, prevHash string, fail func(want, got, detail string)) {
	u := func(n uint64) string { return fmt.Sprint(n) }
	switch {
	case v.Project != project:
		fail(project, v.Project, "the version names another project")
	case v.Version != rowVersion || v.State.Meta.Version != rowVersion:
		fail(u(rowVersion), fmt.Sprintf("%d (state_meta.version %d)", v.Version, v.State.Meta.Version), "the row holds another version")
	case v.SchemaVersion != state.SchemaVersion:
		fail(u(state.SchemaVersion), u(uint64(v.SchemaVersion)), "unknown schema_version")
	case rowVersion == 1 && v.State.Meta.PreviousStateHash != "":
		fail("null", string(v.State.Meta.PreviousStateHash), "version 1 has a previous_state_hash")
	case rowVersion > 1 && (prev == nil || prev.Version != rowVersion-1):
		fail(u(rowVersion-1), prevVersion(prev), "the version before it is missing")
	case rowVersion > 1 && string(v.State.Meta.PreviousStateHash) != prevHash:
		fail(prevHash, string(v.State.Meta.PreviousStateHash), fmt.Sprintf("previous_state_hash is not version %d's state hash", rowVersion-1))
	case prev != nil && v.State.Meta.ConsolidatedUntilEvent < prev.State.Meta.ConsolidatedUntilEvent:
		fail(fmt.Sprintf(">= %d", prev.State.Meta.ConsolidatedUntilEvent), u(v.State.Meta.ConsolidatedUntilEvent), "consolidated_until_event went backwards")
	default:
		a.r.ok(CheckStateChain)
	}
}

func prevVersion(p *state.Version) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(p.Version)
}

// evidenceRoot recomputes one item's evidence root from the recorded event
// hashes of its evidence.
func (a *auditor) evidenceRoot(it state.ItemRef, fail func(want, got, detail string)) {
	hashes := make([][32]byte, 0, len(it.EvidenceMemoryIDs))
	var missing []string
	for _, n := range it.EvidenceMemoryIDs {
		h, ok := parseHash(a.evidence[n])
		if !ok {
			missing = append(missing, fmt.Sprintf("#%d", n))
			continue
		}
		hashes = append(hashes, h)
	}
	if len(missing) > 0 {
		fail("", it.EvidenceRoot, "cites "+strings.Join(missing, ", ")+", with no recorded event hash")
		return
	}
	if want := state.EvidenceRoot(hashes); want != it.EvidenceRoot {
		fail(want, it.EvidenceRoot, "the evidence root is not the Merkle root of its evidence's event hashes")
		return
	}
	a.r.ok(CheckEvidenceRoot)
}

// stateAnchors takes the Verifier's verdict on each version of project.
func (a *auditor) stateAnchors(ctx context.Context, project string) {
	if a.opts.StateAnchors == nil {
		return
	}
	rep, err := a.opts.StateAnchors.VerifyProject(ctx, project)
	if err != nil {
		a.r.skip(Skip{Check: CheckStateAnchor, Reason: SkipUnverified, Project: project, Detail: err.Error()})
		return
	}
	for _, c := range rep.Versions {
		switch {
		case anchor.IsAnchored(c.Status) && c.Match:
			a.r.ok(CheckStateAnchor)
		case c.Contradicted():
			a.r.fail(Mismatch{Check: CheckStateAnchor, Project: project, Version: c.Version, Want: c.Root, Got: c.StateHash,
				Detail: "the records or the chain contradict this version (" + c.Status + ")"})
		case c.Status == anchor.StatusUnverified && !c.Match:
			a.r.fail(Mismatch{Check: CheckStateAnchor, Project: project, Version: c.Version, Got: c.StateHash,
				Detail: "home's anchor record names another state hash"})
		case c.Status == anchor.StatusUnverified:
			a.r.skip(Skip{Check: CheckStateAnchor, Reason: SkipUnverified, Project: project, Version: c.Version})
		default:
			a.r.skip(Skip{Check: CheckStateAnchor, Reason: SkipPending, Project: project, Version: c.Version})
		}
	}
}
