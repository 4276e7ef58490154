package gateway

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"net/http"
	"time"

	crowsync "github.com/crow-sync/crow/sync"
)

// feedStatus is one feed held here.
type feedStatus struct {
	Feed       string `json:"feed"` // hex public key
	InstanceID string `json:"instance_id,omitempty"`
	Name       string `json:"name,omitempty"`
	Length     uint64 `json:"length"` // contiguous entries held here
}

// peerFeedStatus compares one feed between this instance and a peer.
type peerFeedStatus struct {
	Feed       string `json:"feed"`
	InstanceID string `json:"instance_id,omitempty"`
	Local      uint64 `json:"local"`
	Peer       uint64 `json:"peer"`
	Lag        uint64 `json:"lag"`
	Stopped    bool   `json:"stopped,omitempty"`
}

// peerStatus is the replication state with one peer.
type peerStatus struct {
	InstanceID      string           `json:"instance_id,omitempty"`
	Name            string           `json:"name,omitempty"`
	PeerID          string           `json:"peer_id"`
	Connected       bool             `json:"connected"`
	LastSeen        string           `json:"last_seen,omitempty"`
	Lag             uint64           `json:"lag"` // entries we miss from this peer, all feeds
	EntriesReceived uint64           `json:"entries_received"`
	EntriesSent     uint64           `json:"entries_sent"`
	Inflight        int              `json:"inflight"`
	Feeds           []peerFeedStatus `json:"feeds"`
}

// syncStatusResponse is the answer of GET /v1/sync/status.
type syncStatusResponse struct {
	InstanceID string       `json:"instance_id"`
	Paused     bool         `json:"paused"`
	Feeds      []feedStatus `json:"feeds"`
	Peers      []peerStatus `json:"peers"`
}

// instanceOfKey names the instance whose feed (or peer) key is pub.
func (s *Server) instanceOfKey(pub ed25519.PublicKey) (id, name string) {
	if s.cfg.Instances == nil {
		return "", ""
	}
	in, err := s.cfg.Instances.LookupKey(pub)
	if err != nil {
		return "", ""
	}
	return in.ID, in.Name
}

func (s *Server) handleSyncStatus(w http.ResponseWriter, r *http.Request) {
	resp, err := s.syncStatus(r.Context())
	if err != nil {
		s.writeDomainError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// syncStatus assembles the replication status (GET /v1/sync/status and the MCP
// tool crow_sync_status). A gateway built without a sync node or feeds (tests)
// reports none.
func (s *Server) syncStatus(ctx context.Context) (syncStatusResponse, error) {
	resp := syncStatusResponse{InstanceID: s.cfg.Self.InstanceID, Feeds: []feedStatus{}, Peers: []peerStatus{}}
	if s.cfg.SyncPaused != nil {
		resp.Paused = s.cfg.SyncPaused()
	}
	if s.cfg.SyncFeeds != nil {
		heads, err := s.cfg.SyncFeeds.Heads()
		if err != nil {
			return resp, err
		}
		for _, h := range heads {
			id, name := s.instanceOfKey(h.Feed[:])
			resp.Feeds = append(resp.Feeds, feedStatus{Feed: hex.EncodeToString(h.Feed[:]), InstanceID: id, Name: name, Length: h.Length})
		}
	}
	if s.cfg.SyncNode == nil {
		return resp, nil
	}
	peers, err := s.cfg.SyncNode.Status(ctx)
	if err != nil {
		return resp, err
	}
	for _, p := range peers {
		ps := peerStatus{
			PeerID: p.Peer.String(), Connected: p.Connected, EntriesReceived: p.EntriesReceived,
			EntriesSent: p.EntriesSent, Inflight: p.Inflight, Feeds: []peerFeedStatus{},
		}
		if !p.LastSeen.IsZero() {
			ps.LastSeen = p.LastSeen.UTC().Format(time.RFC3339)
		}
		if pub, err := p.Peer.PublicKey(); err == nil {
			ps.InstanceID, ps.Name = s.instanceOfKey(pub)
		}
		for _, f := range p.Feeds {
			id, _ := s.instanceOfKey(f.Feed[:])
			ps.Feeds = append(ps.Feeds, peerFeedStatus{
				Feed: hex.EncodeToString(f.Feed[:]), InstanceID: id, Local: f.Local, Peer: f.Peer, Lag: f.Lag, Stopped: f.Stopped,
			})
			ps.Lag += f.Lag
		}
		resp.Peers = append(resp.Peers, ps)
	}
	return resp, nil
}

// syncFeeds is what the gateway reads of the held feeds.
type syncFeeds interface {
	Heads() ([]crowsync.Head, error)
}

// handleSyncPause pauses or resumes replication: while paused, every peer is
// disconnected and refused. It is not persisted: a restart resumes.
func (s *Server) handleSyncPause(pause bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.cfg.SyncPause(pause)
		writeJSON(w, http.StatusOK, pausedResponse{Paused: pause})
	}
}

// pausedResponse is the answer of POST /v1/sync/pause and /v1/sync/resume.
type pausedResponse struct {
	Paused bool `json:"paused"`
}
