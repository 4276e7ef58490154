package federation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/crow-sync/crow/clock"
)

// MCPPath is where a peer's gateway serves its tools.
const MCPPath = "/mcp"

var (
	// ErrUnknownInstance is returned by Client.CallTool for an id that is
	// not among the current peers (unregistered, revoked, or self).
	ErrUnknownInstance = errors.New("unknown instance")
	// ErrUnauthorized is returned by Client.CallTool when the peer refused
	// this instance's token (HTTP 401): the peer does not know this instance,
	// or has revoked it, or the clocks are too far apart.
	ErrUnauthorized = errors.New("peer refused this instance's token")
	// ErrClosed is returned by Client methods after Close.
	ErrClosed = errors.New("federation client closed")
)

// Peer is another instance as the registry sees it.
type Peer struct {
	ID, Name, GatewayURL string
	// Online is false when the last health probe failed or none has
	// succeeded yet.
	Online bool
}

// ClientConfig configures a Client.
type ClientConfig struct {
	// Self is this instance's id; SelfName its name (reported for the local
	// part of a Search).
	Self     string
	SelfName string
	// Tokens issues this instance's tokens; the audience is the peer's id.
	Tokens *TokenSource
	// Peers returns the current registered, non-revoked instances other
	// than self. It is called on every call, so must be cheap.
	Peers func() []Peer
	// Home returns the home instance, where Consolidate sends
	// consolidations (optional: without it Consolidate is unavailable).
	Home func() (Peer, error)
	// HTTPClient is used for every request (optional).
	HTTPClient *http.Client
	// Logger is the component's logger, used as is (optional: slog.Default).
	Logger *slog.Logger
	// Clock times Search's per-instance deadlines and elapsed times
	// (optional: clock.System).
	Clock clock.Clock
}

// Client calls tools on peers' MCP servers (POST {GatewayURL}/mcp, mcp-go
// streamable HTTP), each request carrying a fresh bearer token for that
// peer. It connects to a peer on its first call and reuses the session.
// After a transport error it drops the session, and retries the call once
// at once on a new session when that cannot run a tool twice: always for
// the read-only tools (those of DefaultAllowList), otherwise only when the
// error proves the call did not run (the peer no longer knew the session,
// as after a restart, or no connection could be made). A 401 or the
// caller's context ending is never retried. Safe for concurrent use.
type Client struct {
	cfg ClientConfig
	log *slog.Logger

	mu sync.Mutex // guards sessions and closed
	// sessions holds at most one session per peer id.
	sessions map[string]*session
	closed   bool
	// wg counts the goroutines the client started (session closes, the
	// calls Search stopped waiting for); Add only under mu while !closed.
	wg sync.WaitGroup
}

// session is one MCP connection to a peer. ready is closed once mc or err
// is set; neither changes afterwards.
type session struct {
	url   string
	ready chan struct{}
	mc    *client.Client
	err   error
}

// NewClient returns a Client; it connects to nothing until called.
func NewClient(cfg ClientConfig) *Client {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	cfg.Clock = clock.Or(cfg.Clock)
	return &Client{cfg: cfg, log: log, sessions: make(map[string]*session)}
}

// peer returns the current peer with id id.
func (c *Client) peer(id string) (Peer, bool) {
	if id == c.cfg.Self {
		return Peer{}, false
	}
	for _, p := range c.cfg.Peers() {
		if p.ID == id {
			return p, true
		}
	}
	return Peer{}, false
}

// peerList returns the current peers.
func (c *Client) peerList() []Peer { return c.cfg.Peers() }

