package sync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	stdsync "sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/crow-sync/crow/sync/protocol"
	"github.com/crow-sync/crow/sync/transport"
	"github.com/crow-sync/crow/sync/wire"
)

// PeerID identifies an instance on the sync network.
type PeerID = transport.PeerID

// PeerStatus is the replication state with one peer (GET /v1/sync/status):
// protocol.PeerStatus with the peer as a transport id (see [Node.Status]).
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

// FeedStatus compares one feed between this instance and a peer.
type FeedStatus = protocol.FeedStatus

// Event is a notable replication event (rejection, fork, timeout, ...):
// protocol.Event with the peer as a transport id.
type Event struct {
	Kind   protocol.EventKind
	Peer   PeerID
	Feed   FeedKey
	Detail string
	Err    error
}

// The machine's peer ids are opaque strings (package protocol links no
// network library); these two convert at the boundary, losslessly.
func toMachine(p PeerID) protocol.PeerID { return protocol.PeerID(p) }

func fromMachine(p protocol.PeerID) PeerID { return PeerID(p) }

// Peer is an instance to keep connected: its peer id and sync multiaddrs.
type Peer struct {
	ID    PeerID
	Addrs []string
}

// Config configures a Node.
type Config struct {
	Transport transport.Transport // required
	Feeds     Feeds               // required
	// Self is the key of the feed this instance authors.
	Self FeedKey
	// Clock defaults to SystemClock.
	Clock Clock
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Registerer receives the Node's metrics (nil: not registered).
	Registerer prometheus.Registerer
	// Protocol tunes the state machine (Self is set from Self above).
	Protocol protocol.Config
	// TickInterval paces timeouts and redials (default 1s).
	TickInterval time.Duration
	// MaxBatchBytes bounds the entry bytes of one served range (default 1 MiB).
	MaxBatchBytes int
	// DialTimeout bounds one dial (default 10s).
	DialTimeout time.Duration
	// OnEvent, if set, is called from the Node's goroutine for every event
	// (forks above all, which the operator must hear about). It must not block.
	OnEvent func(Event)
	// OnTraffic, if set, is called from the Node's goroutine each time it
	// stores a range received from a peer or serves one: replication is
	// foreground work, which the daemon's background workers let pass
	// (clock.Quiet). It must not block.
	OnTraffic func()
	// OnCatchUp, if set, is called from the Node's goroutine after it serves
	// a range that ends before the head it was read against: the peer is
	// catching up and will ask for the rest, so the daemon holds its
	// background work back until it has (clock.Quiet.TouchFor) instead of
	// starting it in the gaps between the peer's requests. It must not block.
	OnCatchUp func()
}

// ErrStopped is returned by Node methods once Serve has returned.
var ErrStopped = errors.New("sync: node stopped")

// Node replicates feeds with peers: it owns a protocol.Machine and drives it
// from the goroutine running Serve.
type Node struct {
	cfg   Config
	log   *slog.Logger
	met   *metrics
	calls chan func()   // run on the loop goroutine
	done  chan struct{} // closed when Serve returns
	once  stdsync.Once
	// status is the peer status the loop published at the end of its last
	// iteration (nil before Serve runs); Status answers from it while the loop
	// is busy. The slices it points to are never modified.
	status atomic.Pointer[[]PeerStatus]

	// Owned by the loop goroutine.
	m       *protocol.Machine
	tracker transport.Tracker
	addrs   map[PeerID][]string
	dialed  chan dialResult
}

type dialResult struct {
	peer PeerID
	err  error
}

// NewNode validates cfg and returns a Node; call Serve to run it.
func NewNode(cfg Config) (*Node, error) {
	if cfg.Transport == nil || cfg.Feeds == nil {
		return nil, errors.New("new sync node: Transport and Feeds are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.TickInterval <= 0 {
		cfg.TickInterval = time.Second
	}
	if cfg.MaxBatchBytes <= 0 {
		cfg.MaxBatchBytes = 1 << 20
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 10 * time.Second
	}
	met, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("new sync node: registering metrics: %w", err)
	}
	pc := cfg.Protocol
	pc.Self = cfg.Self
	return &Node{
		cfg:    cfg,
		log:    cfg.Logger.With("component", "sync"),
		met:    met,
		calls:  make(chan func()),
		done:   make(chan struct{}),
		m:      protocol.New(pc),
		addrs:  map[PeerID][]string{},
		dialed: make(chan dialResult),
	}, nil
}

// call runs f on the loop goroutine and waits for it.
func (n *Node) call(ctx context.Context, f func()) error {
	ran := make(chan struct{})
	select {
	case n.calls <- func() { f(); close(ran) }:
	case <-ctx.Done():
		return ctx.Err()
	case <-n.done:
		return ErrStopped
	}
	<-ran
	return nil
}

