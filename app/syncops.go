package app

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"time"

	"github.com/crow-sync/crow/reenroll"
)

// FeedStatus is one feed held here.
type FeedStatus struct {
	Feed       string `json:"feed"` // hex public key
	InstanceID string `json:"instance_id,omitempty"`
	Name       string `json:"name,omitempty"`
	Length     uint64 `json:"length"` // contiguous entries held here
}

// PeerFeedStatus compares one feed between this instance and a peer.
type PeerFeedStatus struct {
	Feed       string `json:"feed"`
	InstanceID string `json:"instance_id,omitempty"`
	Local      uint64 `json:"local"`
	Peer       uint64 `json:"peer"`
	Lag        uint64 `json:"lag"`
	Stopped    bool   `json:"stopped,omitempty"`
}

// PeerStatus is the replication state with one peer.
type PeerStatus struct {
	InstanceID      string           `json:"instance_id,omitempty"`
	Name            string           `json:"name,omitempty"`
	PeerID          string           `json:"peer_id"`
	Connected       bool             `json:"connected"`
	LastSeen        string           `json:"last_seen,omitempty"`
	Lag             uint64           `json:"lag"` // entries we miss from this peer, all feeds
	EntriesReceived uint64           `json:"entries_received"`
	EntriesSent     uint64           `json:"entries_sent"`
	Inflight        int              `json:"inflight"`
	Feeds           []PeerFeedStatus `json:"feeds"`
}

// SyncStatus is the answer of sync.status.
type SyncStatus struct {
	InstanceID string       `json:"instance_id"`
	Paused     bool         `json:"paused"`
	Feeds      []FeedStatus `json:"feeds"`
	Peers      []PeerStatus `json:"peers"`
	// Forked is set while this instance's own feed is forked (it refuses
	// local writes; `crow instance reenroll` recovers it); Reenroll is the
	// last reenrollment of this data directory, if any.
	Forked   *OwnFork      `json:"forked,omitempty"`
	Reenroll *reenroll.Job `json:"reenroll,omitempty"`
}

// Paused is the answer of sync.pause and sync.resume.
type Paused struct {
	Paused bool `json:"paused"`
}

var (
	SyncStatusOp = define(&Def[NoInput, SyncStatus]{
		Spec: Spec{Name: "sync.status", Method: "GET", Path: "/v1/sync/status", Tool: "crow_sync_status",
			Title: "Replication status", Tag: "sync", Summary: "Replication state: feeds held here, peers and their lag",
			Description: "Replication status of this instance: whether sync is paused, the feeds held here with their " +
				"lengths, and per peer whether it is connected and how many entries this instance still lacks (lag).",
			Access: Peer, ReadOnly: true},
		Impl: (*App).syncStatus,
	})
	SyncPause = define(&Def[NoInput, Paused]{
		Spec: Spec{Name: "sync.pause", Method: "POST", Path: "/v1/sync/pause", Tag: "sync",
			Summary: "Pause replication (until resumed or restarted)"},
		Impl: func(a *App, ctx context.Context, _ NoInput) (Paused, error) { return a.setPaused(true) },
	})
	SyncResume = define(&Def[NoInput, Paused]{
		Spec: Spec{Name: "sync.resume", Method: "POST", Path: "/v1/sync/resume", Tag: "sync", Summary: "Resume replication"},
		Impl: func(a *App, ctx context.Context, _ NoInput) (Paused, error) { return a.setPaused(false) },
	})
)

// setPaused pauses or resumes replication: while paused, every peer is
// disconnected and refused. It is not persisted: a restart resumes.
func (a *App) setPaused(p bool) (Paused, error) {
	if a.d.SyncPause == nil {
		return Paused{}, unavailable("replication")
	}
	a.d.SyncPause(p)
	return Paused{Paused: p}, nil
}

// instanceOfKey names the instance whose feed (or peer) key is pub.
func (a *App) instanceOfKey(pub ed25519.PublicKey) (id, name string) {
	if a.d.Instances == nil {
		return "", ""
	}
	in, err := a.d.Instances.LookupKey(pub)
	if err != nil {
		return "", ""
	}
	return in.ID, in.Name
}

// syncStatus assembles the replication status. An App without a sync node
// or feeds (tests) reports none.
func (a *App) syncStatus(ctx context.Context, _ NoInput) (SyncStatus, error) {
	resp := SyncStatus{InstanceID: a.d.Self.InstanceID, Feeds: []FeedStatus{}, Peers: []PeerStatus{}}
	if a.d.SyncPaused != nil {
		resp.Paused = a.d.SyncPaused()
	}
	if err := a.ownFork(&resp); err != nil {
		return resp, err
	}
	if a.d.SyncFeeds != nil {
		heads, err := a.d.SyncFeeds.Heads()
		if err != nil {
			return resp, err
		}
		for _, h := range heads {
			id, name := a.instanceOfKey(h.Feed[:])
			resp.Feeds = append(resp.Feeds, FeedStatus{Feed: hex.EncodeToString(h.Feed[:]), InstanceID: id, Name: name, Length: h.Length})
		}
	}
	if a.d.SyncNode == nil {
		return resp, nil
	}
	peers, err := a.d.SyncNode.Status(ctx)
	if err != nil {
		return resp, err
	}
	for _, p := range peers {
		ps := PeerStatus{
			PeerID: p.Peer.String(), Connected: p.Connected, EntriesReceived: p.EntriesReceived,
			EntriesSent: p.EntriesSent, Inflight: p.Inflight, Feeds: []PeerFeedStatus{},
		}
		if !p.LastSeen.IsZero() {
			ps.LastSeen = p.LastSeen.UTC().Format(time.RFC3339)
		}
		if pub, err := p.Peer.PublicKey(); err == nil {
			ps.InstanceID, ps.Name = a.instanceOfKey(pub)
		}
		for _, f := range p.Feeds {
			id, _ := a.instanceOfKey(f.Feed[:])
			ps.Feeds = append(ps.Feeds, PeerFeedStatus{
				Feed: hex.EncodeToString(f.Feed[:]), InstanceID: id, Local: f.Local, Peer: f.Peer, Lag: f.Lag, Stopped: f.Stopped,
			})
			ps.Lag += f.Lag
		}
		resp.Peers = append(resp.Peers, ps)
	}
	return resp, nil
}
