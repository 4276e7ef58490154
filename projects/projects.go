// Package projects keeps each project's Project State versions (SPEC §10):
// it consolidates on the home instance (package state's deterministic
// builder over the memories home has numbered), stores every version in the
// home-written, synced state_versions table, and reads the newest version on
// any instance (versions replicate read-only everywhere).
//
// # The caller's contract
//
//   - Consolidate runs only on home (Service built with Home true); elsewhere
//     it returns ErrNotHome. ConsolidateOnHome is the callers' entry: on home
//     it consolidates, elsewhere it forwards the request to home through a
//     Forwarder (package federation's), and never forwards a peer's call.
//   - The project list (List) and project creation (Create) live here with
//     their limits; LatestWithAnchor joins the newest version with home's
//     anchoring record (package anchor's Records).
//   - Consolidations of one project are serialized by the Service; a version
//     is written with an insert (never overwritten), so versions are
//     append-only even if two processes raced.
//   - Rows: state_versions/<project>/<version, 20 digits> → the state.Version
//     JSON. The newest version of P is the last row id of that form.
package projects

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/state"
	"github.com/crow-sync/crow/store"
)

// Errors.
var (
	// ErrNotHome: consolidation happens on the home instance only.
	ErrNotHome = errors.New("only the home instance consolidates project state")
	// ErrNoState: the project has no state version yet.
	ErrNoState = errors.New("projects: no state version yet")
	// ErrInvalid: the request is wrong as a whole (the message says how).
	ErrInvalid = errors.New("projects: invalid request")
)

// Service reads and writes Project State versions. Safe for concurrent use.
type Service struct {
	db   *store.DB
	w    *store.Writer
	home bool
	now  func() time.Time // the store's clock (store.Options.Clock)

	mu    sync.Mutex
	locks map[string]*sync.Mutex // per project
}

// New returns the service; home says whether this instance consolidates.
// It stamps generated_at from db's clock.
func New(db *store.DB, w *store.Writer, home bool) *Service {
	return &Service{db: db, w: w, home: home, now: db.Now, locks: map[string]*sync.Mutex{}}
}

const versionDigits = 20

func rowID(project string, version uint64) string {
	return fmt.Sprintf("%s/%0*d", project, versionDigits, version)
}

// isRowOf reports whether id is a version row of project.
func isRowOf(id, project string) bool {
	rest, ok := strings.CutPrefix(id, project+"/")
	if !ok || len(rest) != versionDigits {
		return false
	}
	_, err := strconv.ParseUint(rest, 10, 64)
	return err == nil
}

// ValidProject checks a project name as the memories' project field is checked.
func ValidProject(name string) error {
	if name == "" || len(name) > 128 || strings.TrimSpace(name) != name || strings.ContainsAny(name, "\x00\n\r\t") {
		return fmt.Errorf("%w: project name %q must be 1-128 characters without control characters or surrounding spaces", ErrInvalid, name)
	}
	return nil
}

// Latest returns project's newest version, or ErrNoState.
func (s *Service) Latest(project string) (*state.Version, error) {
	if err := ValidProject(project); err != nil {
		return nil, err
	}
	// Only the rows under "<project>/" are read, newest first; the filter
	// skips those of its sub-projects ("<project>/<sub>/…").
	rows, err := s.db.LastRows(store.TableStateVersions, project+"/", 1,
		func(r *store.Row) bool { return isRowOf(r.RowID, project) })
	if err != nil {
		return nil, fmt.Errorf("reading the state of %s: %w", project, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("project %q: %w", project, ErrNoState)
	}
	var v state.Version
	if err := json.Unmarshal(rows[0].Data, &v); err != nil {
		return nil, fmt.Errorf("decoding the state of %s: %w", project, err)
	}
	return &v, nil
}

// Version returns version n of project, or ErrNoState.
func (s *Service) Version(project string, n uint64) (*state.Version, error) {
	if err := ValidProject(project); err != nil {
		return nil, err
	}
	r, err := s.db.Get(store.TableStateVersions, rowID(project, n))
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("project %q version %d: %w", project, n, ErrNoState)
	}
	if err != nil {
		return nil, err
	}
	var v state.Version
	if err := json.Unmarshal(r.Data, &v); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", r.RowID, err)
	}
	return &v, nil
}

// Request is a consolidation as REST and MCP carry it.
type Request struct {
	Ops []json.RawMessage `json:"ops"`
	// ConsolidatedUntilEvent is the highest memory number the client
	// reviewed; absent keeps the previous version's mark.
	ConsolidatedUntilEvent *uint64 `json:"consolidated_until_event,omitempty"`
}

// Response is the answer of a consolidation (SPEC §10).
type Response struct {
	Project      string            `json:"project"`
	Version      uint64            `json:"version"` // the new version, or the current one when unchanged (0: none)
	StateHash    string            `json:"state_hash"`
	Unchanged    bool              `json:"unchanged"`
	AppliedCount int               `json:"applied_count"`
	Applied      []state.AppliedOp `json:"applied"`
	Rejected     []state.Rejection `json:"rejected"`
}

