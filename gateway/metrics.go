package gateway

import (
	"context"
	"strconv"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/crow-sync/crow/app"
)

// The gateway's metrics, served at /metrics with whatever else the daemon
// registers in Config.Metrics (the sync node's and the apply loop's):
//
//   - crow_http_requests_total{route,code}, crow_http_request_duration_seconds{route}
//   - crow_mcp_tool_call_duration_seconds{endpoint,tool,outcome}
//   - crow_store_writes_total, crow_store_write_commits_total (Config.Writer)
//   - crow_feed_length{feed,instance}, crow_sync_peer_lag{peer,instance_id}
//     (app's sync.status operation)
//   - crow_sync_conflicts_unresolved (app's conflicts.list operation)
//
// The last four are read from their sources at scrape time.

type httpMetrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	tools    *prometheus.HistogramVec
	peers    *prometheus.CounterVec // federated calls by outcome
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
		tools: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "crow_mcp_tool_call_duration_seconds",
			Help:    "MCP tool call latency by endpoint (mcp, router), tool and outcome (ok, error: a tool error result).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 14),
		}, []string{"endpoint", "tool", "outcome"}),
		peers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crow_federation_peer_requests_total",
			Help: "Requests from peer instances to /mcp by outcome: admitted, refused (bad token: a security event), tool_denied (outside the allow-list).",
		}, []string{"outcome"}),
	}
	reg.MustRegister(m.requests, m.latency, m.tools, m.peers)
	return m
}

func (m *httpMetrics) observe(route string, status int, d time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(route).Observe(d.Seconds())
}

// timeTool wraps a tool handler to record its latency. Each tool's "ok"
// series exists from the start (zero), so a scrape shows every tool.
func (m *httpMetrics) timeTool(endpoint, tool string, next server.ToolHandlerFunc) server.ToolHandlerFunc {
	ok := m.tools.WithLabelValues(endpoint, tool, "ok")
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		start := time.Now()
		res, err := next(ctx, req)
		if err != nil || (res != nil && res.IsError) {
			m.tools.WithLabelValues(endpoint, tool, "error").Observe(time.Since(start).Seconds())
		} else {
			ok.Observe(time.Since(start).Seconds())
		}
		return res, err
	}
}

// scrapeTimeout bounds what a scrape waits for the sync node's status.
const scrapeTimeout = 2 * time.Second

// registerCollectors registers the collectors that read the daemon's parts at
// scrape time; a part the gateway was built without has none.
func (s *Server) registerCollectors(reg prometheus.Registerer) {
	if w := s.cfg.Writer; w != nil {
		reg.MustRegister(
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "crow_store_writes_total",
				Help: "Local mutations committed by the write path (rows written by this instance).",
			}, func() float64 { return float64(w.Stats().Mutations) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "crow_store_write_commits_total",
				Help: "Transactions committed by the write path (one fsync and one feed signature each).",
			}, func() float64 { return float64(w.Stats().Commits) }),
		)
	}
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "crow_sync_conflicts_unresolved",
		Help: "sync_conflicts records not resolved yet.",
	}, func() float64 {
		yes := true
		list, err := app.Call(context.Background(), s.app, app.ConflictsList, app.ConflictListIn{Unresolved: &yes})
		if err != nil {
			if app.KindOf(context.Background(), err) != app.KindUnavailable {
				s.log.Warn("metrics: counting unresolved conflicts", "err", err)
			}
			return 0
		}
		return float64(len(list.Conflicts))
	}))
	reg.MustRegister(&syncCollector{s: s})
}

var (
	feedLengthDesc = prometheus.NewDesc("crow_feed_length",
		"Contiguous entries held here of each feed, by feed key (first 16 hex digits) and instance name.",
		[]string{"feed", "instance"}, nil)
	peerLagDesc = prometheus.NewDesc("crow_sync_peer_lag",
		"Entries this instance misses from each peer, all feeds together (from the sync status).",
		[]string{"peer", "instance_id"}, nil)
)

// syncCollector reports feed lengths and per-peer lag from the sync status.
type syncCollector struct{ s *Server }

func (c *syncCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- feedLengthDesc
	ch <- peerLagDesc
}

func (c *syncCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	st, err := app.Call(ctx, c.s.app, app.SyncStatusOp, app.NoInput{})
	if err != nil && app.KindOf(ctx, err) != app.KindUnavailable {
		c.s.log.Warn("metrics: reading the sync status", "err", err)
		// what was read before the failure is still reported
	}
	for _, f := range st.Feeds {
		ch <- prometheus.MustNewConstMetric(feedLengthDesc, prometheus.GaugeValue, float64(f.Length), shortKey(f.Feed), f.Name)
	}
	for _, p := range st.Peers {
		name := p.Name
		if name == "" {
			name = p.PeerID
		}
		ch <- prometheus.MustNewConstMetric(peerLagDesc, prometheus.GaugeValue, float64(p.Lag), name, p.InstanceID)
	}
}

// shortKey is the first 16 hex digits of a hex feed key.
func shortKey(h string) string {
	if len(h) > 16 {
		return h[:16]
	}
	return h
}