// SetPeers sets the instances to keep connected (registered, not revoked,
// not self). Peers dropped from the list are disconnected. It blocks until the
// running Serve took the list.
func (n *Node) SetPeers(ctx context.Context, peers []Peer) error {
	return n.call(ctx, func() {
		ids := make([]protocol.PeerID, 0, len(peers))
		n.addrs = map[PeerID][]string{}
		for _, p := range peers {
			ids = append(ids, toMachine(p.ID))
			n.addrs[p.ID] = append([]string(nil), p.Addrs...)
		}
		n.m.SetPeers(n.cfg.Clock.Now(), ids)
	})
}

// Revoke disconnects p at once and stops dialing it. The Admitter must already
// refuse p so that it cannot come back.
func (n *Node) Revoke(ctx context.Context, p PeerID) error {
	if err := n.cfg.Transport.Disconnect(p); err != nil {
		return fmt.Errorf("revoking %s: %w", p, err)
	}
	return n.call(ctx, func() {
		delete(n.addrs, p)
		var ids []protocol.PeerID
		for id := range n.addrs {
			ids = append(ids, toMachine(id))
		}
		n.m.SetPeers(n.cfg.Clock.Now(), ids)
	})
}

// statusWait bounds how long Status waits for a busy loop before answering
// from the status the loop published last. The loop stores every received
// range (verify and fsync) and serves every requested one itself, so during a
// large catch-up one pass can take hundreds of milliseconds; a status page or
// a metrics scrape should not.
const statusWait = 5 * time.Millisecond

// Status returns the per-peer replication state. It asks the loop, so the
// answer includes everything the loop has done; if the loop is busy for
// longer than statusWait it returns the state as of the end of the loop's last
// pass instead (at most one pass old).
func (n *Node) Status(ctx context.Context) ([]PeerStatus, error) {
	select {
	case <-n.done:
		return nil, ErrStopped
	default:
	}
	var st []PeerStatus
	if n.status.Load() == nil { // Serve has not run a pass yet
		err := n.call(ctx, func() { st = n.peerStatus() })
		return st, err
	}
	t := n.cfg.Clock.NewTimer(statusWait)
	defer t.Stop()
	ran := make(chan struct{})
	select {
	case n.calls <- func() { st = n.peerStatus(); close(ran) }:
		<-ran
		return st, nil
	case <-t.C():
		return slices.Clone(*n.status.Load()), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-n.done:
		return nil, ErrStopped
	}
}

// peerStatus converts the machine's status. Loop goroutine only.
func (n *Node) peerStatus() []PeerStatus {
	var st []PeerStatus
	for _, ps := range n.m.Status() {
		st = append(st, PeerStatus{
			Peer: fromMachine(ps.Peer), Connected: ps.Connected, LastSeen: ps.LastSeen,
			EntriesReceived: ps.EntriesReceived, EntriesSent: ps.EntriesSent,
			Inflight: ps.Inflight, DialFailures: ps.DialFailures, Feeds: ps.Feeds,
		})
	}
	return st
}

// publishStatus stores the status Status answers with while the loop is busy.
// Loop goroutine only.
func (n *Node) publishStatus() {
	st := n.peerStatus()
	n.status.Store(&st)
}

// Serve runs the node until ctx ends; it returns ctx's error. It may be called
// once. It does not close the transport (its creator does).
func (n *Node) Serve(ctx context.Context) error {
	started := false
	n.once.Do(func() { started = true })
	if !started {
		return errors.New("sync node: Serve called twice")
	}
	defer close(n.done)

	ctx, cancel := context.WithCancel(ctx)
	var dials stdsync.WaitGroup // dial goroutines started by this loop
	defer dials.Wait()
	defer cancel()

	ticker := n.cfg.Clock.NewTicker(n.cfg.TickInterval)
	defer ticker.Stop()

	if err := n.refreshHeads(); err != nil {
		return fmt.Errorf("sync node: reading heads: %w", err)
	}
	n.process(ctx, &dials)
	n.publishStatus()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev := <-n.cfg.Transport.Events():
			for _, e := range n.tracker.Accept(ev) {
				n.handleEvent(e)
			}
		case <-n.cfg.Feeds.Changed():
			if err := n.refreshHeads(); err != nil {
				n.log.Error("reading feed heads", "err", err)
			}
		case now := <-ticker.C():
			n.m.Tick(now)
		case r := <-n.dialed:
			if r.err != nil {
				n.log.Debug("dial failed", "peer", r.peer, "err", r.err)
			}
			n.m.DialDone(n.cfg.Clock.Now(), toMachine(r.peer), r.err)
		case f := <-n.calls:
			f()
		}
		n.process(ctx, &dials)
		n.publishStatus()
	}
}

