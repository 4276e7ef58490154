// Package gateway is the only package that speaks HTTP to users: the REST API,
// the MCP endpoints, /health, /metrics and the OpenAPI document (the web UI
// comes later). It composes the domain packages and owns no business rules.
//
// Every route is one entry of the route table (Server.routeTable), which
//
//  1. registers the handler on the mux, wrapped in the route's policies: the
//     owner key unless the route is public, a body cap, and the check of its
//     query parameters (the browser guard, mcp_guard.go, is in front of the
//     whole mux: every route, the UI and /health included);
//  2. describes the route for GET /v1/openapi.json;
//  3. is what the tests walk (auth on every owner route, the document against
//     the mux).
//
// What no route matches gets a JSON 405 (with Allow) or 404. Every error is
// {"error": "..."}.
package gateway

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/crow-sync/crow/conflicts"
	"github.com/crow-sync/crow/gateway/ui"
	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/projects"
	"github.com/crow-sync/crow/registry"
	"github.com/crow-sync/crow/store"
	crowsync "github.com/crow-sync/crow/sync"
)

// Self describes this instance for /health.
type Self struct {
	InstanceID string
	Name       string
	Role       string
	CrowID     string
	PublicKey  string // hex Ed25519
	Version    string
	GatewayURL string // the URL peers reach this gateway at
	CreatedAt  string // RFC 3339: when this instance was initialised
	// SyncAddrs returns the multiaddrs peers dial; it may change at run time.
	SyncAddrs func() []string
}

// Config holds what the gateway composes. Every field but Logger and Registry
// is required.
type Config struct {
	Logger   *slog.Logger
	Self     Self
	Keys     *KeyChecker
	Sign     func(challenge []byte) []byte // signs a health challenge with the instance key
	Memories *memory.Service
	// Instances is the registry of crow_instances.
	Instances *registry.Registry
	// SyncNode is the replication node; SyncFeeds the feeds it replicates.
	SyncNode  *crowsync.Node
	SyncFeeds syncFeeds
	// SyncPause pauses (true) or resumes replication; SyncPaused reports it.
	SyncPause  func(paused bool)
	SyncPaused func() bool
	// DB and Writer serve the generic rows of /v1/tables.
	DB     *store.DB
	Writer *store.Writer
	// Conflicts holds sync_conflicts records and notifications; Recovery
	// resolves them (keep, restore, resolve all).
	Conflicts *conflicts.Store
	Recovery  *conflicts.Recovery
	// Projects holds the Project State versions; ForwardConsolidation sends
	// a consolidation to home when this instance is not home (nil: refused).
	Projects             *projects.Service
	ForwardConsolidation ConsolidateFunc
	// Chain reads anchors for the verify endpoints (nil: this instance
	// reads no chain and reports home's replicated records as unverified);
	// ProjectID is the keyed project id the chain uses.
	Chain     ChainReader
	ProjectID func(project string) [32]byte
	// Consolidated, if set, is called after this instance stored a new
	// state version (the daemon kicks the anchoring worker).
	Consolidated func()
	// Metrics receives the gateway's metrics and is served at /metrics.
	Metrics *prometheus.Registry
	// Remote runs a tool on another instance (package federation's Client);
	// /router/mcp uses it for every instance_id but this one. Nil: the
	// router answers calls for other instances with a tool error.
	Remote RemoteCaller
	// Federation fans searches out to other instances (instances=all or a
	// list of ids); SearchDeadline bounds each instance's part (default
	// DefaultSearchDeadline). Nil: only this instance can be searched.
	Federation     Searcher
	SearchDeadline time.Duration
	// Summaries caches the other instances' summaries for
	// crow_instance_summaries (nil: this instance's own only).
	Summaries SummaryCache
	// VerifyPeerToken checks a federation bearer token presented to /mcp by
	// another instance and returns its issuer (the peer's instance id). Nil:
	// /mcp accepts the owner key only.
	VerifyPeerToken func(token string) (issuer string, err error)
	// PeerAllowed says which tools a peer may call through /mcp (deny by
	// default: nil allows none).
	PeerAllowed func(tool string) bool
	// RemoteAllowed says which tools other instances run for this one (the
	// union of their allow-lists); /router/mcp lists the others as local-only
	// (routerscope.go). Nil: PeerAllowed stands in for it.
	RemoteAllowed func(tool string) bool
	// RotateAPIKey writes a new owner API key to the data directory and
	// returns it (home.Home.RotateAPIKey); POST /v1/apikey/rotate calls it,
	// then makes Keys accept only the new key.
	RotateAPIKey func() (string, error)
}

