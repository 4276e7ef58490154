package protocol

import (
	"bytes"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/crow-sync/crow/sync/wire"
)

// PeerID identifies a peer to the machine. It is opaque here: the machine
// only compares and orders ids, and never parses them. The driver chooses the
// encoding (package sync converts its transport's peer ids, which are libp2p
// ids, at the boundary), so this package links no network library.
type PeerID string

// Config tunes a Machine. Zero fields take the defaults.
type Config struct {
	// Self is the key of the feed this instance authors. It is never requested
	// from peers (a peer holding a longer own feed means a fork, see package feed).
	Self wire.FeedKey
	// MaxInflight bounds outstanding requests per peer (default 4).
	MaxInflight int
	// MaxBatchEntries bounds the entries asked per request (default 4096).
	MaxBatchEntries uint64
	// RequestTimeout disconnects a peer that leaves a request unanswered and
	// sends nothing else for that long (default 20s): a peer still streaming
	// data for earlier requests is not timed out, one that went silent (a
	// session whose stream died unnoticed) is dropped and redialled.
	RequestTimeout time.Duration
	// RejectHold is how long a feed is not asked again from a peer that sent a
	// range failing verification, unless it announces a new head (default 10s).
	RejectHold time.Duration
	// RetryHold is how long a feed is not asked again after a local store error
	// (of any peer, even one announcing a new head) or an Error answer (of that
	// peer; default 5s).
	RetryHold time.Duration
	// Backoff paces redials.
	Backoff Backoff
	// Rand returns a number in [0, 1) for jitter (default math/rand/v2).
	Rand func() float64
}

// Backoff is exponential backoff with jitter: after n consecutive failures the
// next dial waits d/2 + rand·d/2 where d = min(Max, Min·2^n).
type Backoff struct {
	Min time.Duration // default 500ms
	Max time.Duration // default 1m
}

// Delay returns the wait after n failures given r in [0, 1).
func (b Backoff) Delay(n int, r float64) time.Duration {
	d := b.Min
	for i := 0; i < n && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	return d/2 + time.Duration(r*float64(d/2))
}

// Outbound is a message to send.
type Outbound struct {
	Peer PeerID
	Msg  wire.Message
}

// Serve asks the driver to answer Request from Peer.
type Serve struct {
	Peer    PeerID
	Request wire.Request
}

// Store asks the driver to verify and store Range (received from Peer in answer
// to ReqID) and report the outcome with Stored.
type Store struct {
	Peer  PeerID
	ReqID uint64
	Range wire.Range
}

// Output is the work an input produced.
type Output struct {
	Store      []Store
	Serve      []Serve
	Send       []Outbound
	Disconnect []PeerID
	Dial       []PeerID
	Events     []Event
}

func (o *Output) empty() bool {
	return len(o.Store)+len(o.Serve)+len(o.Send)+len(o.Disconnect)+len(o.Dial)+len(o.Events) == 0
}

// Outcome classifies a store attempt.
type Outcome int

// Store outcomes.
const (
	// Stored: the range verified and is stored (possibly partly already held).
	Stored Outcome = iota
	// Rejected: verification failed (bad proof, signature or entry).
	Rejected
	// Forked: the range's head conflicts with a verified head of the feed.
	Forked
	// Failed: a local error (disk); not the peer's fault.
	Failed
	// Stale: the range is proven against a head the replica cannot use (the
	// peer's head is older than the one held and the nodes to re-prove the
	// range are missing). Not the peer's fault: the feed is asked from it
	// again when it announces a new head, or after RetryHold.
	Stale
)

// StoreResult is what the driver reports after a Store.
type StoreResult struct {
	Outcome Outcome
	// Head is the feed's verified local head after the store (Outcome Stored).
	Head wire.Head
	// Err describes the failure.
	Err error
}

// EventKind says what an Event reports.
type EventKind int

