package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/crow-sync/crow/anchor"
	"github.com/crow-sync/crow/projects"
	"github.com/crow-sync/crow/state"
)

// ProjectInfo and ProjectList are the answers of the project list
// (package projects owns the list and its limits).
type (
	ProjectInfo = projects.Info
	ProjectList = projects.List
)

// ProjectIn is the input of projects.create.
type ProjectIn struct {
	Name        string `json:"name" required:"true" maxlen:"128" desc:"The project name, as in memories' project field."`
	Description string `json:"description,omitempty" maxlen:"2000" desc:"What the project is."`
}

// Validate checks the name and the description (projects' rules).
func (in ProjectIn) Validate() error {
	return projects.CreateInput{Name: in.Name, Description: in.Description}.Validate()
}

// ProjectName names a project.
type ProjectName struct {
	Project string `json:"project" in:"path,name=name" required:"true" desc:"The project name, as in memories' project field."`
}

// ProjectState is a state version with its anchoring, as in the seed's
// example (package projects).
type ProjectState = projects.State

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
			Summary: "Projects: names, descriptions, memory counts and the newest state version", ReadOnly: true},
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
				"onchain_anchor_id, tx_hash, block_number}, and stale_evidence {item id: [{number, superseded_by}]}: the cited memory " +
				"numbers whose memory was edited since (superseded_by is the newest number; read it with crow_get_memory), " +
				"an annotation outside the hashed state. Returns the version object.",
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
	return ps.List(counts.Projects)
}

func (a *App) projectsCreate(ctx context.Context, in ProjectIn) (ProjectInfo, error) {
	ps, err := a.projectsSvc()
	if err != nil {
		return ProjectInfo{}, err
	}
	return ps.Create(ctx, projects.CreateInput{Name: in.Name, Description: in.Description})
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
	st, err := ps.LatestWithAnchor(in.Project, anchor.Records{DB: a.d.DB})
	if errors.Is(err, projects.ErrNoState) {
		return ProjectState{}, noState(in.Project, err)
	}
	return st, err
}

// projectConsolidate runs the request on home: here, or forwarded there
// (projects owns the rule; a peer's call is never forwarded again).
func (a *App) projectConsolidate(ctx context.Context, in ConsolidateIn) (projects.Response, error) {
	ps, err := a.projectsSvc()
	if err != nil {
		return projects.Response{}, err
	}
	_, fromPeer := PeerOf(ctx)
	res, stored, err := ps.ConsolidateOnHome(ctx, in.Project,
		projects.Request{Ops: in.Ops, ConsolidatedUntilEvent: in.ConsolidatedUntilEvent},
		projects.Route{Forwarder: a.d.Forwarder, FromPeer: fromPeer, Self: a.d.Self.Name, Role: a.d.Self.Role})
	if stored && a.d.Consolidated != nil {
		a.d.Consolidated()
	}
	return res, err
}
