// Package gateway is the only package that speaks HTTP to users: it serves
// the operations of package app's table as REST routes (/health among them),
// MCP tools (/mcp, /router/mcp) and the OpenAPI document, plus /metrics, the
// chain's public JSON-RPC (chainrpc.go) and the web UI (gateway/ui). It adapts HTTP and MCP to app and owns no
// business rules: what an operation does, who may call it and how its input
// is checked are app's.
//
// Every route is one entry of the route table (Server.routeTable), which
//
//  1. registers the handler on the mux, wrapped in the route's policies: the
//     owner key unless the route is public, a body cap, and (for the
//     gateway's own routes) the refusal of query strings (the browser guard,
//     mcp_guard.go, is in front of the whole mux: every route, the UI and
//     /health included);
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

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/gateway/ui"
	"github.com/crow-sync/crow/store"
)

// Self describes this instance (app.Self).
type Self = app.Self

// Config holds what the gateway composes. App is required; the rest is
// optional.
type Config struct {
	Logger *slog.Logger
	// App runs the operations; the gateway serves its table.
	App  *app.App
	Keys *KeyChecker
	// Writer feeds the metrics collectors (nil: none).
	Writer *store.Writer
	// Metrics receives the gateway's metrics and is served at /metrics.
	Metrics *prometheus.Registry
	// Remote runs a tool on another instance (package federation's Client);
	// /router/mcp uses it for every instance_id but this one. Nil: the
	// router answers calls for other instances with a tool error.
	Remote RemoteCaller
	// VerifyPeerToken checks a federation bearer token presented to /mcp by
	// another instance and returns its issuer (the peer's instance id). Nil:
	// /mcp accepts the owner key only.
	VerifyPeerToken func(token string) (issuer string, err error)
	// ExpectedTokenRefusal, if set, says a refused token is expected (its
	// issuer is not registered here yet): it is logged at info level, not
	// as a security warning. It is still refused.
	ExpectedTokenRefusal func(token string, err error) bool
	// PeerAllowed, if set, overrides which tools a peer may call through
	// /mcp (default: the operations app's table gives peer access).
	PeerAllowed func(tool string) bool
	// RemoteAllowed says which tools other instances run for this one (the
	// union of their allow-lists); /router/mcp lists the others as local-only
	// (routerscope.go). Nil: the table's peer tools (app.PeerTools), which
	// the same software on every instance allows.
	RemoteAllowed func(tool string) bool
	// ChainRPC serves the chain's public, read-only JSON-RPC at
	// ChainRPCPath (package anchor's PublicRPC). Nil: an instance without
	// the embedded chain; the route answers 404.
	ChainRPC http.Handler
}

// Server is the HTTP gateway.
type Server struct {
	cfg     Config
	app     *app.App
	log     *slog.Logger
	keys    *KeyChecker
	mux     *http.ServeMux
	handler http.Handler
	metrics *httpMetrics
	// routes is the route table: every pattern the mux serves but the
	// catch-all, each registered once by New. /v1/openapi.json is built from
	// it and the tests walk it.
	routes []route
	// openapi is the OpenAPI document, built from routes at its first
	// request (not in New: ~10-20 ms that every daemon start would pay).
	openapi func() []byte
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
	// anyQuery: the handler reads the query string itself (the operations
	// bind theirs); otherwise any query string is refused with a 400.
	anyQuery bool
	h        http.Handler
	doc      routeDoc
	// op is the operation of app's table the route serves (nil for the
	// gateway's own routes).
	op app.Op
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
	if cfg.App == nil {
		cfg.App = app.New(app.Deps{Logger: cfg.Logger})
	}
	s := &Server{cfg: cfg, app: cfg.App, log: cfg.Logger.With("component", "gateway"), keys: cfg.Keys, mux: http.NewServeMux()}
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
	s.openapi = sync.OnceValue(s.buildOpenAPI)
	// The browser guard (Host / Origin / Sec-Fetch-Site) covers every route,
	// before auth: REST, MCP, the UI and /health.
	s.handler = s.observe(s.browserGuard(s.mux))
	return s
}

// routeTable is every route of the gateway: the REST operations of app's
// table, the gateway's own (metrics, the OpenAPI document), the chain's
// JSON-RPC and the MCP endpoints.
func (s *Server) routeTable() []route {
	rs := []route{
		{method: "GET", path: "/metrics", access: ownerOnly, h: promhttp.HandlerFor(s.cfg.Metrics, promhttp.HandlerOpts{}), anyQuery: true,
			doc: routeDoc{tag: "operations", summary: "Prometheus metrics (text exposition format)", text: true}},
		{method: "GET", path: OpenAPIPath, access: public, h: http.HandlerFunc(s.handleOpenAPI),
			doc: routeDoc{tag: "operations", summary: "This OpenAPI 3.1 document", resp: map[string]any{}}},
	}
	for _, op := range app.Ops() {
		if op.Info().Method != "" {
			rs = append(rs, s.opRoute(op))
		}
	}
	rs = append(rs, s.chainRPCRoutes()...)
	return append(rs, s.mcpRoutes()...)
}

// wrap applies a route's policies around its handler: owner key, body cap,
// query check, in that order (the browser guard is global, see New).
func (s *Server) wrap(rt route) http.Handler {
	h := rt.h
	if !rt.anyQuery {
		h = refuseQuery(h)
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
	status  int
	written int64 // body bytes accepted
	werr    error // the first failed Write: the client's connection was gone
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
	n, err := r.ResponseWriter.Write(b)
	r.written += int64(n)
	if err != nil && r.werr == nil {
		r.werr = err
	}
	return n, err
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
		attrs := []any{"request_id", id, "method", r.Method, "path", r.URL.Path, "status", rec.status, "duration", d}
		// Which end gave up first, when an answer did not reach the client: a
		// failed Write means the client's connection closed before the answer
		// was complete (logged at info at least: the client saw a cut answer); a
		// cancelled context alone means it left while the handler ran (an SSE
		// stream's normal end, so the level stays).
		if gone := r.Context().Err() != nil; gone || rec.werr != nil {
			attrs = append(attrs, "client_gone", gone, "body_bytes", rec.written)
			if rec.werr != nil {
				attrs = append(attrs, "write_err", rec.werr.Error())
				level = max(level, slog.LevelInfo)
			}
		}
		s.log.Log(r.Context(), level, "http request", attrs...)
	})
}
