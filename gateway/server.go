// Package gateway is the only package that speaks HTTP to users: the REST API,
// metrics and (later) MCP and the web UI. It composes the domain packages and
// owns no business rules.
package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/crow-sync/crow/conflicts"
	"github.com/crow-sync/crow/memory"
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
	// Conflicts holds sync_conflicts records and notifications.
	Conflicts *conflicts.Store
	// Metrics receives the gateway's metrics and is served at /metrics.
	Metrics *prometheus.Registry
}

// Server is the HTTP gateway.
type Server struct {
	cfg     Config
	log     *slog.Logger
	keys    *KeyChecker
	handler http.Handler
	metrics *httpMetrics
}

// New builds the gateway's routes.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = prometheus.NewRegistry()
	}
	s := &Server{cfg: cfg, log: cfg.Logger.With("component", "gateway"), keys: cfg.Keys}
	s.metrics = newHTTPMetrics(cfg.Metrics)

	mux := http.NewServeMux()
	owner := func(pattern string, h http.HandlerFunc) { mux.Handle(pattern, s.requireOwner(h)) }

	mux.HandleFunc("GET /health", s.handleHealth)
	mux.Handle("GET /metrics", s.requireOwner(promhttp.HandlerFor(cfg.Metrics, promhttp.HandlerOpts{})))

	owner("POST /v1/memory", s.handleMemoryCreate)
	owner("GET /v1/memory/{id}", s.handleMemoryGet)
	owner("PATCH /v1/memory/{id}", s.handleMemoryPatch)
	owner("DELETE /v1/memory/{id}", s.handleMemoryDelete)
	owner("GET /v1/memories/list", s.handleMemoryList)
	owner("GET /v1/memories/search", s.handleMemorySearch)

	owner("GET /v1/instances", s.handleInstancesList)
	owner("POST /v1/instances", s.handleInstancesRegister)
	owner("DELETE /v1/instances/{id}", s.handleInstancesRevoke)
	mux.HandleFunc("POST "+registry.AnnouncePath, s.handleInstancesAnnounce)
	owner("GET /v1/sync/status", s.handleSyncStatus)
	owner("GET /v1/sync/conflicts", s.handleConflictsList)
	owner("GET /v1/sync/conflicts/{id}", s.handleConflictGet)
	owner("GET /v1/notifications", s.handleNotifications)
	owner("POST /v1/notifications/{id}/read", s.handleNotificationRead)
	owner("GET /v1/tables/{table}/rows/{row_id}", s.handleRowGet)
	owner("PUT /v1/tables/{table}/rows/{row_id}", s.handleRowPut)
	owner("DELETE /v1/tables/{table}/rows/{row_id}", s.handleRowDelete)
	owner("POST /v1/sync/pause", s.handleSyncPause(true))
	owner("POST /v1/sync/resume", s.handleSyncPause(false))

	s.mountMCP(mux)

	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such endpoint: %s %s", r.Method, r.URL.Path)
	})
	s.handler = s.observe(mux)
	return s
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
		if route == "" {
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

type httpMetrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crow_http_requests_total", Help: "HTTP requests by route and status code.",
		}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "crow_http_request_duration_seconds", Help: "HTTP request latency by route.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 14),
		}, []string{"route"}),
	}
	reg.MustRegister(m.requests, m.latency)
	return m
}

func (m *httpMetrics) observe(route string, status int, d time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(route).Observe(d.Seconds())
}