// CallTool runs tool with args (a JSON object; nil means none) on the peer
// instanceID. An error means the call could not be made or was refused
// (ErrUnknownInstance, ErrUnauthorized, ErrClosed, a transport or JSON-RPC
// error); a tool failure on the peer comes back as a result with IsError.
func (c *Client) CallTool(ctx context.Context, instanceID, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	p, ok := c.peer(instanceID)
	if !ok {
		return nil, fmt.Errorf("calling %s on %q: %w", tool, instanceID, ErrUnknownInstance)
	}
	// The header func cannot report an error: make sure it will not have one.
	if _, err := c.cfg.Tokens.Token(p.ID); err != nil {
		return nil, fmt.Errorf("calling %s on %s: issuing token: %w", tool, p.ID, err)
	}
	var req mcp.CallToolRequest
	req.Params.Name = tool
	if len(args) > 0 {
		req.Params.Arguments = args
	}
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		var s *session
		if s, err = c.session(ctx, p); err != nil {
			// No tool ran; only a refusal or the end is final.
			if ctx.Err() != nil || errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrClosed) {
				break
			}
			continue
		}
		var res *mcp.CallToolResult
		if res, err = s.mc.CallTool(ctx, req); err == nil {
			return res, nil
		}
		err = classify(err)
		var te *transport.Error
		if !errors.As(err, &te) || ctx.Err() != nil {
			// The peer answered (a JSON-RPC error), or the caller gave up:
			// the session is fine.
			break
		}
		c.drop(p.ID, s)
		if !retryable(tool, err) {
			break
		}
		c.log.Debug("peer session lost, reconnecting", "peer", p.ID, "err", err)
	}
	return nil, fmt.Errorf("calling %s on %s: %w", tool, p.ID, err)
}

// classify marks a 401 from the peer as ErrUnauthorized.
func classify(err error) error {
	if errors.Is(err, transport.ErrAuthorizationRequired) {
		return fmt.Errorf("%w: %w", ErrUnauthorized, err)
	}
	return err
}

// readOnly are the tools a retry cannot harm.
var readOnly = DefaultAllowList()

// retryable reports whether a call of tool that failed with err (a
// transport error) may be made again:
// it did not run, or running it twice changes nothing. A refused token
// would be refused again.
func retryable(tool string, err error) bool {
	if errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrClosed) {
		return false
	}
	return notDelivered(err) || readOnly.Allowed(tool)
}

// notDelivered reports whether err proves a request did not run on the
// peer: the peer did not know the session (404), or no connection was made.
func notDelivered(err error) bool {
	if errors.Is(err, transport.ErrSessionTerminated) || errors.Is(err, transport.ErrLegacySSEServer) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// session returns the ready session with p, connecting if there is none or
// p's URL changed. Concurrent callers share one connection attempt; a
// caller whose shared attempt failed (perhaps only because the caller that
// made it gave up) makes one of its own before reporting an error.
func (c *Client) session(ctx context.Context, p Peer) (*session, error) {
	for waited := false; ; waited = true {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, ErrClosed
		}
		s := c.sessions[p.ID]
		if s != nil && s.url != p.GatewayURL {
			delete(c.sessions, p.ID)
			c.spawnLocked(closer(s)) // not closed: checked above
			s = nil
		}
		if s == nil {
			return c.connectLocked(ctx, p)
		}
		c.mu.Unlock()
		select {
		case <-s.ready:
		case <-ctx.Done():
			return nil, transport.NewError(ctx.Err())
		}
		if s.err == nil || waited {
			return s, s.err
		}
	}
}

// connectLocked makes a new session with p the current one, connects it and
// returns it. c.mu must be held; it is released.
func (c *Client) connectLocked(ctx context.Context, p Peer) (*session, error) {
	s := &session{url: p.GatewayURL, ready: make(chan struct{})}
	c.sessions[p.ID] = s
	c.mu.Unlock()

	mc, err := c.connect(ctx, p)
	c.mu.Lock()
	var orphan *client.Client
	if err == nil && c.closed {
		// Close ran meanwhile and did not see mc.
		err, orphan = ErrClosed, mc
	}
	if err != nil {
		if c.sessions[p.ID] == s {
			delete(c.sessions, p.ID)
		}
		s.err = fmt.Errorf("connecting to %s at %s: %w", p.ID, p.GatewayURL, err)
	} else {
		s.mc = mc
	}
	close(s.ready)
	c.mu.Unlock()
	if orphan != nil {
		orphan.Close()
	}
	return s, s.err
}