func (s *Service) lock(project string) func() {
	s.mu.Lock()
	l := s.locks[project]
	if l == nil {
		l = &sync.Mutex{}
		s.locks[project] = l
	}
	s.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// Consolidate applies req to project's newest version and stores the new
// version, if any op applied. ErrNotHome off home; a request error (too
// many ops, a mark going backwards or past the highest memory number)
// wraps ErrInvalid; invalid ops are reported in Response.Rejected.
func (s *Service) Consolidate(ctx context.Context, project string, req Request) (Response, error) {
	if !s.home {
		return Response{}, ErrNotHome
	}
	if err := ValidProject(project); err != nil {
		return Response{}, err
	}
	if len(req.Ops) == 0 {
		return Response{}, fmt.Errorf("%w: ops is empty; give 1 to %d ops", ErrInvalid, state.MaxOpsPerRequest)
	}
	defer s.lock(project)()
	prev, err := s.Latest(project)
	if errors.Is(err, ErrNoState) {
		prev = nil
	} else if err != nil {
		return Response{}, err
	}
	ev, err := s.evidence()
	if err != nil {
		return Response{}, err
	}
	until := uint64(0)
	if prev != nil {
		until = prev.State.Meta.ConsolidatedUntilEvent
	}
	if req.ConsolidatedUntilEvent != nil {
		until = *req.ConsolidatedUntilEvent
	}
	res, err := state.Apply(prev, project, state.Request{Ops: req.Ops, ConsolidatedUntilEvent: until,
		GeneratedAt: s.now().UTC().Truncate(time.Millisecond)}, ev, ev.highest)
	if err != nil {
		return Response{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	out := Response{Project: project, Unchanged: res.Unchanged, AppliedCount: res.AppliedCount,
		Applied: res.Applied, Rejected: res.Rejected}
	if out.Applied == nil {
		out.Applied = []state.AppliedOp{}
	}
	if out.Rejected == nil {
		out.Rejected = []state.Rejection{}
	}
	if res.Version == nil {
		if prev != nil {
			out.Version, out.StateHash = prev.Version, prev.StateHash
		}
		return out, nil
	}
	data, err := json.Marshal(res.Version)
	if err != nil {
		return Response{}, err
	}
	if _, err := s.w.Write(ctx, store.Mutation{Table: store.TableStateVersions, RowID: rowID(project, res.Version.Version),
		Op: store.OpInsert, Data: data}); err != nil {
		return Response{}, fmt.Errorf("storing %s version %d: %w", project, res.Version.Version, err)
	}
	out.Version, out.StateHash = res.Version.Version, res.Version.StateHash
	return out, nil
}

// evidenceIndex resolves memory numbers over memory_versions (every
// numbered version), memory_numbers (numbers given before versions were
// kept) and memories.
type evidenceIndex struct {
	db      *store.DB
	byNum   map[uint64]numbered
	highest uint64
}

type numbered struct {
	memoryID  string
	project   string // the version's ("" for a legacy number: the live row's)
	eventHash string
}

// evidence scans memory_versions and memory_numbers once (numbers are
// home's; a consolidation is rare next to writes, so no reverse index is
// kept).
func (s *Service) evidence() (*evidenceIndex, error) {
	ix := &evidenceIndex{db: s.db, byNum: map[uint64]numbered{}}
	err := s.db.View(func(txn *store.Txn) error {
		err := txn.ScanRows(store.TableMemoryVersions, func(r *store.Row) error {
			var v memory.Version
			if r.Deleted || json.Unmarshal(r.Data, &v) != nil || v.Number == 0 {
				return nil
			}
			ix.byNum[v.Number] = numbered{memoryID: v.MemoryID, project: v.Project, eventHash: v.EventHash}
			ix.highest = max(ix.highest, v.Number)
			return nil
		})
		if err != nil {
			return err
		}
		return txn.ScanRows(store.TableMemoryNumbers, func(r *store.Row) error {
			if r.Deleted {
				return nil
			}
			var d struct {
				Number    uint64 `json:"number"`
				EventHash string `json:"event_hash"`
			}
			if json.Unmarshal(r.Data, &d) != nil || d.Number == 0 {
				return nil
			}
			if _, ok := ix.byNum[d.Number]; !ok {
				ix.byNum[d.Number] = numbered{memoryID: r.RowID, eventHash: d.EventHash}
			}
			ix.highest = max(ix.highest, d.Number)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("reading memory numbers: %w", err)
	}
	return ix, nil
}

// Lookup implements state.Evidence: a number names one version of a memory
// (a superseded one may be cited: it is immutable; the state read flags it
// as stale evidence), whose memory must be live. Its project is the
// version's (the event hash commits to it).
func (ix *evidenceIndex) Lookup(n uint64) (state.MemoryRef, bool) {
	e, ok := ix.byNum[n]
	if !ok {
		return state.MemoryRef{}, false
	}
	r, err := ix.db.Get(store.TableMemories, e.memoryID)
	if err != nil || r.Deleted {
		return state.MemoryRef{}, false
	}
	project := e.project
	if project == "" {
		var m struct {
			Project string `json:"project"`
		}
		if json.Unmarshal(r.Data, &m) != nil {
			return state.MemoryRef{}, false
		}
		project = m.Project
	}
	ref := state.MemoryRef{Number: n, Project: project}
	if h, err := state.ParseHash(e.eventHash); err == nil {
		ref.EventHash, ref.HasEventHash = h, true
	}
	return ref, true
}
