package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/crow-sync/crow/anchor"
	"github.com/crow-sync/crow/projects"
	"github.com/crow-sync/crow/state"
	"github.com/crow-sync/crow/store"
)

// ProjectInfo is one entry of projects.list.
type ProjectInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Memories    int    `json:"memories"`
	// StateVersion and StateHash are the newest state version's (0 and "" if none).
	StateVersion uint64 `json:"state_version"`
	StateHash    string `json:"state_hash"`
}

// ProjectList is the answer of projects.list.
type ProjectList struct {
	Projects []ProjectInfo `json:"projects"`
}

// ProjectIn is the input of projects.create.
type ProjectIn struct {
	Name        string `json:"name" required:"true" maxlen:"128" desc:"The project name, as in memories' project field."`
	Description string `json:"description,omitempty" maxlen:"2000" desc:"What the project is."`
}

// Validate checks the project name.
func (in ProjectIn) Validate() error {
	if err := projects.ValidProject(in.Name); err != nil {
		return Wrap(KindInvalid, err, "")
	}
	return nil
}

// ProjectName names a project.
type ProjectName struct {
	Project string `json:"project" in:"path,name=name" required:"true" desc:"The project name, as in memories' project field."`
}

// StateAnchor is home's record of a version's anchoring (replicated).
type StateAnchor struct {
	Status          string `json:"status"` // pending, anchored or conflict
	OnchainAnchorID uint64 `json:"onchain_anchor_id,omitempty"`
	TxHash          string `json:"tx_hash,omitempty"`
	BlockNumber     uint64 `json:"block_number,omitempty"`
}

// ProjectState is a state version with its anchoring, as in the seed's
// example.
type ProjectState struct {
	state.Version
	Anchor StateAnchor `json:"anchor"`
}

// ConsolidateIn is the input of project.consolidate.
type ConsolidateIn struct {
	Project string            `json:"project" in:"path,name=name" required:"true" desc:"The project name."`
	Ops     []json.RawMessage `json:"ops" required:"true" maxitems:"100" desc:"Ops, applied in order (at most 100); the tool's description lists the grammar."`
	// ConsolidatedUntilEvent is the highest memory number the client
	// reviewed; absent keeps the previous version's mark.
	ConsolidatedUntilEvent *uint64 `json:"consolidated_until_event,omitempty" desc:"The highest memory number you reviewed; never lower than the current mark nor above the highest number. Omit to keep the current mark."`
}

var (
	ProjectsList = define(&Def[NoInput, ProjectList]{
		Spec: Spec{Name: "projects.list", Method: "GET", Path: "/v1/projects", Tag: "projects",
			Summary: "Projects: names, descriptions, memory counts and the newest state version"},
		Impl: (*App).projectsList,
	})
	ProjectsCreate = define(&Def[ProjectIn, ProjectInfo]{
		Spec: Spec{Name: "projects.create", Method: "POST", Path: "/v1/projects", Status: 201, Tag: "projects",
			Summary: "Create or describe a project"},
		Impl: (*App).projectsCreate,
	})
	ProjectStateGet = define(&Def[ProjectName, ProjectState]{
		Spec: Spec{Name: "project.state", Method: "GET", Path: "/v1/project/{name}/state", Tool: "get_project_state",
			Title: "Read a project's state", Tag: "projects",
			Summary: "The project's newest Project State version (replicated from home), with its anchoring",
			Description: "Read a project's newest Project State (schema 2): phase, current_focus, decisions, milestones, " +
				"risks and the other item lists, each item with its evidence_memory_ids and evidence_root, plus state_meta " +
				"{version, consolidated_until_event, previous_state_hash}, the state_hash, and anchor {status: pending|anchored, " +
				"onchain_anchor_id, tx_hash, block_number}. Returns the version object.",
			Access: Peer, ReadOnly: true},
		Impl: (*App).projectState,
	})
	ProjectConsolidate = define(&Def[ConsolidateIn, projects.Response]{
		Spec: Spec{Name: "project.consolidate", Method: "POST", Path: "/v1/project/{name}/state/ops", Tool: "update_project_state",
			Title: "Consolidate a project's state", Tag: "projects",
			Summary: "Consolidate: apply ops on home (a satellite forwards to home); invalid ops come back in rejected",
			Description: "Consolidate a project's state: the ops are validated against a closed grammar and applied by a " +
				"deterministic builder on top of the newest version, on the home instance (a satellite forwards the call). " +
				"Store the memories first and cite their numbers. Invalid ops come back in rejected with the reason; " +
				"no valid op means no new version. Returns {project, version, state_hash, unchanged, applied_count, applied, rejected}. " +
				stateOpsDescription(),
			HomePeer: true},
		Impl: (*App).projectConsolidate,
	})
)

// stateOpsDescription describes the op grammar.
func stateOpsDescription() string {
	d := "Ops, applied in order (at most 100); each is an object with \"op\" and its fields: "
	for i, op := range state.OpNames() {
		if i > 0 {
			d += "; "
		}
		d += op + " {" + fmt.Sprint(state.OpFields(op)) + "}"
	}
	return d + ". Every adding op cites evidence_memory_ids: memory NUMBERS (from crow_get_memory's number) of this project that home has numbered."
}

