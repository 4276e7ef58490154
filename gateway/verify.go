package gateway

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/crow-sync/crow/anchor"
)

// ChainReader reads state anchors on chain (package anchor's Chain).
type ChainReader = anchor.ChainReader

// verifyResponse is the answer of GET /v1/verify/{name} and (with one
// version) GET /v1/project/{name}/state/anchor.
type verifyResponse = anchor.Report

// verifier checks versions against the chain (anchor owns the verdicts).
func (s *Server) verifier() anchor.Verifier {
	return anchor.Verifier{DB: s.cfg.DB, Chain: s.cfg.Chain, ProjectID: s.cfg.ProjectID, Versions: s.cfg.Projects}
}

// writeVerifyError maps the verifier's errors: 502 when the chain could not
// be read, else the projects mapping.
func (s *Server) writeVerifyError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, anchor.ErrChainUnreadable) {
		writeError(w, http.StatusBadGateway, "%s", err.Error())
		return
	}
	s.writeProjectError(w, r, err)
}

// handleVerify verifies every version of a project (public).
func (s *Server) handleVerify(w http.ResponseWriter, r *http.Request) {
	if !s.verifiable(w) {
		return
	}
	out, err := s.verifier().VerifyProject(r.Context(), r.PathValue("name"))
	if err != nil {
		s.writeVerifyError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// handleStateAnchor verifies one version (?version=N, default the newest; public).
func (s *Server) handleStateAnchor(w http.ResponseWriter, r *http.Request) {
	if !s.verifiable(w) {
		return
	}
	var ver uint64
	if q := r.URL.Query().Get("version"); q != "" {
		n, err := strconv.ParseUint(q, 10, 64)
		if err != nil || n == 0 {
			writeError(w, http.StatusBadRequest, "version must be a whole number from 1")
			return
		}
		ver = n
	}
	out, err := s.verifier().VerifyVersion(r.Context(), r.PathValue("name"), ver)
	if err != nil {
		s.writeVerifyError(w, r, err)
		return
	}
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
