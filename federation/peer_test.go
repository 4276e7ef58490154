package federation

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crow-sync/crow/clock"
)

// testPeer is a peer's gateway for tests: a real mcp-go streamable-HTTP
// server at /mcp behind a middleware that checks the bearer token with
// Verify (its own id as audience) and a ReplayCache, as the gateway's
// Verifier does, and answers 401 when it fails. Its
// crow_search_memories answers results; crow_sync_status and
// crow_instance_summaries answer as crow's do.
type testPeer struct {
	id, name string
	keys     *keyring         // whose tokens it accepts
	seen     *ReplayCache     // the tokens it accepted
	now      func() time.Time // its clock
	legacy   bool             // serve only protocol versions with sessions, statefully
	srv      *httptest.Server
	handler  atomic.Pointer[server.StreamableHTTPServer] // replaced on restart
	requests atomic.Int64                                // every HTTP request

	// hang, when set before the first call, makes crow_search_memories
	// wait until it is closed (at cleanup) or the request ends.
	hang chan struct{}
	// entered gets a value each time crow_search_memories starts (up to
	// its buffer).
	entered chan struct{}

	extra []server.ServerTool // more tools, added by withTool

	mu      sync.Mutex // guards the fields below
	results []map[string]any
	last    string   // the last token it accepted
	methods []string // JSON-RPC methods of the POSTs it let through
	refused []error  // why it refused requests
	down    bool     // crow_sync_status fails
}

type peerOption func(*testPeer)

func legacyOnly(p *testPeer) { p.legacy = true }
func hanging(p *testPeer)    { p.hang = make(chan struct{}) }
func withTool(tool mcp.Tool, h server.ToolHandlerFunc) peerOption {
	return func(p *testPeer) { p.extra = append(p.extra, server.ServerTool{Tool: tool, Handler: h}) }
}
func withResults(r ...map[string]any) peerOption {
	return func(p *testPeer) { p.results = r }
}

// result is a crow_search_memories result object.
func result(id string, score float64) map[string]any {
	return map[string]any{"id": id, "content": "memory " + id, "category": "fact", "score": score}
}

func newTestPeer(t *testing.T, id string, keys *keyring, opts ...peerOption) *testPeer {
	t.Helper()
	p := &testPeer{id: id, name: id + "-name", keys: keys, now: time.Now, seen: NewReplayCache(nil, 0), entered: make(chan struct{}, 16)}
	for _, o := range opts {
		o(p)
	}
	p.handler.Store(p.newMCP())
	p.srv = httptest.NewServer(http.HandlerFunc(p.serveHTTP))
	t.Cleanup(p.srv.Close)
	if p.hang != nil {
		t.Cleanup(func() { close(p.hang) }) // runs before srv.Close
	}
	return p
}

func (p *testPeer) peer() Peer {
	return Peer{ID: p.id, Name: p.name, GatewayURL: p.srv.URL, Online: true}
}

// restart replaces the MCP server with a new one, which knows no sessions.
// With dropConns it also closes the open connections, as a restarted daemon
// would; whether the client's next request then fails on its stale
// connection (EOF) or goes out on a new one (and gets 404 for its session)
// is a race, which the client has to survive either way.
func (p *testPeer) restart(dropConns bool) {
	p.handler.Store(p.newMCP())
	if dropConns {
		p.srv.CloseClientConnections()
	}
}

func (p *testPeer) count(method string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, m := range p.methods {
		if m == method {
			n++
		}
	}
	return n
}

func (p *testPeer) lastToken() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

func (p *testPeer) refusals() []error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.refused)
}

func (p *testPeer) serveHTTP(w http.ResponseWriter, r *http.Request) {
	p.requests.Add(1)
	if r.URL.Path != MCPPath {
		http.NotFound(w, r)
		return
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	c, err := Verify(tok, p.id, p.now(), p.keys.keyOf)
	if err == nil {
		err = p.seen.Admit(c)
	}
	if !ok || err != nil {
		p.mu.Lock()
		p.refused = append(p.refused, err)
		p.mu.Unlock()
		w.Header().Set("WWW-Authenticate", "Bearer")
		http.Error(w, `{"error":"bad token"}`, http.StatusUnauthorized)
		return
	}
	p.mu.Lock()
	p.last = tok
	p.mu.Unlock()
	if r.Method == http.MethodPost {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(body, &msg)
		p.mu.Lock()
		p.methods = append(p.methods, msg.Method)
		p.mu.Unlock()
	}
	p.handler.Load().ServeHTTP(w, r)
}

func (p *testPeer) newMCP() *server.StreamableHTTPServer {
	ms := server.NewMCPServer(p.id, "test", server.WithToolCapabilities(false),
		server.WithStrictInputSchemaDefault(), server.WithInputSchemaValidation())
	ms.AddTool(mcp.NewTool(SearchTool,
		mcp.WithString("query", mcp.Required()),
		mcp.WithNumber("limit"),
	), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		select {
		case p.entered <- struct{}{}:
		default:
		}
		if p.hang != nil {
			select {
			case <-p.hang:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		query, err := req.RequireString("query")
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		p.mu.Lock()
		results := slices.Clone(p.results)
		p.mu.Unlock()
		if results == nil {
			results = []map[string]any{}
		}
		return mcp.NewToolResultStructuredOnly(map[string]any{"query": query, "results": results}), nil
	})
	ms.AddTool(mcp.NewTool(HealthTool), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.down {
			return mcp.NewToolResultError("sync node stopped"), nil
		}
		return mcp.NewToolResultStructuredOnly(map[string]any{"self": p.id}), nil
	})
	ms.AddTool(mcp.NewTool(SummariesTool, mcp.WithBoolean("self_only")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			self := Summary{
				InstanceID: p.id, Name: p.name, Memories: 3, Health: HealthOK,
				Projects:   []ProjectCount{{ID: "p1", Name: "crow", Memories: 2}},
				Categories: map[string]int{"fact": 2, "decision": 1},
			}
			return mcp.NewToolResultStructuredOnly(summariesAnswer{Instances: []Summary{self}}), nil
		})
	ms.AddTools(p.extra...)
	var opts []server.StreamableHTTPOption
	if p.legacy {
		// Sessions, which a restart forgets: the old one gets 404.
		opts = append(opts, server.WithStreamableHTTPProtocolVersions(mcp.LATEST_LEGACY_PROTOCOL_VERSION),
			server.WithStateful(true))
	}
	return server.NewStreamableHTTPServer(ms, opts...)
}

// peerSet is a settable Peers func.
type peerSet struct {
	mu    sync.Mutex // guards peers
	peers []Peer
}

func (s *peerSet) list() []Peer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.peers)
}

func (s *peerSet) set(peers ...Peer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.peers = peers
}

// federation is "home" and its peers, which accept home's tokens.
type federation struct {
	homeKey ed25519.PrivateKey
	keys    *keyring // shared by the peers
	peers   *peerSet
}

func newFederation() *federation {
	home := testKey("home")
	return &federation{homeKey: home, keys: newKeyring(map[string]ed25519.PrivateKey{"home": home}), peers: &peerSet{}}
}

// client returns home's Client, closed at cleanup.
func (f *federation) client(t *testing.T, clk clock.Clock) *Client {
	c := NewClient(ClientConfig{
		Self:   "home",
		Tokens: NewTokenSource("home", f.homeKey, clk),
		Peers:  f.peers.list,
		Clock:  clk,
	})
	t.Cleanup(func() { c.Close() })
	return c
}
