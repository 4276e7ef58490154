package app

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"slices"
	"strings"
	"time"

	"github.com/crow-sync/crow/reenroll"
	"github.com/crow-sync/crow/sync/transport"
)

// FeedStatus is one feed held here.
type FeedStatus struct {
	Feed       string `json:"feed"` // hex public key
	InstanceID string `json:"instance_id,omitempty"`
	Name       string `json:"name,omitempty"`
	Length     uint64 `json:"length"` // contiguous entries held here
	// Known is the longest head of this feed known here (held or announced
	// by a peer); Lag is Known - Length, the entries still to come.
	Known uint64 `json:"known"`
	Lag   uint64 `json:"lag"`
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
	Paused          bool             `json:"paused"` // refused and not dialled: every peer or this one is paused
	LastSeen        string           `json:"last_seen,omitempty"`
	Lag             uint64           `json:"lag"` // entries we miss from this peer, all feeds
	EntriesReceived uint64           `json:"entries_received"`
	EntriesSent     uint64           `json:"entries_sent"`
	Inflight        int              `json:"inflight"`
	Feeds           []PeerFeedStatus `json:"feeds"`
}

// SyncStatus is the answer of sync.status.
type SyncStatus struct {
	InstanceID string `json:"instance_id"`
	Paused     bool   `json:"paused"` // every peer
	// PausedPeers are the instances paused one by one (ids).
	PausedPeers []string     `json:"paused_peers"`
	Feeds       []FeedStatus `json:"feeds"`
	Peers       []PeerStatus `json:"peers"`
	// Forked is set while this instance's own feed is forked (it refuses
	// local writes; `crow instance reenroll` recovers it); Reenroll is the
	// last reenrollment of this data directory, if any.
	Forked   *OwnFork      `json:"forked,omitempty"`
	Reenroll *reenroll.Job `json:"reenroll,omitempty"`
}

// SyncPauseIn is the input of sync.pause and sync.resume.
type SyncPauseIn struct {
	ID string `json:"id,omitempty" maxlen:"200" desc:"Instance id (or the name of exactly one non-revoked instance) of the one peer to pause or resume; omitted: every peer."`
}

// Paused is the answer of sync.pause and sync.resume: what is paused now.
type Paused struct {
	Paused      bool     `json:"paused"`       // every peer
	PausedPeers []string `json:"paused_peers"` // instance ids paused one by one
}

var (
	SyncStatusOp = define(&Def[NoInput, SyncStatus]{
		Spec: Spec{Name: "sync.status", Method: "GET", Path: "/v1/sync/status", Tool: "crow_sync_status",
			Title: "Replication status", Tag: "sync", Summary: "Replication state: feeds held here, peers and their lag",
			Description: "Replication status of this instance: whether sync is paused (for every peer, and per peer), " +
				"the feeds held here with their lengths and the longest head known for each, and per peer whether it " +
				"is connected and how many entries this instance still lacks (lag).",
			Access: Peer, ReadOnly: true},
		Impl: (*App).syncStatus,
	})
	SyncPause = define(&Def[SyncPauseIn, Paused]{
		Spec: Spec{Name: "sync.pause", Method: "POST", Path: "/v1/sync/pause", Tag: "sync",
			Summary: "Pause replication with every peer, or with one instance (kept across restarts)",
			Description: "Pauses replication: with no id, every peer is disconnected and refused; with an instance " +
				"id (or unique name), only that peer. The pause is stored in this data directory (never " +
				"replicated) and holds across restarts until resumed. Answers what is paused now.",
			Idempotent: true},
		Impl: func(a *App, ctx context.Context, in SyncPauseIn) (Paused, error) { return a.setPaused(in.ID, true) },
	})
	SyncResume = define(&Def[SyncPauseIn, Paused]{
		Spec: Spec{Name: "sync.resume", Method: "POST", Path: "/v1/sync/resume", Tag: "sync",
			Summary: "Resume replication with every peer, or with one instance",
			Description: "Resumes replication: with no id, with every peer (lifting the pauses of single peers " +
				"too); with an instance id (or unique name), with that peer only. Answers what is paused now.",
			Idempotent: true},
		Impl: func(a *App, ctx context.Context, in SyncPauseIn) (Paused, error) { return a.setPaused(in.ID, false) },
	})
)