// Event kinds.
const (
	// EventRejected: a peer sent a range or message that failed verification
	// or broke the protocol (security event).
	EventRejected EventKind = iota + 1
	// EventFork: a feed forked; it stopped replicating with that peer.
	EventFork
	// EventTimeout: a peer left a request unanswered; it is disconnected.
	EventTimeout
	// EventPeerError: a peer answered a request with an Error.
	EventPeerError
	// EventStoreFailed: a local store error.
	EventStoreFailed
	// EventStale: a range was unusable against the head held (Outcome Stale).
	EventStale
)

func (k EventKind) String() string {
	switch k {
	case EventRejected:
		return "rejected"
	case EventFork:
		return "fork"
	case EventTimeout:
		return "timeout"
	case EventPeerError:
		return "peer_error"
	case EventStoreFailed:
		return "store_failed"
	case EventStale:
		return "stale"
	}
	return "unknown"
}

// Event is something the driver should log and count.
type Event struct {
	Kind   EventKind
	Peer   PeerID
	Feed   wire.FeedKey
	Detail string
	Err    error
}

type request struct {
	id    uint64
	feed  wire.FeedKey
	start uint64
	end   uint64
	sent  time.Time
	head  wire.Head // head the answer was proven against (set on Data)
}

type peerState struct {
	connected bool
	lastSeen  time.Time
	heads     map[wire.FeedKey]wire.Head // verified heads the peer announced
	inflight  map[uint64]*request
	hold      map[wire.FeedKey]time.Time // feed not asked before this time
	forked    map[wire.FeedKey]bool      // feed stopped with this peer
	received  uint64                     // entries received in Data
	sent      uint64                     // entries served
	// dialing
	known    bool
	dialing  bool
	failures int
	nextDial time.Time
	// greeted: the peer's Heads arrived in this session. A session that
	// ends before that (a remote gater closing a connection the handshake
	// let through, e.g. because this instance was revoked there) counts as
	// a failed dial, so redials back off instead of hammering the peer.
	greeted bool
}

// Machine is the replication state machine. Not safe for concurrent use.
type Machine struct {
	cfg   Config
	local map[wire.FeedKey]wire.Head
	peers map[PeerID]*peerState
	busy  map[wire.FeedKey]PeerID // feed → peer it is being fetched from
	// storeHold: a feed whose range failed to store here (a full disk) is asked of no
	// peer before this time; unlike a peer's hold, a new head does not lift it.
	storeHold map[wire.FeedKey]time.Time
	nextID    uint64
	out       Output
}

// New returns a Machine.
func New(cfg Config) *Machine {
	if cfg.MaxInflight <= 0 {
		cfg.MaxInflight = 4
	}
	if cfg.MaxBatchEntries == 0 {
		cfg.MaxBatchEntries = 4096
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 20 * time.Second
	}
	if cfg.RejectHold <= 0 {
		cfg.RejectHold = 10 * time.Second
	}
	if cfg.RetryHold <= 0 {
		cfg.RetryHold = 5 * time.Second
	}
	if cfg.Backoff.Min <= 0 {
		cfg.Backoff.Min = 500 * time.Millisecond
	}
	if cfg.Backoff.Max < cfg.Backoff.Min {
		cfg.Backoff.Max = max(time.Minute, cfg.Backoff.Min)
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Float64
	}
	return &Machine{
		cfg:   cfg,
		local: map[wire.FeedKey]wire.Head{},
		peers: map[PeerID]*peerState{},
		busy:  map[wire.FeedKey]PeerID{},

		storeHold: map[wire.FeedKey]time.Time{},
	}
}

// Ready returns the accumulated output and clears it.
func (m *Machine) Ready() Output {
	o := m.out
	m.out = Output{}
	return o
}

// HasReady reports whether Ready has work.
func (m *Machine) HasReady() bool { return !m.out.empty() }

