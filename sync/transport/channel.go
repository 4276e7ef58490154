package transport

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	stdsync "sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/core/sec"
	tptu "github.com/libp2p/go-libp2p/p2p/net/upgrader"
	"github.com/libp2p/go-libp2p/p2p/security/noise"
	"github.com/prometheus/client_golang/prometheus"
)

// Kinds of channel errors counted by crow_sync_channel_errors_total.
const (
	// ChannelCorrupt: a Noise message failed authenticated decryption (bytes
	// changed on the wire). Nothing of it reaches yamux or the sync protocol.
	ChannelCorrupt = "corrupt"
	// ChannelTruncated: the connection ended inside a Noise message.
	ChannelTruncated = "truncated"
	// ChannelHandshake: the Noise handshake failed (bytes changed, cut, or a
	// peer that is not who it claims).
	ChannelHandshake = "handshake"
	// ChannelFrame: a sync frame inside an authenticated stream was cut short
	// or announced a length over the limit.
	ChannelFrame = "frame"
)

// channelWatch counts and logs channel errors: a security WARN per event, at
// most one per kind per logEvery (the others are counted in the next line).
type channelWatch struct {
	errs *prometheus.CounterVec // by kind
	log  *slog.Logger

	mu         stdsync.Mutex
	last       map[string]time.Time // guarded by mu; last log line per kind
	suppressed map[string]int       // guarded by mu; events not logged since
	total      map[string]uint64    // guarded by mu; events by kind
}

const logEvery = 5 * time.Second

// newChannelWatch registers crow_sync_channel_errors_total on reg (nil: not
// exported).
func newChannelWatch(reg prometheus.Registerer, log *slog.Logger) (*channelWatch, error) {
	errs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "crow_sync_channel_errors_total",
		Help: "Corrupted or truncated data on encrypted sync connections (security events; nothing of it is applied).",
	}, []string{"kind"})
	for _, k := range []string{ChannelCorrupt, ChannelTruncated, ChannelHandshake, ChannelFrame} {
		errs.WithLabelValues(k)
	}
	if reg != nil {
		if err := reg.Register(errs); err != nil {
			return nil, err
		}
	}
	return &channelWatch{errs: errs, log: log, last: map[string]time.Time{}, suppressed: map[string]int{}, total: map[string]uint64{}}, nil
}

// count records one event of kind with the connection's remote address.
func (w *channelWatch) count(kind, remote string, err error) {
	w.errs.WithLabelValues(kind).Inc()
	now := time.Now()
	w.mu.Lock()
	w.total[kind]++
	if now.Sub(w.last[kind]) < logEvery {
		w.suppressed[kind]++
		w.mu.Unlock()
		return
	}
	w.last[kind] = now
	n := w.suppressed[kind]
	w.suppressed[kind] = 0
	w.mu.Unlock()
	w.log.Warn("security: bad data on a sync connection; connection closed, nothing applied",
		"kind", kind, "remote", remote, "err", err, "not_logged_since_last", n)
}

// counts returns the number of events by kind so far.
func (w *channelWatch) counts() map[string]uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]uint64, len(w.total))
	for k, n := range w.total {
		out[k] = n
	}
	return out
}

// watchedNoise wraps libp2p's Noise transport to classify read errors.
type watchedNoise struct {
	*noise.Transport
	w *channelWatch
}

var _ sec.SecureTransport = (*watchedNoise)(nil)

// noiseConstructor returns a libp2p security constructor: Noise, watched.
func noiseConstructor(w *channelWatch) func(protocol.ID, crypto.PrivKey, []tptu.StreamMuxer) (*watchedNoise, error) {
	return func(id protocol.ID, priv crypto.PrivKey, muxers []tptu.StreamMuxer) (*watchedNoise, error) {
		t, err := noise.New(id, priv, muxers)
		if err != nil {
			return nil, err
		}
		return &watchedNoise{Transport: t, w: w}, nil
	}
}

func (n *watchedNoise) SecureInbound(ctx context.Context, insecure net.Conn, p peer.ID) (sec.SecureConn, error) {
	raw := &rawConn{Conn: insecure}
	c, err := n.Transport.SecureInbound(ctx, raw, p)
	return n.wrap(c, raw, err)
}

func (n *watchedNoise) SecureOutbound(ctx context.Context, insecure net.Conn, p peer.ID) (sec.SecureConn, error) {
	raw := &rawConn{Conn: insecure}
	c, err := n.Transport.SecureOutbound(ctx, raw, p)
	return n.wrap(c, raw, err)
}

func (n *watchedNoise) wrap(c sec.SecureConn, raw *rawConn, err error) (sec.SecureConn, error) {
	if err != nil {
		// A handshake that the peer or the context ended is not bad data.
		if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) && !raw.failed() {
			n.w.count(ChannelHandshake, raw.RemoteAddr().String(), err)
		} else if errors.Is(raw.err(), io.ErrUnexpectedEOF) {
			n.w.count(ChannelTruncated, raw.RemoteAddr().String(), err)
		}
		return nil, err
	}
	return &watchedConn{SecureConn: c, raw: raw, w: n.w}, nil
}

// rawConn remembers the first error its reads returned, so that a failed
// secure read can be told apart: the network's error, or a decryption one.
type rawConn struct {
	net.Conn
	readErr atomic.Pointer[error]
}

func (c *rawConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err != nil {
		c.readErr.CompareAndSwap(nil, &err)
	}
	return n, err
}

func (c *rawConn) failed() bool { return c.readErr.Load() != nil }

func (c *rawConn) err() error {
	if p := c.readErr.Load(); p != nil {
		return *p
	}
	return nil
}

// watchedConn is a Noise connection whose read errors are classified.
type watchedConn struct {
	sec.SecureConn
	raw  *rawConn
	w    *channelWatch
	once stdsync.Once
}

func (c *watchedConn) Read(b []byte) (int, error) {
	n, err := c.SecureConn.Read(b)
	if err != nil {
		switch {
		case !c.raw.failed():
			// The network delivered every byte asked for; Noise refused them.
			c.once.Do(func() { c.w.count(ChannelCorrupt, c.RemoteAddr().String(), err) })
		case errors.Is(err, io.ErrUnexpectedEOF):
			c.once.Do(func() { c.w.count(ChannelTruncated, c.RemoteAddr().String(), err) })
		}
	}
	return n, err
}
