package sync

import "github.com/prometheus/client_golang/prometheus"

// metrics are a Node's Prometheus collectors (one set per Node).
type metrics struct {
	received  *prometheus.CounterVec // by peer
	sent      *prometheus.CounterVec // by peer
	rejected  *prometheus.CounterVec // by kind: head, range, protocol
	forks     prometheus.Counter
	stale     prometheus.Counter
	connected prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		received: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crow_sync_entries_received_total",
			Help: "Feed entries received from a peer in answer to requests.",
		}, []string{"peer"}),
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crow_sync_entries_sent_total",
			Help: "Feed entries served to a peer.",
		}, []string{"peer"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crow_sync_rejected_total",
			Help: "Heads, ranges or messages from peers that failed verification (security events).",
		}, []string{"kind"}),
		forks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "crow_sync_forks_total",
			Help: "Feed forks detected while replicating.",
		}),
		stale: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "crow_sync_ranges_stale_total",
			Help: "Ranges proven against a head this replica could not use yet (asked again later; not a fault).",
		}),
		connected: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "crow_sync_peers_connected",
			Help: "Peers with a live sync session.",
		}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.received, m.sent, m.rejected, m.forks, m.stale, m.connected} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}