// setPaused pauses or resumes replication with one instance (idOrName) or
// every peer (""). While paused, a peer is disconnected and refused; the
// daemon persists the pause.
func (a *App) setPaused(idOrName string, p bool) (Paused, error) {
	if a.d.SyncPause == nil || a.d.SyncPaused == nil {
		return Paused{}, unavailable("replication")
	}
	id := ""
	if idOrName != "" {
		var err error
		if id, err = a.pausablePeer(idOrName); err != nil {
			return Paused{}, err
		}
	}
	if err := a.d.SyncPause(id, p); err != nil {
		return Paused{}, err
	}
	all, peers := a.d.SyncPaused()
	return Paused{Paused: all, PausedPeers: nonNil(peers)}, nil
}

// pausablePeer resolves an instance id, or else a unique instance name, to
// the id of a peer that may be paused: registered here, not this instance.
func (a *App) pausablePeer(idOrName string) (string, error) {
	if a.d.Instances == nil {
		return "", unavailable("instance registry")
	}
	id := ""
	if in, err := a.d.Instances.Get(idOrName); err == nil {
		id = in.ID
	} else {
		// A name names the live instances of that name (a revoked
		// predecessor of a re-enrolled machine does not count).
		var ids []string
		for _, in := range a.d.Instances.List() {
			if in.Name == idOrName && !in.Revoked() {
				ids = append(ids, in.ID)
			}
		}
		switch len(ids) {
		case 0:
			return "", Errorf(KindNotFound, "no instance %q is registered here (crow instance list names them)", idOrName)
		case 1:
			id = ids[0]
		default:
			return "", Errorf(KindInvalid, "%d instances are named %q; give the instance id (%s)", len(ids), idOrName, strings.Join(ids, ", "))
		}
	}
	if id == a.d.Self.InstanceID {
		return "", Errorf(KindInvalid, "%q is this instance; pause a peer (crow sync pause with no id pauses every peer)", idOrName)
	}
	return id, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
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
// or feeds (tests) reports none. A peer paused one by one that the node
// does not know (paused before this start) is listed from the registry.
func (a *App) syncStatus(ctx context.Context, _ NoInput) (SyncStatus, error) {
	resp := SyncStatus{InstanceID: a.d.Self.InstanceID, PausedPeers: []string{}, Feeds: []FeedStatus{}, Peers: []PeerStatus{}}
	if a.d.SyncPaused != nil {
		var peers []string
		resp.Paused, peers = a.d.SyncPaused()
		resp.PausedPeers = nonNil(peers)
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
			resp.Feeds = append(resp.Feeds, FeedStatus{Feed: hex.EncodeToString(h.Feed[:]), InstanceID: id, Name: name, Length: h.Length, Known: h.Length})
		}
	}
	if a.d.SyncNode != nil {
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
	}
	a.markPaused(&resp)
	knownHeads(&resp)
	return resp, nil
}

// markPaused flags the paused peers and lists those the node does not know.
func (a *App) markPaused(resp *SyncStatus) {
	listed := map[string]bool{}
	for i := range resp.Peers {
		p := &resp.Peers[i]
		p.Paused = resp.Paused || (p.InstanceID != "" && slices.Contains(resp.PausedPeers, p.InstanceID))
		listed[p.InstanceID] = true
	}
	if a.d.Instances == nil {
		return
	}
	for _, id := range resp.PausedPeers {
		if listed[id] {
			continue
		}
		in, err := a.d.Instances.Get(id)
		if err != nil {
			continue
		}
		ps := PeerStatus{InstanceID: in.ID, Name: in.Name, Paused: true, Feeds: []PeerFeedStatus{}}
		if pub, err := in.PublicKeyBytes(); err == nil {
			if pid, err := transport.PeerIDFromPublicKey(pub); err == nil {
				ps.PeerID = pid.String()
			}
		}
		resp.Peers = append(resp.Peers, ps)
	}
}

// knownHeads sets each feed's longest known head (and lag) from the heads
// the peers announced.
func knownHeads(resp *SyncStatus) {
	best := map[string]uint64{}
	for _, p := range resp.Peers {
		for _, f := range p.Feeds {
			best[f.Feed] = max(best[f.Feed], f.Peer)
		}
	}
	for i := range resp.Feeds {
		f := &resp.Feeds[i]
		f.Known = max(f.Length, best[f.Feed])
		f.Lag = f.Known - f.Length
	}
}