// Server is the HTTP gateway.
type Server struct {
	cfg     Config
	log     *slog.Logger
	keys    *KeyChecker
	mux     *http.ServeMux
	handler http.Handler
	metrics *httpMetrics
	// routes is the route table: every pattern the mux serves but the
	// catch-all, each registered once by New. /v1/openapi.json is built from
	// it and the tests walk it.
	routes  []route
	openapi []byte // the OpenAPI document, built once by New
	// rotateMu serialises API key rotations (handleAPIKeyRotate).
	rotateMu sync.Mutex
}

// access says who may call a route.
type access int

const (
	ownerOnly   access = iota // the owner API key is required
	public                    // anyone who can reach the gateway
	ownerOrPeer               // the owner key, or a peer instance's federation token (/mcp)
)

// route is one entry of the route table: how the mux registers it and what
// /v1/openapi.json says about it.
type route struct {
	method string // "" for every method (the MCP endpoints)
	path   string // the ServeMux path, with {wildcards}
	access access
	// maxBody caps the request body (MaxBodyBytes when 0).
	maxBody int64
	// query lists the accepted query parameters; any other is refused with a
	// 400, and so is a value of the wrong type. anyQuery skips the check.
	query    []param
	anyQuery bool
	h        http.Handler
	doc      routeDoc
}

// pattern is the route's ServeMux pattern.
func (rt route) pattern() string {
	if rt.method == "" {
		return rt.path
	}
	return rt.method + " " + rt.path
}

// New builds the gateway's routes.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = prometheus.NewRegistry()
	}
	s := &Server{cfg: cfg, log: cfg.Logger.With("component", "gateway"), keys: cfg.Keys, mux: http.NewServeMux()}
	s.metrics = newHTTPMetrics(cfg.Metrics)
	s.registerCollectors(cfg.Metrics)

	s.routes = s.routeTable()
	for _, rt := range s.routes {
		s.mux.Handle(rt.pattern(), s.wrap(rt))
	}
	// The web UI: static pages, public because they hold no data (every
	// datum comes from the REST API with the owner key). Outside the route
	// table: not an API, so not in the OpenAPI document.
	web := ui.Handler()
	s.mux.Handle("/ui/", web)
	s.mux.Handle("/ui", web)
	s.mux.HandleFunc("/", s.handleUnmatched)
	s.openapi = s.buildOpenAPI()
	// The browser guard (Host / Origin / Sec-Fetch-Site) covers every route,
	// before auth: REST, MCP, the UI and /health.
	s.handler = s.observe(s.browserGuard(s.mux))
	return s
}