func (m *Machine) peer(p PeerID) *peerState {
	ps := m.peers[p]
	if ps == nil {
		ps = &peerState{
			heads:    map[wire.FeedKey]wire.Head{},
			inflight: map[uint64]*request{},
			hold:     map[wire.FeedKey]time.Time{},
			forked:   map[wire.FeedKey]bool{},
		}
		m.peers[p] = ps
	}
	return ps
}

func (m *Machine) sortedPeers() []PeerID {
	ids := make([]PeerID, 0, len(m.peers))
	for p := range m.peers {
		ids = append(ids, p)
	}
	slices.Sort(ids)
	return ids
}

func sortedFeeds[V any](set map[wire.FeedKey]V) []wire.FeedKey {
	keys := make([]wire.FeedKey, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b wire.FeedKey) int { return bytes.Compare(a[:], b[:]) })
	return keys
}

// SetPeers sets the peers to keep connected (registered, not revoked). Peers
// no longer listed are disconnected.
func (m *Machine) SetPeers(now time.Time, peers []PeerID) {
	want := map[PeerID]bool{}
	for _, p := range peers {
		want[p] = true
	}
	for _, p := range m.sortedPeers() {
		ps := m.peers[p]
		if ps.known && !want[p] {
			ps.known = false
			if ps.connected {
				m.out.Disconnect = append(m.out.Disconnect, p)
			}
		}
	}
	for _, p := range peers {
		ps := m.peer(p)
		if !ps.known {
			ps.known = true
			ps.nextDial = now
		}
	}
	m.dials(now)
}

// LocalHead reports a verified local head (initial state, an append to the own
// feed, or a stored replica range). A longer head is announced to every
// connected peer.
func (m *Machine) LocalHead(now time.Time, h wire.Head) {
	m.advanceLocal(h, "")
	m.schedule(now)
}

func (m *Machine) advanceLocal(h wire.Head, from PeerID) {
	if cur, ok := m.local[h.Feed]; ok && cur.Length >= h.Length {
		return
	}
	m.local[h.Feed] = h
	for _, p := range m.sortedPeers() {
		ps := m.peers[p]
		if !ps.connected || p == from {
			continue
		}
		if ph, ok := ps.heads[h.Feed]; ok && ph.Length >= h.Length {
			continue
		}
		m.out.Send = append(m.out.Send, Outbound{Peer: p, Msg: &wire.Heads{Heads: []wire.Head{h}}})
	}
}

// PeerUp reports a new session with p: the machine announces all held heads.
func (m *Machine) PeerUp(now time.Time, p PeerID) {
	ps := m.peer(p)
	ps.connected = true
	ps.dialing = false
	ps.greeted = false
	ps.lastSeen = now
	clear(ps.hold) // a new session gets a fresh chance
	heads := make([]wire.Head, 0, len(m.local))
	for _, k := range sortedFeeds(m.local) {
		heads = append(heads, m.local[k])
	}
	m.out.Send = append(m.out.Send, Outbound{Peer: p, Msg: &wire.Heads{Heads: heads}})
	m.schedule(now)
}

// PeerDown reports the end of p's session: its requests are forgotten (and
// their feeds may be fetched from other peers) and a redial is scheduled.
func (m *Machine) PeerDown(now time.Time, p PeerID) {
	ps := m.peers[p]
	if ps == nil || !ps.connected {
		return
	}
	ps.connected = false
	ps.lastSeen = now
	if !ps.greeted {
		ps.failures++
	}
	for id, r := range ps.inflight {
		m.release(r.feed, p)
		delete(ps.inflight, id)
	}
	if ps.known {
		ps.nextDial = now.Add(m.cfg.Backoff.Delay(ps.failures, m.cfg.Rand()))
	}
	m.schedule(now)
}

func (m *Machine) release(f wire.FeedKey, p PeerID) {
	if m.busy[f] == p {
		delete(m.busy, f)
	}
}

