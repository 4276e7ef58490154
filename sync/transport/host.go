package transport

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/control"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	"github.com/libp2p/go-libp2p/core/protocol"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"
	"github.com/libp2p/go-libp2p/p2p/muxer/yamux"
	"github.com/libp2p/go-libp2p/p2p/security/noise"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/crow-sync/crow/sync/wire"
)

// HostConfig configures a libp2p Host.
type HostConfig struct {
	// Key is the instance's Ed25519 key; the host's peer id derives from it.
	Key ed25519.PrivateKey
	// Listen are TCP multiaddrs, e.g. "/ip4/127.0.0.1/tcp/0".
	Listen []string
	// Announce, when set, are the multiaddrs the host tells peers to dial
	// (Addrs and libp2p identify) instead of its listen addresses: a proxy
	// or a forwarded port in front of it.
	Announce []string
	// Registerer receives crow_sync_channel_errors_total (nil: not exported).
	Registerer prometheus.Registerer
	// Admitter decides which peers may connect, in and out. Required.
	Admitter Admitter
	// Logger receives security events (refused peers) and session errors.
	Logger *slog.Logger
	// MaxFrame bounds received payloads (default and cap: wire.MaxFrameSize).
	MaxFrame int
	// SendQueue is the per-session send queue length (default 256).
	SendQueue int
	// WriteTimeout bounds the write of one frame (default 30s).
	WriteTimeout time.Duration
}

// Host is the libp2p Transport: TCP only, Noise, yamux; no DHT, mDNS, relay,
// NAT port mapping, hole punching or AutoNAT probing. A connection gater admits
// only peers the Admitter admits, inbound (after the Noise handshake) and
// outbound (before dialing).
type Host struct {
	*core
	h     host.Host
	admit Admitter
	log   *slog.Logger
	cfg   HostConfig
	watch *channelWatch
	// opening serialises, per peer, opening our stream (ensure) and
	// Disconnect: two outbound streams for one session would make the peer
	// tear the session down when the spare one is reset.
	opening peerLocks
}

// peerLocks is a mutex per peer, kept while someone holds or waits for it.
type peerLocks struct {
	mu sync.Mutex
	m  map[PeerID]*peerLock // guarded by mu
}

type peerLock struct {
	sync.Mutex
	users int // guarded by peerLocks.mu
}

// lock locks p's mutex and returns its unlock.
func (l *peerLocks) lock(p PeerID) (unlock func()) {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[PeerID]*peerLock{}
	}
	pl := l.m[p]
	if pl == nil {
		pl = &peerLock{}
		l.m[p] = pl
	}
	pl.users++
	l.mu.Unlock()
	pl.Lock()
	return func() {
		pl.Unlock()
		l.mu.Lock()
		if pl.users--; pl.users == 0 {
			delete(l.m, p)
		}
		l.mu.Unlock()
	}
}

var _ Transport = (*Host)(nil)

// NewHost starts a libp2p host listening on cfg.Listen.
func NewHost(cfg HostConfig) (*Host, error) {
	if cfg.Admitter == nil {
		return nil, errors.New("new host: Admitter is required")
	}
	if len(cfg.Key) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("new host: Ed25519 key of %d bytes", len(cfg.Key))
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxFrame <= 0 || cfg.MaxFrame > wire.MaxFrameSize {
		cfg.MaxFrame = wire.MaxFrameSize
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 30 * time.Second
	}
	// libp2p's Ed25519 private key encoding is Go's: seed ‖ public key.
	priv, err := crypto.UnmarshalEd25519PrivateKey(cfg.Key)
	if err != nil {
		return nil, fmt.Errorf("new host: converting key: %w", err)
	}
	announce, err := parseAddrs(cfg.Announce)
	if err != nil {
		return nil, fmt.Errorf("new host: announced address: %w", err)
	}
	log := cfg.Logger.With("component", "sync-transport")
	watch, err := newChannelWatch(cfg.Registerer, log)
	if err != nil {
		return nil, fmt.Errorf("new host: metrics: %w", err)
	}
	rm, err := newResourceManager()
	if err != nil {
		return nil, fmt.Errorf("new host: resource manager: %w", err)
	}
	opts := []libp2p.Option{
		libp2p.Identity(priv),
		libp2p.ListenAddrStrings(cfg.Listen...),
		libp2p.Transport(tcp.NewTCPTransport),
		libp2p.Security(noise.ID, noiseConstructor(watch)),
		libp2p.Muxer(yamux.ID, yamux.DefaultTransport),
		libp2p.ConnectionGater(&gater{admit: cfg.Admitter, log: log}),
		libp2p.ResourceManager(rm),
		libp2p.DisableRelay(),
		libp2p.ForceReachabilityPrivate(),
		libp2p.DisableMetrics(),
		libp2p.Ping(false),
	}
	if len(announce) > 0 {
		opts = append(opts, libp2p.AddrsFactory(func([]ma.Multiaddr) []ma.Multiaddr { return announce }))
	}
	h, err := libp2p.New(opts...)
	if err != nil {
		_ = rm.Close()
		return nil, fmt.Errorf("new host: %w", err)
	}
	t := &Host{core: newCore(PeerID(h.ID()), cfg.SendQueue), h: h, admit: cfg.Admitter, log: log, cfg: cfg, watch: watch}
	h.SetStreamHandler(protocol.ID(wire.ProtocolID), t.handleInbound)
	h.Network().Notify(&network.NotifyBundle{
		ConnectedF: func(_ network.Network, c network.Conn) {
			p := PeerID(c.RemotePeer())
			t.goTracked(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if err := t.ensure(ctx, p); err != nil {
					t.log.Debug("opening sync stream", "peer", p, "err", err)
				}
			})
		},
		DisconnectedF: func(n network.Network, c network.Conn) {
			p := PeerID(c.RemotePeer())
			if n.Connectedness(c.RemotePeer()) != network.Connected {
				if s := t.current(p); s != nil {
					t.teardown(s)
				}
			}
		},
	})
	return t, nil
}

