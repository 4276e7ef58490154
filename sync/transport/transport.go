// Package transport carries framed sync messages between crow instances.
//
// A [Transport] keeps at most one session per peer. A session is the pair of
// one-way streams between two instances: each side writes only on the stream it
// opened and reads only the streams the other side opened, so simultaneous
// dials need no tie-breaking. The transport reports, on its [Transport.Events]
// channel and in order per peer:
//
//  1. EventUp for a new session (Session numbers increase per transport),
//  2. the messages received on that session (EventMessage),
//  3. EventDown when the session ends.
//
// An event whose Session is not the peer's current session is stale and must
// be ignored; the consumer tracks the current session per peer from EventUp and
// EventDown (see [Tracker]).
//
// Two implementations exist: [Host] (libp2p: TCP, Noise, yamux, gated by an
// [Admitter]) and [MemNetwork] (in memory, for deterministic tests).
package transport

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
)

// PeerID identifies an instance: the libp2p peer id derived from its Ed25519
// instance key (see [PeerIDFromPublicKey]), in its string (binary) form.
type PeerID string

// String returns the base58 form used in logs and status.
func (p PeerID) String() string { return peer.ID(p).String() }

// PeerIDFromPublicKey returns the peer id of the instance whose key is pub.
func PeerIDFromPublicKey(pub ed25519.PublicKey) (PeerID, error) {
	k, err := crypto.UnmarshalEd25519PublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("peer id from public key: %w", err)
	}
	id, err := peer.IDFromPublicKey(k)
	if err != nil {
		return "", fmt.Errorf("peer id from public key: %w", err)
	}
	return PeerID(id), nil
}

// Admitter decides which peers may connect. The daemon implements it over the
// registry: registered and not revoked. Admit is called from libp2p goroutines
// and must be safe for concurrent use and fast.
type Admitter interface {
	Admit(p PeerID) bool
}

// ExpectedRefuser may be implemented by an Admitter to say that refusing p
// is expected — replication paused by the operator, a peer not registered
// here yet during the start-up race — so the refusal is logged at info
// level rather than as a security warning.
type ExpectedRefuser interface {
	ExpectedRefusal(p PeerID) bool
}

// AdmitFunc adapts a function to Admitter.
type AdmitFunc func(PeerID) bool

// Admit calls f.
func (f AdmitFunc) Admit(p PeerID) bool { return f(p) }

// EventKind says what an Event reports.
type EventKind int

// Event kinds.
const (
	EventUp EventKind = iota + 1
	EventDown
	EventMessage
)

func (k EventKind) String() string {
	switch k {
	case EventUp:
		return "up"
	case EventDown:
		return "down"
	case EventMessage:
		return "message"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Event is a session change or a received frame payload.
type Event struct {
	Kind    EventKind
	Peer    PeerID
	Session uint64
	Payload []byte // EventMessage only; owned by the receiver
}

// Errors returned by Transport methods.
var (
	// ErrNotConnected is returned by Send when there is no session with the peer.
	ErrNotConnected = errors.New("transport: peer not connected")
	// ErrNotAdmitted is returned by Dial for a peer the Admitter refuses.
	ErrNotAdmitted = errors.New("transport: peer not admitted")
	// ErrSendQueueFull is returned by Send when the peer does not read fast
	// enough; the session is closed (the peer resyncs on the next session).
	ErrSendQueueFull = errors.New("transport: send queue full")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("transport: closed")
)

// Transport is what the sync node needs from the network. All methods are safe
// for concurrent use.
type Transport interface {
	// Self returns the local peer id.
	Self() PeerID
	// Events returns the event channel. There must be a single consumer and it
	// must keep reading until Close; the channel is never closed.
	Events() <-chan Event
	// Dial connects to p at addrs (multiaddr strings; ignored by MemNetwork)
	// and returns once a session exists, or an error.
	Dial(ctx context.Context, p PeerID, addrs []string) error
	// Send queues one payload (an encoded wire message) for p without blocking
	// on the network. The payload must not be modified afterwards.
	Send(p PeerID, payload []byte) error
	// Disconnect ends the session and all connections with p (used when p is
	// revoked). It is not an error if p is not connected.
	Disconnect(p PeerID) error
	// Close ends every session and releases the transport.
	Close() error
}

// Tracker follows the current session per peer from events, for consumers that
// must drop stale events. Not safe for concurrent use.
type Tracker struct {
	cur  map[PeerID]uint64 // current session; absent when down
	seen map[PeerID]uint64 // highest session number seen for the peer
}

// Accept takes one event from a Transport and returns the events the consumer
// should act on: none for a stale event (an old session's message or EventDown,
// or an EventUp of a session that already ended), the event itself otherwise,
// and for an EventUp that replaces a live session an EventDown of the old one
// first. The consumer thus sees, per peer, strictly alternating up and down.
func (t *Tracker) Accept(ev Event) []Event {
	if t.cur == nil {
		t.cur = map[PeerID]uint64{}
		t.seen = map[PeerID]uint64{}
	}
	switch ev.Kind {
	case EventUp:
		if ev.Session <= t.seen[ev.Peer] {
			return nil
		}
		t.seen[ev.Peer] = ev.Session
		var out []Event
		if old, ok := t.cur[ev.Peer]; ok {
			out = append(out, Event{Kind: EventDown, Peer: ev.Peer, Session: old})
		}
		t.cur[ev.Peer] = ev.Session
		return append(out, ev)
	case EventDown:
		if ev.Session > t.seen[ev.Peer] {
			t.seen[ev.Peer] = ev.Session
		}
		if s, ok := t.cur[ev.Peer]; ok && s == ev.Session {
			delete(t.cur, ev.Peer)
			return []Event{ev}
		}
		return nil
	default:
		if s, ok := t.cur[ev.Peer]; ok && s == ev.Session {
			return []Event{ev}
		}
		return nil
	}
}

// PublicKey returns the Ed25519 key the peer id was derived from.
func (p PeerID) PublicKey() (ed25519.PublicKey, error) {
	k, err := peer.ID(p).ExtractPublicKey()
	if err != nil {
		return nil, fmt.Errorf("public key of peer %s: %w", p, err)
	}
	raw, err := k.Raw()
	if err != nil || len(raw) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("public key of peer %s: not an Ed25519 key", p)
	}
	return ed25519.PublicKey(raw), nil
}