// routeTable is every route of the gateway. Paths and bodies are described
// next to the handler so the OpenAPI document cannot drift from the mux.
func (s *Server) routeTable() []route {
	owner := func(method, path string, h http.HandlerFunc, doc routeDoc, query ...param) route {
		return route{method: method, path: path, access: ownerOnly, h: h, doc: doc, query: query}
	}
	memFilters := []param{pProject, pCategory, pMinImportance, pTags, pLimit}
	rs := []route{
		{method: "GET", path: "/health", access: public, h: http.HandlerFunc(s.handleHealth), query: []param{pChallenge},
			doc: routeDoc{tag: "instance", summary: "This instance's identity; with ?challenge=HEX a signature proving it holds the instance key", resp: healthResponse{}}},
		{method: "GET", path: "/metrics", access: ownerOnly, h: promhttp.HandlerFor(s.cfg.Metrics, promhttp.HandlerOpts{}), anyQuery: true,
			doc: routeDoc{tag: "operations", summary: "Prometheus metrics (text exposition format)", text: true}},
		{method: "GET", path: OpenAPIPath, access: public, h: http.HandlerFunc(s.handleOpenAPI),
			doc: routeDoc{tag: "operations", summary: "This OpenAPI 3.1 document", resp: map[string]any{}}},

		owner("POST", "/v1/memory", s.handleMemoryCreate, routeDoc{tag: "memories", summary: "Store a memory", body: memory.CreateInput{}, resp: memory.Memory{}, status: http.StatusCreated}),
		owner("GET", "/v1/memory/{id}", s.handleMemoryGet, routeDoc{tag: "memories", summary: "Read a memory", resp: memory.Memory{}}),
		owner("PATCH", "/v1/memory/{id}", s.handleMemoryPatch, routeDoc{tag: "memories", summary: "Change fields of a memory (absent fields are kept)", body: memory.PatchInput{}, resp: memory.Memory{}}),
		owner("DELETE", "/v1/memory/{id}", s.handleMemoryDelete, routeDoc{tag: "memories", summary: "Delete a memory", resp: deleteResponse{}}),
		owner("GET", "/v1/memories/list", s.handleMemoryList, routeDoc{tag: "memories", summary: "List memories, newest first, a page at a time", resp: memory.Page{}},
			append(memFilters, pCursor, pOrder)...),
		owner("GET", "/v1/memories/search", s.handleMemorySearch, routeDoc{tag: "memories", summary: "Full-text search of memories, best first", resp: searchResponse{}},
			append([]param{pQ, pInstances}, memFilters...)...),

		owner("GET", "/v1/instances", s.handleInstancesList, routeDoc{tag: "instances", summary: "The registered instances (machines) of this identity", resp: instancesResponse{}}),
		owner("POST", "/v1/instances", s.handleInstancesRegister, routeDoc{tag: "instances", summary: "Register a peer by its gateway URL (it registers this instance back)", body: registerRequest{}, resp: registerResponse{}, status: http.StatusCreated}),
		owner("DELETE", "/v1/instances/{id}", s.handleInstancesRevoke, routeDoc{tag: "instances", summary: "Revoke an instance", resp: registry.Instance{}}),
		{method: "POST", path: registry.AnnouncePath, access: public, h: http.HandlerFunc(s.handleInstancesAnnounce),
			doc: routeDoc{tag: "instances", summary: "A peer of this identity asks to be registered back (signed announcement)", body: registry.Announcement{}, resp: registry.Instance{}, status: http.StatusCreated}},

		owner("GET", "/v1/sync/status", s.handleSyncStatus, routeDoc{tag: "sync", summary: "Replication state: feeds held here, peers and their lag", resp: syncStatusResponse{}}),
		owner("POST", "/v1/sync/pause", s.handleSyncPause(true), routeDoc{tag: "sync", summary: "Pause replication (until resumed or restarted)", resp: pausedResponse{}}),
		owner("POST", "/v1/sync/resume", s.handleSyncPause(false), routeDoc{tag: "sync", summary: "Resume replication", resp: pausedResponse{}}),
		owner("GET", "/v1/sync/conflicts", s.handleConflictsList, routeDoc{tag: "sync", summary: "Sync conflict records, newest first", resp: conflictsResponse{}},
			pTable, pRowID, pUnresolved, pListLimit, pCursor),
		owner("GET", "/v1/sync/conflicts/{id}", s.handleConflictGet, routeDoc{tag: "sync", summary: "One sync conflict record", resp: conflicts.Conflict{}}),
		owner("POST", "/v1/sync/conflicts/{id}/keep", s.handleConflictKeep, routeDoc{tag: "sync", summary: "Resolve a conflict by keeping the live version (idempotent; replicates)", resp: conflicts.Conflict{}}),
		owner("POST", "/v1/sync/conflicts/{id}/restore", s.handleConflictRestore, routeDoc{tag: "sync", summary: "Write the overwritten version back as a new edit and resolve the conflict; 409 if the row changed since (stale), for insert collisions and crow_context rows", resp: restoreResponse{}}),
		owner("POST", "/v1/sync/conflicts/resolve-all", s.handleConflictsResolveAll, routeDoc{tag: "sync", summary: "Keep the live version of every unresolved conflict (optionally of one table)", body: resolveAllRequest{}, resp: resolveAllResponse{}}),
		owner("GET", "/v1/notifications", s.handleNotifications, routeDoc{tag: "sync", summary: "Notifications, newest first", resp: notificationsResponse{}},
			pListLimit, pCursor),
		owner("POST", "/v1/notifications/{id}/read", s.handleNotificationRead, routeDoc{tag: "sync", summary: "Mark a notification read", resp: readResponse{}}),

		owner("GET", "/v1/tables/{table}/rows", s.handleRowList, routeDoc{tag: "tables", summary: "Rows of a synced table in row id order, a page at a time", resp: rowsResponse{}},
			pCursor, pLimit, pDeleted, pRowOrder),
		owner("GET", "/v1/tables/{table}/rows/{row_id}", s.handleRowGet, routeDoc{tag: "tables", summary: "One row (envelope) of a synced table", resp: store.Row{}}, pDeleted),
		owner("PUT", "/v1/tables/{table}/rows/{row_id}", s.handleRowPut, routeDoc{tag: "tables", summary: "Insert or replace a row of a generic table (notes, settings, contacts, sources, blog_posts, crow_context)", body: rowData{}, resp: store.Row{}}),
		owner("DELETE", "/v1/tables/{table}/rows/{row_id}", s.handleRowDelete, routeDoc{tag: "tables", summary: "Delete a row of a generic table (leaves a tombstone)", resp: rowDeletedResponse{}}),

		owner("GET", "/v1/projects", s.handleProjectsList, routeDoc{tag: "projects", summary: "Projects: names, descriptions, memory counts and the newest state version", resp: projectsResponse{}}),
		owner("POST", "/v1/projects", s.handleProjectsCreate, routeDoc{tag: "projects", summary: "Create or describe a project", body: projectRequest{}, resp: projectInfo{}, status: http.StatusCreated}),
		owner("GET", "/v1/project/{name}/state", s.handleProjectState, routeDoc{tag: "projects", summary: "The project's newest Project State version (replicated from home), with its anchoring", resp: stateResponse{}}),
		{method: "GET", path: "/v1/project/{name}/state/anchor", access: public, h: http.HandlerFunc(s.handleStateAnchor), query: []param{pVersion},
			doc: routeDoc{tag: "projects", summary: "Is this state version anchored, and does the on-chain hash match? (public)", resp: verifyResponse{}}},
		{method: "GET", path: "/v1/verify/{name}", access: public, h: http.HandlerFunc(s.handleVerify),
			doc: routeDoc{tag: "projects", summary: "Verify every state version of a project against the chain (public)", resp: verifyResponse{}}},
		owner("POST", "/v1/project/{name}/state/ops", s.handleProjectStateOps, routeDoc{tag: "projects", summary: "Consolidate: apply ops on home (a satellite forwards to home); invalid ops come back in rejected", body: projects.Request{}, resp: projects.Response{}}),

		owner("POST", "/v1/apikey/rotate", s.handleAPIKeyRotate, routeDoc{tag: "operations", summary: "Replace the owner API key; the old one stops working at once", resp: rotateResponse{}}),
	}
	return append(rs, s.mcpRoutes()...)
}

