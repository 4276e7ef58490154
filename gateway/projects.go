package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/crow-sync/crow/anchor"
	"github.com/crow-sync/crow/projects"
	"github.com/crow-sync/crow/state"
	"github.com/crow-sync/crow/store"
)

// ConsolidateFunc sends a consolidation to the home instance (a satellite's
// path: package federation calls home's update_project_state). Home's
// refusal of the request itself wraps projects.ErrInvalid; any other error
// means home could not be asked.
type ConsolidateFunc func(ctx context.Context, project string, req projects.Request) (projects.Response, error)

// errHomeUnreachable wraps a failure to reach home for a consolidation.
var errHomeUnreachable = errors.New("the home instance is unreachable")

// consolidate runs req on home: here, or forwarded there. A peer's call is
// never forwarded again.
func (s *Server) consolidate(ctx context.Context, project string, req projects.Request) (projects.Response, error) {
	res, err := s.cfg.Projects.Consolidate(ctx, project, req)
	if err == nil && !res.Unchanged && s.cfg.Consolidated != nil {
		s.cfg.Consolidated()
	}
	if !errors.Is(err, projects.ErrNotHome) {
		return res, err
	}
	if _, fromPeer := peerOf(ctx); fromPeer || s.cfg.ForwardConsolidation == nil {
		return projects.Response{}, toolErrorf("only the home instance consolidates project state, and this instance (%s) is a %s",
			s.app.Self().Name, s.app.Self().Role)
	}
	res, err = s.cfg.ForwardConsolidation(ctx, project, req)
	if err != nil {
		if errors.Is(err, projects.ErrInvalid) {
			return projects.Response{}, err // home's own answer: a bad request
		}
		return projects.Response{}, fmt.Errorf("%w: %v; consolidation happens on home only, try again when it is online", errHomeUnreachable, err)
	}
	return res, nil
}

// writeProjectError maps the projects errors.
func (s *Server) writeProjectError(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, projects.ErrNoState):
		writeError(w, http.StatusNotFound, "project %s has no state version yet (POST /v1/project/%s/state/ops creates one)",
			r.PathValue("name"), r.PathValue("name"))
	case errors.Is(err, projects.ErrInvalid):
		writeError(w, http.StatusBadRequest, "%s", err.Error())
	case errors.Is(err, errHomeUnreachable):
		writeError(w, http.StatusBadGateway, "%s", err.Error())
	default:
		s.writeDomainError(w, r, err)
	}
}

// stateResponse is a state version with its anchoring (GET
// /v1/project/{name}/state and get_project_state), as in the seed's example.
type stateResponse struct {
	state.Version
	Anchor stateAnchor `json:"anchor"`
}

// stateAnchor is home's record of a version's anchoring (replicated).
type stateAnchor struct {
	Status          string `json:"status"` // pending, anchored or conflict
	OnchainAnchorID uint64 `json:"onchain_anchor_id,omitempty"`
	TxHash          string `json:"tx_hash,omitempty"`
	BlockNumber     uint64 `json:"block_number,omitempty"`
}

// withAnchor adds home's anchor record of v.
func (s *Server) withAnchor(v *state.Version) (stateResponse, error) {
	out := stateResponse{Version: *v, Anchor: stateAnchor{Status: anchor.StatusPending}}
	if s.cfg.DB == nil {
		return out, nil
	}
	rec, ok, err := anchor.ReadRecord(s.cfg.DB, anchor.StateRecordID(v.Project, v.Version))
	if err != nil || !ok {
		return out, err
	}
	out.Anchor = stateAnchor{Status: rec.Status, OnchainAnchorID: rec.AnchorID, TxHash: rec.TxHash, BlockNumber: rec.Block}
	return out, nil
}

