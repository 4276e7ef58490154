package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/crow-sync/crow/registry"
)

// registryStatus maps registry errors to HTTP status codes.
func registryStatus(err error) int {
	switch {
	case errors.Is(err, registry.ErrInvalidURL), errors.Is(err, registry.ErrRevokeSelf),
		errors.Is(err, registry.ErrInvalidInstance):
		return http.StatusBadRequest
	case errors.Is(err, registry.ErrForeignIdentity), errors.Is(err, registry.ErrBadSignature),
		errors.Is(err, registry.ErrChallengeMismatch):
		return http.StatusForbidden
	case errors.Is(err, registry.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, registry.ErrRevoked), errors.Is(err, registry.ErrSecondHome):
		return http.StatusConflict
	case errors.Is(err, registry.ErrUnhealthy):
		return http.StatusBadGateway
	}
	return http.StatusInternalServerError
}

func (s *Server) writeRegistryError(w http.ResponseWriter, r *http.Request, err error) {
	st := registryStatus(err)
	if st == http.StatusInternalServerError {
		s.writeDomainError(w, r, err)
		return
	}
	writeError(w, st, "%s", err.Error())
}

func (s *Server) handleInstancesList(w http.ResponseWriter, r *http.Request) {
	list := s.cfg.Instances.List()
	if list == nil {
		list = []registry.Instance{}
	}
	writeJSON(w, http.StatusOK, instancesResponse{Self: s.cfg.Self.InstanceID, Instances: list})
}

// registerRequest is the body of POST /v1/instances.
type registerRequest struct {
	GatewayURL string `json:"gateway_url"`
}

func (s *Server) handleInstancesRegister(w http.ResponseWriter, r *http.Request) {
	var req registerRequest
	if err := decodeJSON(w, r, &req); err != nil {
		writeDecodeError(w, err)
		return
	}
	if req.GatewayURL == "" {
		writeError(w, http.StatusBadRequest, "gateway_url is required, e.g. http://100.64.0.2:3001")
		return
	}
	resp, err := s.join(r.Context(), req.GatewayURL)
	if err != nil {
		s.writeRegistryError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, resp)
}

// join registers the instance at gatewayURL and asks it to register this one
// back (REST and MCP); a failed join-back becomes the answer's warning.
func (s *Server) join(ctx context.Context, gatewayURL string) (registerResponse, error) {
	in, announceErr, err := s.cfg.Instances.Join(ctx, gatewayURL, s.cfg.Self.GatewayURL)
	if err != nil {
		return registerResponse{}, err
	}
	resp := registerResponse{Instance: in}
	if s.cfg.Summaries != nil && announceErr == nil {
		// The peer knows us now, so it takes our tokens: fetch its summary
		// (the fetch at registration ran before the join-back and was refused).
		s.cfg.Summaries.Kick()
	}
	if announceErr != nil {
		s.log.Warn("peer could not register us back", "peer", in.ID, "err", announceErr)
		resp.Warning = fmt.Sprintf("registered here, but %s could not register this instance back (%v); run 'crow instance add %s' there",
			in.Name, announceErr, s.cfg.Self.GatewayURL)
	}
	return resp, nil
}

// registerResponse is the answer of POST /v1/instances: the instance, plus a
// warning when the peer could not register this instance back.
type registerResponse struct {
	registry.Instance
	Warning string `json:"warning,omitempty"`
}

// handleInstancesAnnounce is the public endpoint a peer of our identity posts
// to so we register it back (see registry.AcceptAnnouncement).
func (s *Server) handleInstancesAnnounce(w http.ResponseWriter, r *http.Request) {
	var a registry.Announcement
	if err := decodeJSON(w, r, &a); err != nil {
		writeDecodeError(w, err)
		return
	}
	in, err := s.cfg.Instances.AcceptAnnouncement(r.Context(), a)
	if errors.Is(err, registry.ErrBadAnnouncement) {
		writeError(w, http.StatusForbidden, "%s", err.Error())
		return
	} else if err != nil {
		s.writeRegistryError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, in)
}

func (s *Server) handleInstancesRevoke(w http.ResponseWriter, r *http.Request) {
	in, err := s.cfg.Instances.Revoke(r.Context(), r.PathValue("id"))
	if err != nil {
		s.writeRegistryError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, in)
}
