package apply

import (
	"sync/atomic"
	"time"

	"github.com/crow-sync/crow/store"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the apply loop's Prometheus collectors.
type Metrics struct {
	// Entries counts processed feed entries by outcome: fast_forward,
	// concurrent, stale, parked, cleared (an entry whose data was cleared,
	// skipped).
	Entries *prometheus.CounterVec
	// Conflicts counts sync_conflicts records created.
	Conflicts prometheus.Counter
	// Superseded counts records retracted because a newer pair of concurrent
	// versions replaced them.
	Superseded prometheus.Counter
	// Parked counts entries parked (unknown schema, unparsable, or naming
	// another instance than the one the feed is certified for).
	Parked prometheus.Counter
	// FeedsParked is the number of feeds held whose key is not certified
	// (Options.FeedTrust), so nothing of them is applied, by reason:
	// uncertified (no valid certificate known yet) or revoked.
	FeedsParked *prometheus.GaugeVec
}

// NewMetrics builds the collectors and registers them with reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		Entries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crow_apply_entries_total",
			Help: "Replicated feed entries processed by the apply loop, by outcome.",
		}, []string{"outcome"}),
		Conflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "crow_apply_conflicts_total",
			Help: "sync_conflicts records created by the apply loop.",
		}),
		Superseded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "crow_apply_conflicts_superseded_total",
			Help: "sync_conflicts records replaced by a newer pair of concurrent versions.",
		}),
		Parked: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "crow_apply_parked_total",
			Help: "Feed entries parked because their change record could not be applied (unknown schema, malformed, another instance than the feed's certified one).",
		}),
		FeedsParked: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "crow_apply_feeds_parked",
			Help: "Feeds held but not applied because their key has no valid certificate (uncertified) or is revoked, by reason.",
		}, []string{"reason"}),
	}
	for _, r := range []string{TrustUnknown.parkReason(), TrustRevoked.parkReason()} {
		m.FeedsParked.WithLabelValues(r) // exported at 0 from the start
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.Entries, m.Conflicts, m.Superseded, m.Parked, m.FeedsParked} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// Stats are the applier's counters since it was created (committed work
// only), and the feeds it currently skips.
type Stats struct {
	FastForward uint64 // entries that replaced the live row
	Concurrent  uint64 // concurrent entries merged (winner by lamport, instance id)
	Stale       uint64 // entries already applied or dominated: skipped
	Parked      uint64 // entries parked
	Cleared     uint64 // cleared entries (data forgotten): skipped, checkpoint moved past
	Conflicts   uint64 // conflict records created
	Superseded  uint64 // conflict records retracted
	// UncertifiedFeeds and RevokedFeeds are the feeds held that are
	// currently not applied: no valid certificate known, or revoked
	// (Options.FeedTrust; both 0 without it).
	UncertifiedFeeds, RevokedFeeds int
	// CommitTime is the time spent committing transactions (with the
	// store's SyncWrites, mostly the fsync), failed commits included.
	CommitTime time.Duration
}

type stats struct {
	ff, conc, stale, parked, cleared, conflicts, superseded atomic.Uint64
	commitNanos                                             atomic.Uint64
	uncertifiedFeeds, revokedFeeds                          atomic.Int64
}

// effects are the counts and rows of one committed transaction.
type effects struct {
	byOutcome  [3]uint64
	parked     uint64
	cleared    uint64
	conflicts  uint64
	superseded uint64
	rows       []*row
}

type row struct {
	table string
	r     *store.Row
}

func (a *Applier) account(e *effects) {
	for o, n := range e.byOutcome {
		if n > 0 {
			a.m.Entries.WithLabelValues(outcome(o).String()).Add(float64(n))
		}
	}
	if e.parked > 0 {
		a.m.Entries.WithLabelValues("parked").Add(float64(e.parked))
		a.m.Parked.Add(float64(e.parked))
	}
	if e.cleared > 0 {
		a.m.Entries.WithLabelValues("cleared").Add(float64(e.cleared))
	}
	a.m.Conflicts.Add(float64(e.conflicts))
	a.m.Superseded.Add(float64(e.superseded))
	a.st.ff.Add(e.byOutcome[outFastForward])
	a.st.conc.Add(e.byOutcome[outConcurrent])
	a.st.stale.Add(e.byOutcome[outStale])
	a.st.parked.Add(e.parked)
	a.st.cleared.Add(e.cleared)
	a.st.conflicts.Add(e.conflicts)
	a.st.superseded.Add(e.superseded)
}

// Stats returns the applier's counters.
func (a *Applier) Stats() Stats {
	return Stats{
		FastForward: a.st.ff.Load(), Concurrent: a.st.conc.Load(), Stale: a.st.stale.Load(),
		Parked: a.st.parked.Load(), Cleared: a.st.cleared.Load(), Conflicts: a.st.conflicts.Load(), Superseded: a.st.superseded.Load(),
		CommitTime:       time.Duration(a.st.commitNanos.Load()),
		UncertifiedFeeds: int(a.st.uncertifiedFeeds.Load()), RevokedFeeds: int(a.st.revokedFeeds.Load()),
	}
}