// connect opens and initializes an MCP session with p.
func (c *Client) connect(ctx context.Context, p Peer) (*client.Client, error) {
	opts := []transport.StreamableHTTPCOption{
		transport.WithHTTPHeaderFunc(func(context.Context) map[string]string {
			tok, err := c.cfg.Tokens.Token(p.ID)
			if err != nil {
				c.log.Error("issuing token", "peer", p.ID, "err", err)
				return nil
			}
			return map[string]string{"Authorization": "Bearer " + tok}
		}),
		transport.WithHTTPLogger(slog.New(debugOnly{c.log.With("peer", p.ID).Handler()})),
	}
	if c.cfg.HTTPClient != nil {
		opts = append(opts, transport.WithHTTPBasicClient(c.cfg.HTTPClient))
	}
	mc, err := client.NewStreamableHttpClient(strings.TrimSuffix(p.GatewayURL, "/")+MCPPath, opts...)
	if err != nil {
		return nil, err
	}
	if err := mc.Start(ctx); err != nil {
		return nil, err // nothing was sent
	}
	var init mcp.InitializeRequest
	init.Params.ClientInfo = mcp.Implementation{Name: "crow-federation", Version: "1"}
	if _, err := mc.Initialize(ctx, init); err != nil {
		c.closeSoon(mc)
		return nil, classify(err)
	}
	return mc, nil
}

// drop forgets s, if it is still the session with peerID, and closes it.
func (c *Client) drop(peerID string, s *session) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sessions[peerID] == s {
		delete(c.sessions, peerID)
		c.spawnLocked(closer(s)) // not closed: Close empties sessions
	}
}

// closer returns a func that closes s once it is ready.
func closer(s *session) func() error {
	return func() error {
		<-s.ready
		if s.mc == nil {
			return nil
		}
		return s.mc.Close()
	}
}

// spawnLocked runs f on a goroutine Close waits for, so the caller does not
// wait: closing a session sends a DELETE that a dead peer may hold up for
// seconds. Once the client is closed it does nothing and returns false.
// c.mu must be held.
func (c *Client) spawnLocked(f func() error) bool {
	if c.closed {
		return false
	}
	c.wg.Go(func() { f() })
	return true
}

// closeSoon closes mc without waiting, or before returning once the client
// is closed.
func (c *Client) closeSoon(mc *client.Client) {
	c.mu.Lock()
	spawned := c.spawnLocked(mc.Close)
	c.mu.Unlock()
	if !spawned {
		mc.Close()
	}
}

// Close closes every session and waits for the work in flight that the
// client started on its own goroutines (session closes, the calls Search
// stopped waiting for). Later calls fail with ErrClosed.
func (c *Client) Close() error {
	c.mu.Lock()
	for id, s := range c.sessions {
		delete(c.sessions, id)
		c.spawnLocked(closer(s))
	}
	c.closed = true
	c.mu.Unlock()
	c.wg.Wait()
	return nil
}

// debugOnly logs every record at debug level. mcp-go's transport logs at
// error level what is expected here (the DELETE that closes a session on a
// peer that just died); the client reports what matters to its callers.
type debugOnly struct{ slog.Handler }

func (h debugOnly) Enabled(ctx context.Context, _ slog.Level) bool {
	return h.Handler.Enabled(ctx, slog.LevelDebug)
}

func (h debugOnly) Handle(ctx context.Context, r slog.Record) error {
	r.Level = slog.LevelDebug
	return h.Handler.Handle(ctx, r)
}

func (h debugOnly) WithAttrs(attrs []slog.Attr) slog.Handler {
	return debugOnly{h.Handler.WithAttrs(attrs)}
}

func (h debugOnly) WithGroup(name string) slog.Handler { return debugOnly{h.Handler.WithGroup(name)} }