// wrap applies a route's policies around its handler: owner key, body cap,
// query validation, in that order (the browser guard is global, see New).
func (s *Server) wrap(rt route) http.Handler {
	h := rt.h
	if !rt.anyQuery {
		h = checkQuery(rt.query, h)
	}
	h = limitBody(cmp.Or(rt.maxBody, MaxBodyBytes), h)
	switch rt.access {
	case ownerOnly:
		h = s.requireOwner(h)
	case ownerOrPeer:
		h = s.requireOwnerOrPeer(h)
	}
	return h
}

// handleUnmatched answers what no route matched: 405 with an Allow header
// when the path exists for other methods, else 404; both as JSON errors
// (ServeMux's own answers are plain text).
func (s *Server) handleUnmatched(w http.ResponseWriter, r *http.Request) {
	if allow := s.allowedMethods(r); len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeError(w, http.StatusMethodNotAllowed, "method %s is not allowed on %s; use %s", r.Method, r.URL.Path, strings.Join(allow, ", "))
		return
	}
	writeError(w, http.StatusNotFound, "no such endpoint: %s %s (GET %s lists them)", r.Method, r.URL.Path, OpenAPIPath)
}

// allowedMethods lists the methods a route serves for r's path.
func (s *Server) allowedMethods(r *http.Request) []string {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, p := s.mux.Handler(probe); p != "" && p != "/" {
			allow = append(allow, m)
		}
	}
	return allow
}

// Handler returns the gateway's root handler (for tests and embedding).
func (s *Server) Handler() http.Handler { return s.handler }

// Serve serves HTTP on ln until ctx is done, then shuts down gracefully.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		return err
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

type ctxKey int

const requestIDKey ctxKey = 0

// statusRecorder remembers the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// observe assigns a request id, logs the request and records its metrics.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get("X-Request-Id")
		if id == "" || len(id) > 64 {
			var b [8]byte
			_, _ = rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		w.Header().Set("X-Request-Id", id)
		rec := &statusRecorder{ResponseWriter: w}
		r = r.WithContext(context.WithValue(r.Context(), requestIDKey, id))
		next.ServeHTTP(rec, r)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		route := r.Pattern
		if route == "" || route == "/" {
			route = "unmatched"
		}
		d := time.Since(start)
		s.metrics.observe(route, rec.status, d)
		level := slog.LevelDebug
		if rec.status >= 500 {
			level = slog.LevelError
		} else if rec.status >= 400 {
			level = slog.LevelInfo
		}
		s.log.Log(r.Context(), level, "http request", "request_id", id, "method", r.Method,
			"path", r.URL.Path, "status", rec.status, "duration", d)
	})
}
