package protocol

import (
	"time"

	"github.com/crow-sync/crow/sync/wire"
)

// PeerStatus is the replication state with one peer.
type PeerStatus struct {
	Peer      PeerID
	Connected bool
	// LastSeen is the last time the peer connected, disconnected or sent a message.
	LastSeen time.Time
	// EntriesReceived counts entries that arrived from the peer in Data messages;
	// EntriesSent counts entries served to it. Since start.
	EntriesReceived uint64
	EntriesSent     uint64
	// Inflight is the number of outstanding requests to the peer.
	Inflight int
	// DialFailures counts consecutive failed dials.
	DialFailures int
	Feeds        []FeedStatus
}

// FeedStatus compares one feed between us and a peer.
type FeedStatus struct {
	Feed wire.FeedKey
	// Local is our verified length; Peer the length the peer last announced
	// (verified), 0 if it did not announce the feed.
	Local, Peer uint64
	// Lag is how many entries we miss from the peer: max(Peer-Local, 0).
	Lag uint64
	// Stopped is true when the feed forked with this peer.
	Stopped bool
}

// Status returns a snapshot, peers sorted by id and feeds by key.
func (m *Machine) Status() []PeerStatus {
	out := make([]PeerStatus, 0, len(m.peers))
	for _, p := range m.sortedPeers() {
		ps := m.peers[p]
		st := PeerStatus{
			Peer: p, Connected: ps.connected, LastSeen: ps.lastSeen,
			EntriesReceived: ps.received, EntriesSent: ps.sent,
			Inflight: len(ps.inflight), DialFailures: ps.failures,
		}
		feeds := map[wire.FeedKey]bool{}
		for f := range m.local {
			feeds[f] = true
		}
		for f := range ps.heads {
			feeds[f] = true
		}
		for _, f := range sortedFeeds(feeds) {
			fs := FeedStatus{Feed: f, Local: m.local[f].Length, Peer: ps.heads[f].Length, Stopped: ps.forked[f]}
			if fs.Peer > fs.Local {
				fs.Lag = fs.Peer - fs.Local
			}
			st.Feeds = append(st.Feeds, fs)
		}
		out = append(out, st)
	}
	return out
}

// Local returns our verified head of f.
func (m *Machine) Local(f wire.FeedKey) (wire.Head, bool) {
	h, ok := m.local[f]
	return h, ok
}