// newResourceManager returns libp2p's default scaled limits plus a small cap
// on crow sync streams per peer (a session uses one stream each way).
func newResourceManager() (network.ResourceManager, error) {
	limits := rcmgr.DefaultLimits
	libp2p.SetDefaultServiceLimits(&limits)
	limits.AddProtocolPeerLimit(protocol.ID(wire.ProtocolID),
		rcmgr.BaseLimit{StreamsInbound: 4, StreamsOutbound: 4, Streams: 8, Memory: 64 << 20},
		rcmgr.BaseLimitIncrease{})
	return rcmgr.NewResourceManager(rcmgr.NewFixedLimiter(limits.AutoScale()))
}

// Self implements Transport.
func (t *Host) Self() PeerID { return t.self }

// Events implements Transport.
func (t *Host) Events() <-chan Event { return t.events }

// Send implements Transport.
func (t *Host) Send(p PeerID, payload []byte) error { return t.send(p, payload) }

// parseAddrs parses multiaddr strings.
func parseAddrs(ss []string) ([]ma.Multiaddr, error) {
	var out []ma.Multiaddr
	for _, s := range ss {
		a, err := ma.NewMultiaddr(s)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", s, err)
		}
		out = append(out, a)
	}
	return out, nil
}

// ChannelErrors returns the channel errors counted so far by kind
// (ChannelCorrupt, ChannelTruncated, ChannelHandshake, ChannelFrame).
func (t *Host) ChannelErrors() map[string]uint64 { return t.watch.counts() }

// Addrs returns the addresses peers should dial: the announced ones when
// configured, else the ones the host listens on.
func (t *Host) Addrs() []string {
	var out []string
	for _, a := range t.h.Addrs() {
		out = append(out, a.String())
	}
	return out
}

// Dial implements Transport.
func (t *Host) Dial(ctx context.Context, p PeerID, addrs []string) error {
	if !t.admit.Admit(p) {
		return fmt.Errorf("dial %s: %w", p, ErrNotAdmitted)
	}
	as, err := parseAddrs(addrs)
	if err != nil {
		return fmt.Errorf("dial %s: address %w", p, err)
	}
	info := peer.AddrInfo{ID: peer.ID(p), Addrs: as}
	// The caller's addresses are the only ones dialled: not those the peer
	// announced by identify earlier (a pinned path, e.g. through a proxy,
	// stays the path).
	t.h.Peerstore().ClearAddrs(info.ID)
	t.h.Peerstore().AddAddrs(info.ID, info.Addrs, peerstore.TempAddrTTL)
	if err := t.h.Connect(ctx, info); err != nil {
		return fmt.Errorf("dial %s: %w", p, err)
	}
	if err := t.ensure(ctx, p); err != nil {
		return fmt.Errorf("dial %s: %w", p, err)
	}
	return nil
}

// testHookOpened, when set, runs in ensure between opening our stream and
// registering the session (tests count streams and widen the race with it).
var testHookOpened func(*Host)

// ensure opens our outbound stream to p over an existing connection unless a
// session exists, and returns once its EventUp was emitted. It never dials:
// only Dial does. Calls for one peer are serialised, so a session has exactly
// one stream of ours.
func (t *Host) ensure(ctx context.Context, p PeerID) error {
	if s := t.current(p); s != nil {
		return t.waitReady(ctx, s)
	}
	unlock := t.opening.lock(p)
	defer unlock()
	if s := t.current(p); s != nil {
		return t.waitReady(ctx, s)
	}
	st, err := t.h.NewStream(network.WithNoDial(ctx, "crow sync session"), peer.ID(p), protocol.ID(wire.ProtocolID))
	if err != nil {
		return fmt.Errorf("opening stream: %w", err)
	}
	_ = st.CloseRead() // one-way: we only write on the stream we opened
	if testHookOpened != nil {
		testHookOpened(t)
	}
	s, created, err := t.register(p)
	if err != nil {
		_ = st.Reset()
		return err
	}
	if !created { // not reached: only ensure registers, under opening
		_ = st.Reset()
		return t.waitReady(ctx, s)
	}
	s.addCloser(func() { _ = st.Reset() })
	if !t.goTracked(func() { t.writer(s, st) }) {
		t.teardown(s)
		return ErrClosed
	}
	t.h.ConnManager().Protect(peer.ID(p), "crow-sync")
	t.up(s)
	return nil
}