// PeerHeads reports heads p announced, each already verified by package feed.
func (m *Machine) PeerHeads(now time.Time, p PeerID, heads []wire.Head) {
	ps := m.peers[p]
	if ps == nil || !ps.connected {
		return
	}
	ps.lastSeen = now
	ps.greeted = true
	ps.failures = 0
	for _, h := range heads {
		if cur, ok := ps.heads[h.Feed]; ok && cur.Length >= h.Length {
			continue
		}
		ps.heads[h.Feed] = h
		delete(ps.hold, h.Feed) // a new head deserves a new try
	}
	m.schedule(now)
}

// Receive reports a Request, Data or Error message from p. Heads go through
// PeerHeads after verification.
func (m *Machine) Receive(now time.Time, p PeerID, msg wire.Message) {
	ps := m.peers[p]
	if ps == nil || !ps.connected {
		return
	}
	ps.lastSeen = now
	switch msg := msg.(type) {
	case *wire.Request:
		m.out.Serve = append(m.out.Serve, Serve{Peer: p, Request: *msg})
	case *wire.Data:
		m.receiveData(now, p, ps, msg)
	case *wire.Error:
		r := ps.inflight[msg.ReqID]
		if r == nil {
			m.reject(p, wire.FeedKey{}, "error answer to no request", nil)
			return
		}
		delete(ps.inflight, r.id)
		m.release(r.feed, p)
		ps.hold[r.feed] = now.Add(m.cfg.RetryHold)
		m.out.Events = append(m.out.Events, Event{Kind: EventPeerError, Peer: p, Feed: r.feed,
			Detail: msg.Code.String() + ": " + msg.Message})
		m.schedule(now)
	default:
		m.reject(p, wire.FeedKey{}, "unexpected message", nil)
	}
}

func (m *Machine) reject(p PeerID, f wire.FeedKey, detail string, err error) {
	m.out.Events = append(m.out.Events, Event{Kind: EventRejected, Peer: p, Feed: f, Detail: detail, Err: err})
}

func (m *Machine) receiveData(now time.Time, p PeerID, ps *peerState, d *wire.Data) {
	r := ps.inflight[d.ReqID]
	if r == nil {
		m.reject(p, d.Head.Feed, "data answering no request", nil)
		return
	}
	n := uint64(len(d.Entries))
	if d.Head.Feed != r.feed || d.Start != r.start || n == 0 || n > r.end-r.start || d.End() > d.Head.Length {
		delete(ps.inflight, r.id)
		m.release(r.feed, p)
		ps.hold[r.feed] = now.Add(m.cfg.RejectHold)
		m.reject(p, r.feed, "data does not match its request", nil)
		m.schedule(now)
		return
	}
	ps.received += n
	r.head = d.Head
	m.out.Store = append(m.out.Store, Store{Peer: p, ReqID: d.ReqID, Range: d.Range})
}

// Stored reports the outcome of a Store.
func (m *Machine) Stored(now time.Time, p PeerID, reqID uint64, res StoreResult) {
	ps := m.peers[p]
	if ps == nil {
		return
	}
	r := ps.inflight[reqID]
	if r == nil {
		return
	}
	delete(ps.inflight, reqID)
	m.release(r.feed, p)
	switch res.Outcome {
	case Stored:
		// The range verified against r.head, so the peer's head is now verified.
		if ph, ok := ps.heads[r.feed]; !ok || ph.Length < r.head.Length {
			ps.heads[r.feed] = r.head
		}
		m.advanceLocal(res.Head, p)
	case Rejected:
		ps.hold[r.feed] = now.Add(m.cfg.RejectHold)
		m.reject(p, r.feed, "range failed verification", res.Err)
	case Forked:
		ps.forked[r.feed] = true
		m.out.Events = append(m.out.Events, Event{Kind: EventFork, Peer: p, Feed: r.feed, Err: res.Err})
	case Stale:
		ps.hold[r.feed] = now.Add(m.cfg.RetryHold)
		m.out.Events = append(m.out.Events, Event{Kind: EventStale, Peer: p, Feed: r.feed, Err: res.Err})
	default:
		// The cause is local (a full disk): asking again at every new head of any
		// peer would only fail again, so the feed waits RetryHold.
		ps.hold[r.feed] = now.Add(m.cfg.RetryHold)
		m.storeHold[r.feed] = now.Add(m.cfg.RetryHold)
		m.out.Events = append(m.out.Events, Event{Kind: EventStoreFailed, Peer: p, Feed: r.feed, Err: res.Err})
	}
	m.schedule(now)
}