func (n *Node) refreshHeads() error {
	heads, err := n.cfg.Feeds.Heads()
	if err != nil {
		return err
	}
	now := n.cfg.Clock.Now()
	for _, h := range heads {
		n.m.LocalHead(now, h)
	}
	return nil
}

func (n *Node) handleEvent(ev transport.Event) {
	now := n.cfg.Clock.Now()
	switch ev.Kind {
	case transport.EventUp:
		n.met.connected.Inc()
		n.log.Info("peer connected", "peer", ev.Peer)
		n.m.PeerUp(now, toMachine(ev.Peer))
	case transport.EventDown:
		n.met.connected.Dec()
		n.log.Info("peer disconnected", "peer", ev.Peer)
		n.m.PeerDown(now, toMachine(ev.Peer))
	case transport.EventMessage:
		msg, err := wire.DecodeOwned(ev.Payload) // the payload is the receiver's (transport.Event)
		if err != nil {
			n.security(ev.Peer, FeedKey{}, "protocol", "undecodable message", err)
			_ = n.cfg.Transport.Disconnect(ev.Peer)
			return
		}
		if hs, ok := msg.(*wire.Heads); ok {
			n.m.PeerHeads(now, toMachine(ev.Peer), n.verifyHeads(now, ev.Peer, hs.Heads))
			return
		}
		n.m.Receive(now, toMachine(ev.Peer), msg)
	}
}

// verifyHeads keeps the announced heads that package feed verifies.
func (n *Node) verifyHeads(now time.Time, p PeerID, heads []Head) []Head {
	ok := make([]Head, 0, len(heads))
	for _, h := range heads {
		v, err := n.cfg.Feeds.VerifyHead(h)
		switch {
		case err == nil:
			ok = append(ok, v)
		case errors.Is(err, ErrUnknownFeed):
			n.log.Debug("ignoring head of a feed not replicated", "peer", p, "feed", h.Feed.Short())
		case errors.Is(err, ErrFork):
			n.m.HeadForked(now, toMachine(p), h.Feed, err)
		default:
			n.security(p, h.Feed, "head", "announced head failed verification", err)
		}
	}
	return ok
}

func (n *Node) security(p PeerID, f FeedKey, kind, msg string, err error) {
	n.met.rejected.WithLabelValues(kind).Inc()
	n.log.Warn("security: "+msg, "peer", p, "feed", f.Short(), "err", err)
	if n.cfg.OnEvent != nil {
		n.cfg.OnEvent(Event{Kind: protocol.EventRejected, Peer: p, Feed: f, Detail: msg, Err: err})
	}
}

// process carries out the machine's output until it has none (see
// protocol's caller contract: store, serve, then send, disconnect, dial).
func (n *Node) process(ctx context.Context, dials *stdsync.WaitGroup) {
	for n.m.HasReady() {
		out := n.m.Ready()
		for _, s := range out.Store {
			n.m.Stored(n.cfg.Clock.Now(), s.Peer, s.ReqID, n.store(s))
		}
		for _, s := range out.Serve {
			n.serve(s)
		}
		for _, o := range out.Send {
			n.send(fromMachine(o.Peer), o.Msg)
		}
		for _, p := range out.Disconnect {
			if err := n.cfg.Transport.Disconnect(fromMachine(p)); err != nil {
				n.log.Debug("disconnecting", "peer", fromMachine(p), "err", err)
			}
		}
		for _, p := range out.Dial {
			n.dial(ctx, dials, fromMachine(p))
		}
		for _, ev := range out.Events {
			n.event(ev)
		}
	}
}

func (n *Node) store(s protocol.Store) protocol.StoreResult {
	count := len(s.Range.Entries)
	n.traffic()
	began := time.Now()
	head, err := n.cfg.Feeds.VerifyAndStore(s.Range)
	n.log.Debug("range stored", "feed", s.Range.Head.Feed.Short(), "start", s.Range.Start, "entries", count, "took", time.Since(began), "err", err)
	n.met.received.WithLabelValues(fromMachine(s.Peer).String()).Add(float64(count))
	switch {
	case err == nil:
		return protocol.StoreResult{Outcome: protocol.Stored, Head: head}
	case errors.Is(err, ErrFork):
		return protocol.StoreResult{Outcome: protocol.Forked, Err: err}
	case errors.Is(err, ErrRejected), errors.Is(err, ErrUnknownFeed):
		return protocol.StoreResult{Outcome: protocol.Rejected, Err: err}
	case errors.Is(err, ErrStale):
		return protocol.StoreResult{Outcome: protocol.Stale, Err: err}
	default:
		return protocol.StoreResult{Outcome: protocol.Failed, Err: err}
	}
}