func (s *Server) handleProjectState(w http.ResponseWriter, r *http.Request) {
	v, err := s.cfg.Projects.Latest(r.PathValue("name"))
	if err != nil {
		s.writeProjectError(w, r, err)
		return
	}
	out, err := s.withAnchor(v)
	if err != nil {
		s.writeDomainError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleProjectStateOps(w http.ResponseWriter, r *http.Request) {
	var req projects.Request
	if err := decodeJSON(w, r, &req); err != nil {
		writeDecodeError(w, err)
		return
	}
	res, err := s.consolidate(r.Context(), r.PathValue("name"), req)
	if err != nil {
		s.writeProjectError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// projectInfo is one entry of GET /v1/projects.
type projectInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Memories    int    `json:"memories"`
	// StateVersion and StateHash are the newest state version's (0 and "" if none).
	StateVersion uint64 `json:"state_version"`
	StateHash    string `json:"state_hash"`
}

// projectsResponse is the answer of GET /v1/projects.
type projectsResponse struct {
	Projects []projectInfo `json:"projects"`
}

// projectRequest is the body of POST /v1/projects.
type projectRequest struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

func (s *Server) handleProjectsList(w http.ResponseWriter, r *http.Request) {
	counts, err := s.cfg.Memories.Count(r.Context())
	if err != nil {
		s.writeDomainError(w, r, err)
		return
	}
	byName := map[string]*projectInfo{}
	for name, n := range counts.Projects {
		byName[name] = &projectInfo{Name: name, Memories: n}
	}
	rows, _, err := s.cfg.DB.List(store.TableProjects, store.ListOptions{Limit: 1000})
	if err != nil {
		s.writeDomainError(w, r, err)
		return
	}
	for _, row := range rows {
		var p projectRequest
		if json.Unmarshal(row.Data, &p) != nil {
			continue
		}
		in := byName[row.RowID]
		if in == nil {
			in = &projectInfo{Name: row.RowID}
			byName[row.RowID] = in
		}
		in.Description = p.Description
	}
	out := projectsResponse{Projects: []projectInfo{}}
	for _, in := range byName {
		if v, err := s.cfg.Projects.Latest(in.Name); err == nil {
			in.StateVersion, in.StateHash = v.Version, v.StateHash
		}
		out.Projects = append(out.Projects, *in)
	}
	slices.SortFunc(out.Projects, func(a, b projectInfo) int { return strings.Compare(a.Name, b.Name) })
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleProjectsCreate(w http.ResponseWriter, r *http.Request) {
	var p projectRequest
	if err := decodeJSON(w, r, &p); err != nil {
		writeDecodeError(w, err)
		return
	}
	if err := projects.ValidProject(p.Name); err != nil {
		writeError(w, http.StatusBadRequest, "%s", err.Error())
		return
	}
	if len(p.Description) > 2000 {
		writeError(w, http.StatusBadRequest, "description is longer than 2000 bytes")
		return
	}
	data, _ := json.Marshal(p)
	if _, err := s.cfg.Writer.Write(r.Context(), store.Mutation{Table: store.TableProjects, RowID: p.Name, Op: store.OpPut, Data: data}); err != nil {
		s.writeDomainError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, projectInfo{Name: p.Name, Description: p.Description})
}

// MCP tools.

func (s *Server) mcpGetProjectState(_ context.Context, raw json.RawMessage) (any, error) {
	var a struct {
		Project string `json:"project"`
	}
	if err := decodeArgs(raw, &a); err != nil {
		return nil, err
	}
	v, err := s.cfg.Projects.Latest(a.Project)
	switch {
	case errors.Is(err, projects.ErrNoState):
		return nil, toolErrorf("project %q has no state version yet; update_project_state creates the first", a.Project)
	case errors.Is(err, projects.ErrInvalid):
		return nil, toolErrorf("%s", err.Error())
	case err != nil:
		return nil, err
	}
	return s.withAnchor(v)
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
	case errors.Is(err, projects.ErrInvalid), errors.Is(err, errHomeUnreachable):
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
