package gateway

import (
	"encoding/hex"
	"net/http"
)

// maxChallengeBytes bounds the challenge a caller may ask us to sign.
const maxChallengeBytes = 64

// healthResponse is the public /health document. Field names are part of the
// registration contract (SPEC §7, §8).
type healthResponse struct {
	Status     string   `json:"status"`
	InstanceID string   `json:"instance_id"`
	Name       string   `json:"name"`
	Role       string   `json:"role"`
	CrowID     string   `json:"crow_id"`
	PublicKey  string   `json:"public_key"`
	Version    string   `json:"version"`
	SyncAddrs  []string `json:"sync_addrs"`
	GatewayURL string   `json:"gateway_url,omitempty"`
	CreatedAt  string   `json:"created_at,omitempty"`
	Challenge  string   `json:"challenge,omitempty"`
	Signature  string   `json:"signature,omitempty"`
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	self := s.cfg.Self
	resp := healthResponse{
		Status: "ok", InstanceID: self.InstanceID, Name: self.Name, Role: self.Role,
		CrowID: self.CrowID, PublicKey: self.PublicKey, Version: self.Version, SyncAddrs: []string{},
		GatewayURL: self.GatewayURL, CreatedAt: self.CreatedAt,
	}
	if self.SyncAddrs != nil {
		if a := self.SyncAddrs(); a != nil {
			resp.SyncAddrs = a
		}
	}
	if c := r.URL.Query().Get("challenge"); c != "" {
		raw, err := hex.DecodeString(c)
		if err != nil || len(raw) < 16 || len(raw) > maxChallengeBytes {
			writeError(w, http.StatusBadRequest, "challenge must be 16 to %d bytes of hex", maxChallengeBytes)
			return
		}
		resp.Challenge = c
		resp.Signature = hex.EncodeToString(s.cfg.Sign(raw))
	}
	writeJSON(w, http.StatusOK, resp)
}