func (n *Node) serve(s protocol.Serve) {
	n.traffic()
	req, p := s.Request, fromMachine(s.Peer)
	if req.End <= req.Start {
		n.send(p, &wire.Error{ReqID: req.ReqID, Code: wire.CodeBadRequest, Message: "empty range"})
		return
	}
	end := req.End
	if max := n.batchEntries(); end-req.Start > max {
		end = req.Start + max
	}
	began := time.Now()
	r, err := n.cfg.Feeds.ReadRange(req.Feed, req.Start, end, n.cfg.MaxBatchBytes)
	n.log.Debug("range read to serve", "feed", req.Feed.Short(), "start", req.Start, "entries", len(r.Entries), "took", time.Since(began))
	switch {
	case errors.Is(err, ErrNotFound):
		n.send(p, &wire.Error{ReqID: req.ReqID, Code: wire.CodeNotFound, Message: "range not held"})
		return
	case err != nil:
		n.log.Error("reading range to serve", "peer", p, "feed", req.Feed.Short(), "err", err)
		n.send(p, &wire.Error{ReqID: req.ReqID, Code: wire.CodeInternal, Message: "read failed"})
		return
	}
	if len(r.Entries) == 0 || r.Start != req.Start || r.End() > end {
		n.log.Error("feeds returned a range other than asked", "feed", req.Feed.Short(),
			"start", req.Start, "end", end, "got_start", r.Start, "got_end", r.End())
		n.send(p, &wire.Error{ReqID: req.ReqID, Code: wire.CodeInternal, Message: "read failed"})
		return
	}
	if n.send(p, &wire.Data{ReqID: req.ReqID, Range: r}) {
		n.m.Served(s.Peer, len(r.Entries))
		n.met.sent.WithLabelValues(p.String()).Add(float64(len(r.Entries)))
		if r.End() < r.Head.Length && n.cfg.OnCatchUp != nil {
			n.cfg.OnCatchUp()
		}
	}
}

func (n *Node) traffic() {
	if n.cfg.OnTraffic != nil {
		n.cfg.OnTraffic()
	}
}

func (n *Node) batchEntries() uint64 {
	if b := n.cfg.Protocol.MaxBatchEntries; b > 0 {
		return b
	}
	return 4096
}

func (n *Node) send(p PeerID, msg wire.Message) bool {
	b := wire.Encode(msg)
	if len(b) > wire.MaxFrameSize {
		n.log.Error("message over the frame limit", "peer", p, "bytes", len(b))
		if d, ok := msg.(*wire.Data); ok {
			return n.send(p, &wire.Error{ReqID: d.ReqID, Code: wire.CodeInternal, Message: "range too large"})
		}
		return false
	}
	if err := n.cfg.Transport.Send(p, b); err != nil {
		n.log.Debug("send failed", "peer", p, "err", err)
		return false
	}
	return true
}

func (n *Node) dial(ctx context.Context, dials *stdsync.WaitGroup, p PeerID) {
	addrs := n.addrs[p]
	dials.Add(1)
	go func() {
		defer dials.Done()
		dctx, cancel := context.WithTimeout(ctx, n.cfg.DialTimeout)
		err := n.cfg.Transport.Dial(dctx, p, addrs)
		cancel()
		select {
		case n.dialed <- dialResult{peer: p, err: err}:
		case <-ctx.Done():
		}
	}()
}

func (n *Node) event(pe protocol.Event) {
	ev := Event{Kind: pe.Kind, Peer: fromMachine(pe.Peer), Feed: pe.Feed, Detail: pe.Detail, Err: pe.Err}
	attrs := []any{"peer", ev.Peer, "feed", ev.Feed.Short(), "detail", ev.Detail, "err", ev.Err}
	switch ev.Kind {
	case protocol.EventRejected:
		n.met.rejected.WithLabelValues("range").Inc()
		n.log.Warn("security: peer data rejected", attrs...)
	case protocol.EventFork:
		n.met.forks.Inc()
		n.log.Error("feed fork: replication of this feed with the peer stopped", attrs...)
	case protocol.EventTimeout:
		n.log.Warn("peer left a request unanswered; disconnecting", attrs...)
	case protocol.EventPeerError:
		n.log.Info("peer could not serve a request", attrs...)
	case protocol.EventStoreFailed:
		n.log.Error("storing a verified range failed", attrs...)
	case protocol.EventStale:
		n.met.stale.Inc()
		n.log.Debug("range proven against a head this replica cannot use; asking other peers", attrs...)
	}
	if n.cfg.OnEvent != nil {
		n.cfg.OnEvent(ev)
	}
}
