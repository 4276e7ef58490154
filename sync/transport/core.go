package transport

import (
	"context"
	stdsync "sync"
)

// core is the session bookkeeping shared by Host and MemTransport.
type core struct {
	self   PeerID
	events chan Event
	closed chan struct{}
	queue  int // per-session send queue length

	mu       stdsync.Mutex
	sessions map[PeerID]*session // guarded by mu
	next     uint64              // guarded by mu; last session number
	isClosed bool                // guarded by mu
	wg       stdsync.WaitGroup   // goroutines started by the transport
}

func newCore(self PeerID, queue int) *core {
	if queue <= 0 {
		queue = 256
	}
	return &core{
		self:     self,
		events:   make(chan Event, 64),
		closed:   make(chan struct{}),
		queue:    queue,
		sessions: map[PeerID]*session{},
	}
}

// session is one side of a session with a peer.
type session struct {
	id    uint64
	peer  PeerID
	queue chan []byte   // payloads waiting for the writer
	ready chan struct{} // closed once EventUp was emitted
	done  chan struct{} // closed by teardown
	once  stdsync.Once

	mu     stdsync.Mutex
	closer []func() // guarded by mu; released by teardown
	ended  bool     // guarded by mu
}

// addCloser registers f to run at teardown; false if already torn down (f is
// then run at once).
func (s *session) addCloser(f func()) bool {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		f()
		return false
	}
	s.closer = append(s.closer, f)
	s.mu.Unlock()
	return true
}

// goTracked starts f as a tracked goroutine unless the transport is closed.
func (c *core) goTracked(f func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.isClosed {
		return false
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f()
	}()
	return true
}

// emit delivers ev unless the transport closes first.
func (c *core) emit(ev Event) bool {
	select {
	case c.events <- ev:
		return true
	case <-c.closed:
		return false
	}
}

// current returns p's session or nil.
func (c *core) current(p PeerID) *session {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessions[p]
}

// register creates p's session unless one exists. When created is true the
// caller must start the writer, then call up(s).
func (c *core) register(p PeerID) (s *session, created bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.isClosed {
		return nil, false, ErrClosed
	}
	if s := c.sessions[p]; s != nil {
		return s, false, nil
	}
	c.next++
	s = &session{
		id:    c.next,
		peer:  p,
		queue: make(chan []byte, c.queue),
		ready: make(chan struct{}),
		done:  make(chan struct{}),
	}
	c.sessions[p] = s
	return s, true, nil
}

// up emits EventUp for a created session and releases waiters.
func (c *core) up(s *session) {
	c.emit(Event{Kind: EventUp, Peer: s.peer, Session: s.id})
	close(s.ready)
}

// waitReady waits until s's EventUp was emitted (or s ended).
func (c *core) waitReady(ctx context.Context, s *session) error {
	select {
	case <-s.ready:
		return nil
	case <-s.done:
		return ErrNotConnected
	case <-ctx.Done():
		return ctx.Err()
	case <-c.closed:
		return ErrClosed
	}
}

// teardown ends s once: forgets it, runs its closers and emits EventDown after
// its EventUp. It never blocks on the event channel, so any goroutine (the
// consumer's included) may call it.
func (c *core) teardown(s *session) {
	s.once.Do(func() {
		c.mu.Lock()
		if c.sessions[s.peer] == s {
			delete(c.sessions, s.peer)
		}
		c.mu.Unlock()
		close(s.done)
		s.mu.Lock()
		s.ended = true
		closers := s.closer
		s.closer = nil
		s.mu.Unlock()
		for _, f := range closers {
			f()
		}
		c.goTracked(func() {
			select {
			case <-s.ready:
			case <-c.closed:
				return
			}
			c.emit(Event{Kind: EventDown, Peer: s.peer, Session: s.id})
		})
	})
}

// send queues payload on p's session without blocking.
func (c *core) send(p PeerID, payload []byte) error {
	s := c.current(p)
	if s == nil {
		return ErrNotConnected
	}
	select {
	case <-s.done:
		return ErrNotConnected
	default:
	}
	select {
	case s.queue <- payload:
		return nil
	default:
		c.teardown(s)
		return ErrSendQueueFull
	}
}

// close ends all sessions and waits for the transport's goroutines.
func (c *core) close() {
	c.mu.Lock()
	if c.isClosed {
		c.mu.Unlock()
		return
	}
	c.isClosed = true
	all := make([]*session, 0, len(c.sessions))
	for _, s := range c.sessions {
		all = append(all, s)
	}
	c.mu.Unlock()
	close(c.closed)
	for _, s := range all {
		c.teardown(s)
	}
	c.wg.Wait()
}