// HeadForked reports that a head p announced conflicts with a verified head
// (package feed said fork): that feed stops with p.
func (m *Machine) HeadForked(now time.Time, p PeerID, f wire.FeedKey, err error) {
	ps := m.peer(p)
	if !ps.forked[f] {
		ps.forked[f] = true
		m.out.Events = append(m.out.Events, Event{Kind: EventFork, Peer: p, Feed: f, Err: err})
	}
}

// Served reports that n entries were sent to p in answer to a request.
func (m *Machine) Served(p PeerID, n int) {
	if ps := m.peers[p]; ps != nil {
		ps.sent += uint64(n)
	}
}

// DialDone reports the end of a Dial; err nil means a session exists (its
// PeerUp is reported separately).
func (m *Machine) DialDone(now time.Time, p PeerID, err error) {
	ps := m.peers[p]
	if ps == nil {
		return
	}
	ps.dialing = false
	if err == nil {
		return // failures are reset when the peer's Heads arrive (see greeted)
	}
	if !ps.connected {
		ps.failures++
		ps.nextDial = now.Add(m.cfg.Backoff.Delay(ps.failures, m.cfg.Rand()))
	}
}

// Tick advances time: request timeouts and redials.
func (m *Machine) Tick(now time.Time) {
	for _, p := range m.sortedPeers() {
		ps := m.peers[p]
		if !ps.connected {
			continue
		}
		// In request order, so that the event names the oldest overdue
		// request whatever the map's order.
		for _, id := range slices.Sorted(maps.Keys(ps.inflight)) {
			r := ps.inflight[id]
			last := r.sent
			if ps.lastSeen.After(last) {
				last = ps.lastSeen
			}
			if now.Sub(last) >= m.cfg.RequestTimeout {
				m.out.Events = append(m.out.Events, Event{Kind: EventTimeout, Peer: p, Feed: r.feed})
				m.out.Disconnect = append(m.out.Disconnect, p)
				break
			}
		}
	}
	m.dials(now)
	m.schedule(now)
}

func (m *Machine) dials(now time.Time) {
	for _, p := range m.sortedPeers() {
		ps := m.peers[p]
		if ps.known && !ps.connected && !ps.dialing && !now.Before(ps.nextDial) {
			ps.dialing = true
			m.out.Dial = append(m.out.Dial, p)
		}
	}
}

// schedule issues requests for every feed a connected peer has more of.
func (m *Machine) schedule(now time.Time) {
	for _, p := range m.sortedPeers() {
		ps := m.peers[p]
		if !ps.connected {
			continue
		}
		for _, f := range sortedFeeds(ps.heads) {
			if len(ps.inflight) >= m.cfg.MaxInflight {
				break
			}
			if f == m.cfg.Self || ps.forked[f] || now.Before(ps.hold[f]) || now.Before(m.storeHold[f]) {
				continue
			}
			if _, busy := m.busy[f]; busy {
				continue
			}
			have := m.local[f].Length
			theirs := ps.heads[f].Length
			if theirs <= have {
				continue
			}
			m.nextID++
			r := &request{id: m.nextID, feed: f, start: have, end: min(theirs, have+m.cfg.MaxBatchEntries), sent: now}
			ps.inflight[r.id] = r
			m.busy[f] = p
			m.out.Send = append(m.out.Send, Outbound{Peer: p,
				Msg: &wire.Request{ReqID: r.id, Feed: f, Start: r.start, End: r.end}})
		}
	}
}
