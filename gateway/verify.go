package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/crow-sync/crow/anchor"
	"github.com/crow-sync/crow/projects"
)

// ChainReader reads state anchors on chain (package anchor's Chain).
type ChainReader interface {
	GetAnchor(ctx context.Context, projectID [32]byte, version uint64) (anchor.Anchor, bool, error)
	Info() anchor.ChainInfo
}

// versionCheck is the verification of one state version.
type versionCheck struct {
	Version   uint64 `json:"version"`
	StateHash string `json:"state_hash"` // the version's hash as stored here
	// Status: anchored (on chain, hash matches), pending (not on chain
	// yet), mismatch (the chain holds another hash), conflict (home found
	// another hash there when anchoring), or unverified (no chain access
	// here: the record is home's, replicated).
	Status string `json:"status"`
	Match  bool   `json:"match"`
	// On chain, when read.
	AnchorID         uint64 `json:"anchor_id,omitempty"`
	OnchainStateHash string `json:"onchain_state_hash,omitempty"`
	AnchoredAt       string `json:"anchored_at,omitempty"`
	AnchoredBy       string `json:"anchored_by,omitempty"`
	TxHash           string `json:"tx_hash,omitempty"`
	BlockNumber      uint64 `json:"block_number,omitempty"`
}

// verifyResponse is the answer of GET /v1/verify/{name} and (with one
// version) GET /v1/project/{name}/state/anchor.
type verifyResponse struct {
	Project string `json:"project"`
	// ProjectID is the keyed hash the chain knows the project by.
	ProjectID string         `json:"project_id"`
	Chain     *chainDoc      `json:"chain"` // nil: this instance reads no chain
	Versions  []versionCheck `json:"versions"`
	// Verified: every version is anchored with a matching hash.
	Verified bool   `json:"verified"`
	HowTo    string `json:"how_to_verify"`
}

type chainDoc struct {
	Kind     string `json:"kind"`
	ChainID  uint64 `json:"chain_id"`
	Contract string `json:"contract"`
}

const howToVerify = "For each version: call getAnchor(project_id, version) on the ProjectStateAnchor contract at " +
	"chain.contract (chain.chain_id) and compare its stateHash with state_hash. To check state_hash itself, fetch " +
	"the state (GET /v1/project/{name}/state with the owner key, or from its owner) and recompute " +
	"SHA3-256(\"CM_PROJECT_STATE_V2\" ‖ RFC 8785 canonical JSON of its \"state\" object)."

// check verifies one version against the chain (or the replicated record).
func (s *Server) check(ctx context.Context, project string, pid [32]byte, version uint64, stateHash string) (versionCheck, error) {
	c := versionCheck{Version: version, StateHash: stateHash, Status: anchor.StatusPending}
	rec, ok, err := anchor.ReadRecord(s.cfg.DB, anchor.StateRecordID(project, version))
	if err != nil {
		return c, err
	}
	if ok {
		c.TxHash, c.BlockNumber, c.AnchorID = rec.TxHash, rec.Block, rec.AnchorID
		if rec.Status == anchor.StatusConflict {
			c.Status = anchor.StatusConflict
		}
	}
	if s.cfg.Chain == nil {
		if ok && rec.Status == anchor.StatusAnchored {
			c.Status = "unverified"
			c.Match = rec.StateHash == stateHash
		}
		return c, nil
	}
	a, found, err := s.cfg.Chain.GetAnchor(ctx, pid, version)
	if err != nil {
		return c, fmt.Errorf("reading the chain: %w", err)
	}
	if !found {
		return c, nil
	}
	c.AnchorID, c.OnchainStateHash = a.ID, anchor.HashHex(a.StateHash)
	c.AnchoredAt, c.AnchoredBy = a.AnchoredAt.UTC().Format("2006-01-02T15:04:05Z"), a.AnchoredBy
	if a.TxHash != "" {
		c.TxHash, c.BlockNumber = a.TxHash, a.Block
	}
	c.Match = c.OnchainStateHash == stateHash
	if c.Match {
		c.Status = anchor.StatusAnchored
	} else {
		c.Status = "mismatch"
	}
	return c, nil
}

func (s *Server) verifyDoc(project string) verifyResponse {
	pid := s.cfg.ProjectID(project)
	out := verifyResponse{Project: project, ProjectID: anchor.HashHex(pid), Versions: []versionCheck{}, HowTo: howToVerify}
	if s.cfg.Chain != nil {
		info := s.cfg.Chain.Info()
		out.Chain = &chainDoc{Kind: info.Kind, ChainID: info.ChainID, Contract: info.Contract}
	}
	return out
}

// handleVerify verifies every version of a project (public).
func (s *Server) handleVerify(w http.ResponseWriter, r *http.Request) {
	if !s.verifiable(w) {
		return
	}
	project := r.PathValue("name")
	latest, err := s.cfg.Projects.Latest(project)
	if err != nil {
		s.writeProjectError(w, r, err)
		return
	}
	out := s.verifyDoc(project)
	pid := s.cfg.ProjectID(project)
	out.Verified = true
	for v := uint64(1); v <= latest.Version; v++ {
		ver, err := s.cfg.Projects.Version(project, v)
		if errors.Is(err, projects.ErrNoState) {
			continue // not replicated here yet
		} else if err != nil {
			s.writeDomainError(w, r, err)
			return
		}
		c, err := s.check(r.Context(), project, pid, v, ver.StateHash)
		if err != nil {
			writeError(w, http.StatusBadGateway, "%s", err.Error())
			return
		}
		out.Verified = out.Verified && c.Status == anchor.StatusAnchored
		out.Versions = append(out.Versions, c)
	}
	writeJSON(w, http.StatusOK, out)
}

// handleStateAnchor verifies one version (?version=N, default the newest; public).
func (s *Server) handleStateAnchor(w http.ResponseWriter, r *http.Request) {
	if !s.verifiable(w) {
		return
	}
	project := r.PathValue("name")
	var ver uint64
	if q := r.URL.Query().Get("version"); q != "" {
		n, err := strconv.ParseUint(q, 10, 64)
		if err != nil || n == 0 {
			writeError(w, http.StatusBadRequest, "version must be a whole number from 1")
			return
		}
		ver = n
	}
	v, err := s.cfg.Projects.Latest(project)
	if err == nil && ver != 0 {
		v, err = s.cfg.Projects.Version(project, ver)
	}
	if err != nil {
		s.writeProjectError(w, r, err)
		return
	}
	out := s.verifyDoc(project)
	c, err := s.check(r.Context(), project, s.cfg.ProjectID(project), v.Version, v.StateHash)
	if err != nil {
		writeError(w, http.StatusBadGateway, "%s", err.Error())
		return
	}
	out.Versions = append(out.Versions, c)
	out.Verified = c.Status == anchor.StatusAnchored
	writeJSON(w, http.StatusOK, out)
}

// verifiable answers 404 when this gateway keeps no project state.
func (s *Server) verifiable(w http.ResponseWriter) bool {
	if s.cfg.Projects == nil || s.cfg.ProjectID == nil {
		writeError(w, http.StatusNotFound, "this gateway keeps no project state")
		return false
	}
	return true
}