func (a *App) projectsSvc() (*projects.Service, error) {
	if a.d.Projects == nil {
		return nil, unavailable("project state")
	}
	return a.d.Projects, nil
}

func (a *App) projectsList(ctx context.Context, _ NoInput) (ProjectList, error) {
	svc, err := a.memories()
	if err != nil {
		return ProjectList{}, err
	}
	ps, err := a.projectsSvc()
	if err != nil {
		return ProjectList{}, err
	}
	counts, err := svc.Count(ctx)
	if err != nil {
		return ProjectList{}, err
	}
	byName := map[string]*ProjectInfo{}
	for name, n := range counts.Projects {
		byName[name] = &ProjectInfo{Name: name, Memories: n}
	}
	rows, _, err := a.d.DB.List(store.TableProjects, store.ListOptions{Limit: 1000})
	if err != nil {
		return ProjectList{}, err
	}
	for _, row := range rows {
		var p ProjectIn
		if json.Unmarshal(row.Data, &p) != nil {
			continue
		}
		in := byName[row.RowID]
		if in == nil {
			in = &ProjectInfo{Name: row.RowID}
			byName[row.RowID] = in
		}
		in.Description = p.Description
	}
	out := ProjectList{Projects: []ProjectInfo{}}
	for _, in := range byName {
		if v, err := ps.Latest(in.Name); err == nil {
			in.StateVersion, in.StateHash = v.Version, v.StateHash
		}
		out.Projects = append(out.Projects, *in)
	}
	slices.SortFunc(out.Projects, func(a, b ProjectInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (a *App) projectsCreate(ctx context.Context, in ProjectIn) (ProjectInfo, error) {
	if _, err := a.tables(); err != nil {
		return ProjectInfo{}, err
	}
	data, _ := json.Marshal(in)
	if _, err := a.d.Writer.Write(ctx, store.Mutation{Table: store.TableProjects, RowID: in.Name, Op: store.OpPut, Data: data}); err != nil {
		return ProjectInfo{}, err
	}
	return ProjectInfo{Name: in.Name, Description: in.Description}, nil
}

// noState is the error of a project without a state version.
func noState(project string, err error) error {
	return Wrap(KindNotFound, err, fmt.Sprintf("project %s has no state version yet (update_project_state or POST /v1/project/%s/state/ops creates one)", project, project))
}

func (a *App) projectState(_ context.Context, in ProjectName) (ProjectState, error) {
	ps, err := a.projectsSvc()
	if err != nil {
		return ProjectState{}, err
	}
	v, err := ps.Latest(in.Project)
	if errors.Is(err, projects.ErrNoState) {
		return ProjectState{}, noState(in.Project, err)
	} else if err != nil {
		return ProjectState{}, err
	}
	return a.withAnchor(v)
}

// withAnchor adds home's anchor record of v.
func (a *App) withAnchor(v *state.Version) (ProjectState, error) {
	out := ProjectState{Version: *v, Anchor: StateAnchor{Status: anchor.StatusPending}}
	if a.d.DB == nil {
		return out, nil
	}
	rec, ok, err := anchor.ReadRecord(a.d.DB, anchor.StateRecordID(v.Project, v.Version))
	if err != nil || !ok {
		return out, err
	}
	out.Anchor = StateAnchor{Status: rec.Status, OnchainAnchorID: rec.AnchorID, TxHash: rec.TxHash, BlockNumber: rec.Block}
	return out, nil
}

// projectConsolidate runs the request on home: here, or forwarded there. A
// peer's call is never forwarded again.
func (a *App) projectConsolidate(ctx context.Context, in ConsolidateIn) (projects.Response, error) {
	ps, err := a.projectsSvc()
	if err != nil {
		return projects.Response{}, err
	}
	req := projects.Request{Ops: in.Ops, ConsolidatedUntilEvent: in.ConsolidatedUntilEvent}
	res, err := ps.Consolidate(ctx, in.Project, req)
	if err == nil && !res.Unchanged && a.d.Consolidated != nil {
		a.d.Consolidated()
	}
	if !errors.Is(err, projects.ErrNotHome) {
		return res, err
	}
	if _, fromPeer := PeerOf(ctx); fromPeer || a.d.ForwardConsolidation == nil {
		return projects.Response{}, Invalidf("only the home instance consolidates project state, and this instance (%s) is a %s",
			a.d.Self.Name, a.d.Self.Role)
	}
	res, err = a.d.ForwardConsolidation(ctx, in.Project, req)
	if err != nil {
		if errors.Is(err, projects.ErrInvalid) {
			return projects.Response{}, Wrap(KindInvalid, err, "") // home's own answer: a bad request
		}
		return projects.Response{}, Wrap(KindUpstream, err, fmt.Sprintf("the home instance is unreachable: %v; consolidation happens on home only, try again when it is online", err))
	}
	return res, nil
}
