package transport

import (
	"context"
	"fmt"
	stdsync "sync"
)

// MemNetwork connects MemTransports in memory. It applies the same admission
// rule as Host (both sides' Admitters must admit the other) and the same
// session semantics, without sockets.
type MemNetwork struct {
	mu    stdsync.Mutex
	nodes map[PeerID]*MemTransport // guarded by mu
	cut   map[[2]PeerID]bool       // guarded by mu; partitioned pairs
}

// NewMemNetwork returns an empty network.
func NewMemNetwork() *MemNetwork {
	return &MemNetwork{nodes: map[PeerID]*MemTransport{}, cut: map[[2]PeerID]bool{}}
}

// MemTransport is a Transport on a MemNetwork.
type MemTransport struct {
	*core
	net   *MemNetwork
	admit Admitter
}

var _ Transport = (*MemTransport)(nil)

// Join adds a transport for id. admit may be nil to admit everyone.
func (n *MemNetwork) Join(id PeerID, admit Admitter) *MemTransport {
	if admit == nil {
		admit = AdmitFunc(func(PeerID) bool { return true })
	}
	t := &MemTransport{core: newCore(id, 0), net: n, admit: admit}
	n.mu.Lock()
	n.nodes[id] = t
	n.mu.Unlock()
	return t
}

func pair(a, b PeerID) [2]PeerID {
	if a > b {
		a, b = b, a
	}
	return [2]PeerID{a, b}
}

// Partition cuts a from b: their session ends and dials fail until Heal.
func (n *MemNetwork) Partition(a, b PeerID) {
	n.mu.Lock()
	n.cut[pair(a, b)] = true
	ta, tb := n.nodes[a], n.nodes[b]
	n.mu.Unlock()
	if ta != nil {
		_ = ta.Disconnect(b)
	}
	if tb != nil {
		_ = tb.Disconnect(a)
	}
}

// Heal undoes Partition.
func (n *MemNetwork) Heal(a, b PeerID) {
	n.mu.Lock()
	delete(n.cut, pair(a, b))
	n.mu.Unlock()
}

// Self implements Transport.
func (t *MemTransport) Self() PeerID { return t.self }

// Events implements Transport.
func (t *MemTransport) Events() <-chan Event { return t.events }

// Send implements Transport.
func (t *MemTransport) Send(p PeerID, payload []byte) error { return t.send(p, payload) }

// Addrs returns no addresses: peers on a MemNetwork are dialled by id alone.
// It makes a MemTransport usable where a Host's Addrs is expected.
func (t *MemTransport) Addrs() []string { return nil }

// Dial implements Transport; addrs are ignored.
func (t *MemTransport) Dial(ctx context.Context, p PeerID, _ []string) error {
	t.net.mu.Lock()
	r := t.net.nodes[p]
	cut := t.net.cut[pair(t.self, p)]
	t.net.mu.Unlock()
	if !t.admit.Admit(p) {
		return fmt.Errorf("dial %s: %w", p, ErrNotAdmitted)
	}
	if r == nil || cut || !r.admit.Admit(t.self) {
		return fmt.Errorf("dial %s: connection refused", p)
	}
	// Each side's session is independent, as with Host: create ours and make
	// sure the remote has one.
	for _, side := range [][2]*MemTransport{{t, r}, {r, t}} {
		if err := side[0].ensure(ctx, side[1]); err != nil {
			return fmt.Errorf("dial %s: %w", p, err)
		}
	}
	return nil
}

// ensure makes sure t has a session towards r whose writer delivers into r.
func (t *MemTransport) ensure(ctx context.Context, r *MemTransport) error {
	s, created, err := t.register(r.self)
	if err != nil {
		return err
	}
	if !created {
		return t.waitReady(ctx, s)
	}
	if !t.goTracked(func() { t.writer(s, r) }) {
		t.teardown(s)
		return ErrClosed
	}
	t.up(s)
	return nil
}

// writer moves s's payloads to r as messages of r's session with t. When r has
// no live session with t (it went down) the pair is broken: s ends too, as a
// closed stream would end it.
func (t *MemTransport) writer(s *session, r *MemTransport) {
	for {
		select {
		case <-s.done:
			return
		case b := <-s.queue:
			rs := r.current(t.self)
			if rs == nil || r.waitReady(context.Background(), rs) != nil {
				t.teardown(s)
				return
			}
			cp := append([]byte(nil), b...)
			select {
			case r.events <- Event{Kind: EventMessage, Peer: t.self, Session: rs.id, Payload: cp}:
			case <-s.done:
				return
			case <-r.closed:
				t.teardown(s)
				return
			}
		}
	}
}

// Disconnect implements Transport: both sides' sessions end.
func (t *MemTransport) Disconnect(p PeerID) error {
	if s := t.current(p); s != nil {
		t.teardown(s)
	}
	t.net.mu.Lock()
	r := t.net.nodes[p]
	t.net.mu.Unlock()
	if r != nil {
		if s := r.current(t.self); s != nil {
			r.teardown(s)
		}
	}
	return nil
}

// Close implements Transport.
func (t *MemTransport) Close() error {
	t.net.mu.Lock()
	delete(t.net.nodes, t.self)
	peers := make([]*MemTransport, 0, len(t.net.nodes))
	for _, n := range t.net.nodes {
		peers = append(peers, n)
	}
	t.net.mu.Unlock()
	for _, r := range peers {
		if s := r.current(t.self); s != nil {
			r.teardown(s)
		}
	}
	t.close()
	return nil
}