func (t *Host) writer(s *session, st network.Stream) {
	for {
		select {
		case <-s.done:
			return
		case b := <-s.queue:
			_ = st.SetWriteDeadline(time.Now().Add(t.cfg.WriteTimeout))
			if err := wire.WriteFrame(st, b); err != nil {
				t.log.Debug("sync stream write failed", "peer", s.peer, "err", err)
				t.teardown(s)
				return
			}
		}
	}
}

// handleInbound reads the stream the peer opened to us; its frames belong to
// our session with that peer (created here if needed).
func (t *Host) handleInbound(st network.Stream) {
	p := PeerID(st.Conn().RemotePeer())
	if !t.admit.Admit(p) { // revoked after the connection was gated
		logRefusal(t.log, t.admit, p, "refusing sync stream from peer not admitted")
		_ = st.Reset()
		return
	}
	_ = st.CloseWrite()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	err := t.ensure(ctx, p)
	cancel()
	s := t.current(p)
	if err != nil || s == nil {
		_ = st.Reset()
		return
	}
	if !s.addCloser(func() { _ = st.Reset() }) {
		return
	}
	for {
		b, err := wire.ReadFrame(st, t.cfg.MaxFrame)
		if err != nil {
			switch {
			case errors.Is(err, wire.ErrFrameTooLarge):
				t.watch.count(ChannelFrame, st.Conn().RemoteMultiaddr().String(), err)
			case errors.Is(err, io.ErrUnexpectedEOF):
				t.watch.count(ChannelFrame, st.Conn().RemoteMultiaddr().String(), err)
			case !errors.Is(err, io.EOF):
				t.log.Debug("sync stream read failed", "peer", p, "err", err)
			}
			_ = st.Reset()
			t.teardown(s)
			return
		}
		select {
		case t.events <- Event{Kind: EventMessage, Peer: p, Session: s.id, Payload: b}:
		case <-s.done:
			return
		case <-t.closed:
			return
		}
	}
}

// Disconnect implements Transport.
func (t *Host) Disconnect(p PeerID) error {
	unlock := t.opening.lock(p) // no session is opened while we close
	defer unlock()
	if s := t.current(p); s != nil {
		t.teardown(s)
	}
	t.h.ConnManager().Unprotect(peer.ID(p), "crow-sync")
	if err := t.h.Network().ClosePeer(peer.ID(p)); err != nil {
		return fmt.Errorf("disconnect %s: %w", p, err)
	}
	return nil
}

// Close implements Transport.
func (t *Host) Close() error {
	t.close()
	if err := t.h.Close(); err != nil {
		return fmt.Errorf("closing libp2p host: %w", err)
	}
	return nil
}

// gater admits only peers the Admitter admits.
type gater struct {
	admit Admitter
	log   *slog.Logger
}

func (g *gater) InterceptPeerDial(p peer.ID) bool {
	ok := g.admit.Admit(PeerID(p))
	if !ok {
		logRefusal(g.log, g.admit, PeerID(p), "refusing to dial peer not admitted")
	}
	return ok
}

func (g *gater) InterceptAddrDial(p peer.ID, _ ma.Multiaddr) bool { return g.admit.Admit(PeerID(p)) }

// InterceptAccept admits the raw connection: the peer is not known before the
// Noise handshake; InterceptSecured decides.
func (g *gater) InterceptAccept(network.ConnMultiaddrs) bool { return true }

func (g *gater) InterceptSecured(dir network.Direction, p peer.ID, addrs network.ConnMultiaddrs) bool {
	ok := g.admit.Admit(PeerID(p))
	if !ok {
		logRefusal(g.log, g.admit, PeerID(p), "refusing connection from peer not admitted",
			"direction", dir.String(), "remote", addrs.RemoteMultiaddr().String())
	}
	return ok
}

// logRefusal logs a refused peer: a security warning, unless the Admitter
// says the refusal is expected (ExpectedRefuser), then an info line.
func logRefusal(log *slog.Logger, a Admitter, p PeerID, msg string, attrs ...any) {
	attrs = append([]any{"peer", p}, attrs...)
	if e, ok := a.(ExpectedRefuser); ok && e.ExpectedRefusal(p) {
		log.Info(msg+" (expected: not registered here yet, or replication paused)", attrs...)
		return
	}
	log.Warn("security: "+msg, attrs...)
}

func (g *gater) InterceptUpgraded(network.Conn) (bool, control.DisconnectReason) { return true, 0 }
