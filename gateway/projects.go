package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/crow-sync/crow/anchor"
	"github.com/crow-sync/crow/projects"
	"github.com/crow-sync/crow/state"
)

// ConsolidateFunc sends a consolidation to the home instance (a satellite's
// path; see projects.Forwarder, which it implements).
type ConsolidateFunc = projects.ForwarderFunc

// consolidate runs req on home: here, or forwarded there (projects owns the
// rule; a peer's call is never forwarded again).
func (s *Server) consolidate(ctx context.Context, project string, req projects.Request) (projects.Response, error) {
	_, fromPeer := peerOf(ctx)
	route := projects.Route{FromPeer: fromPeer, Self: s.cfg.Self.Name, Role: s.cfg.Self.Role}
	if s.cfg.ForwardConsolidation != nil {
		route.Forwarder = s.cfg.ForwardConsolidation
	}
	res, stored, err := s.cfg.Projects.ConsolidateOnHome(ctx, project, req, route)
	if stored && s.cfg.Consolidated != nil {
		s.cfg.Consolidated()
	}
	if errors.Is(err, projects.ErrNotHome) {
		return projects.Response{}, toolErrorf("%s", err.Error())
	}
	return res, err
}

// writeProjectError maps the projects errors.
func (s *Server) writeProjectError(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, projects.ErrNoState):
		writeError(w, http.StatusNotFound, "project %s has no state version yet (POST /v1/project/%s/state/ops creates one)",
			r.PathValue("name"), r.PathValue("name"))
	case errors.Is(err, projects.ErrInvalid):
		writeError(w, http.StatusBadRequest, "%s", err.Error())
	case errors.Is(err, projects.ErrHomeUnreachable):
		writeError(w, http.StatusBadGateway, "%s", err.Error())
	default:
		s.writeDomainError(w, r, err)
	}
}

// stateResponse is a state version with its anchoring (GET
// /v1/project/{name}/state and get_project_state), as in the seed's example.
type stateResponse = projects.State

// anchors reads home's anchoring records of state versions.
func (s *Server) anchors() projects.AnchorRecords { return anchor.Records{DB: s.cfg.DB} }

func (s *Server) handleProjectState(w http.ResponseWriter, r *http.Request) {
	out, err := s.cfg.Projects.LatestWithAnchor(r.PathValue("name"), s.anchors())
	if err != nil {
		s.writeProjectError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleProjectStateOps(w http.ResponseWriter, r *http.Request) {
	var req projects.Request
	if err := decodeJSON(w, r, &req); err != nil {
		writeError(w, http.StatusBadRequest, "%s", err.Error())
		return
	}
	res, err := s.consolidate(r.Context(), r.PathValue("name"), req)
	if err != nil {
		s.writeProjectError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// projectInfo, projectsResponse and projectRequest are the project list's
// entry, the list (GET /v1/projects) and the body of POST /v1/projects.
type (
	projectInfo      = projects.Info
	projectsResponse = projects.List
	projectRequest   = projects.CreateInput
)

func (s *Server) handleProjectsList(w http.ResponseWriter, r *http.Request) {
	counts, err := s.cfg.Memories.Count(r.Context())
	if err != nil {
		s.writeDomainError(w, r, err)
		return
	}
	out, err := s.cfg.Projects.List(counts.Projects)
	if err != nil {
		s.writeDomainError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleProjectsCreate(w http.ResponseWriter, r *http.Request) {
	var in projects.CreateInput
	if err := decodeJSON(w, r, &in); err != nil {
		writeError(w, http.StatusBadRequest, "%s", err.Error())
		return
	}
	out, err := s.cfg.Projects.Create(r.Context(), in)
	if err != nil {
		s.writeProjectError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, out)
}

// MCP tools.

func (s *Server) mcpGetProjectState(_ context.Context, raw json.RawMessage) (any, error) {
	var a struct {
		Project string `json:"project"`
	}
	if err := decodeArgs(raw, &a); err != nil {
		return nil, err
	}
	out, err := s.cfg.Projects.LatestWithAnchor(a.Project, s.anchors())
	switch {
	case errors.Is(err, projects.ErrNoState):
		return nil, toolErrorf("project %q has no state version yet; update_project_state creates the first", a.Project)
	case errors.Is(err, projects.ErrInvalid):
		return nil, toolErrorf("%s", err.Error())
	case err != nil:
		return nil, err
	}
	return out, nil
}

func (s *Server) mcpUpdateProjectState(ctx context.Context, raw json.RawMessage) (any, error) {
	var a struct {
		Project string `json:"project"`
		projects.Request
	}
	if err := decodeArgs(raw, &a); err != nil {
		return nil, err
	}
	res, err := s.consolidate(ctx, a.Project, a.Request)
	switch {
	case errors.Is(err, projects.ErrInvalid), errors.Is(err, projects.ErrHomeUnreachable):
		return nil, toolErrorf("%s", err.Error())
	case err != nil:
		return nil, err
	}
	return res, nil
}

// stateOpsDescription describes the op grammar for the MCP tool.
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
