package registry

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/crow-sync/crow/clock"
)

// Prober defaults.
const (
	DefaultProbeInterval = 30 * time.Second
	DefaultProbeTimeout  = 5 * time.Second
	probeParallelism     = 8
)

// ProberConfig tunes a Prober. The zero value uses the defaults.
type ProberConfig struct {
	Interval time.Duration // between rounds; 0 means DefaultProbeInterval
	Timeout  time.Duration // per probe; 0 means DefaultProbeTimeout
	// HTTPClient makes the probes; nil uses the registry's client.
	HTTPClient *http.Client
	// OnRound, if set, is called after each round with the error of every
	// probed instance (nil for success), from the Serve goroutine. For
	// metrics and tests.
	OnRound func(results map[string]error)
}

// Prober keeps the status and last_seen of every other non-revoked
// instance current by probing its /health (SPEC §7). A probe succeeds when
// the gateway answers a fresh challenge signed by the key our seed derives
// for that instance id: then the instance is "online" and last_seen is now;
// otherwise it is "offline" and last_seen keeps its previous value. Before
// its first probe an instance is "unknown". Results are local observations
// (see Observations): probes never write the synced table.
type Prober struct {
	r        *Registry
	interval time.Duration
	timeout  time.Duration
	client   *http.Client
	onRound  func(map[string]error)
}

// NewProber returns a prober for r. Run it with Serve.
func NewProber(r *Registry, cfg ProberConfig) *Prober {
	return &Prober{
		r: r, interval: cmp.Or(cfg.Interval, DefaultProbeInterval), timeout: cmp.Or(cfg.Timeout, DefaultProbeTimeout),
		client: cmp.Or(cfg.HTTPClient, r.client), onRound: cfg.OnRound,
	}
}

// Serve probes once immediately and then every interval (on the registry's
// clock) until ctx is done; it then returns nil. An instance added (here or
// by replication) or whose URL changed is probed at once rather than at the
// next tick, so a new peer does not show "unknown" for a whole interval. A
// round waits for all its probes, each bounded by the probe timeout.
func (p *Prober) Serve(ctx context.Context) error {
	t := p.r.clock.NewTicker(p.interval)
	defer t.Stop()
	kick := make(chan struct{}, 1)
	unsubscribe := p.r.Subscribe(func(ev Event) {
		if ev.Kind == EventAdded || ev.Kind == EventUpdated {
			select {
			case kick <- struct{}{}:
			default:
			}
		}
	})
	defer unsubscribe()
	for {
		res := p.ProbeOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if p.onRound != nil {
			p.onRound(res)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		case <-kick:
		}
	}
}

// ProbeOnce runs one round: probes every non-revoked instance but self in
// parallel, records the results (observations store and mirror), and returns
// each instance's error (nil for success). If ctx ends mid-round nothing is
// recorded.
func (p *Prober) ProbeOnce(ctx context.Context) map[string]error {
	var targets []Row
	for _, row := range p.r.snap.Load().rows {
		if !row.Revoked && row.ID != p.r.selfID {
			targets = append(targets, row)
		}
	}
	results := make(map[string]error, len(targets))
	if len(targets) == 0 {
		return results
	}
	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		sem = make(chan struct{}, probeParallelism)
	)
	for _, row := range targets {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			err := p.probe(ctx, row)
			mu.Lock()
			results[row.ID] = err
			mu.Unlock()
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return results
	}
	now := p.r.clock.Now().Unix()
	obs := make(map[string]Observation, len(results))
	p.r.mu.Lock()
	for id, err := range results {
		o := p.r.observed[id]
		if err == nil {
			o = Observation{Status: StatusOnline, LastSeen: now}
		} else {
			o.Status = StatusOffline
		}
		obs[id] = o
	}
	p.r.mu.Unlock()
	for id, err := range results {
		if err != nil {
			p.r.log.Debug("probe failed", "id", id, "err", err)
		}
	}
	if err := p.r.recordObservations(ctx, obs); err != nil {
		p.r.log.Warn("recording probe results", "err", err)
	}
	return results
}

// probe checks one instance: a challenged /health that proves its identity.
func (p *Prober) probe(ctx context.Context, row Row) error {
	challenge, err := p.r.newChallenge()
	if err != nil {
		return err
	}
	ctx, cancel := clock.WithTimeout(ctx, p.r.clock, p.timeout)
	defer cancel()
	doc, err := fetchHealth(ctx, p.client, row.GatewayURL, challenge)
	if err != nil {
		return fmt.Errorf("probing %q: %w", row.ID, err)
	}
	if doc.InstanceID != row.ID {
		return fmt.Errorf("probing %q: %w: %s is now instance %q", row.ID, ErrUnhealthy, row.GatewayURL, doc.InstanceID)
	}
	if _, _, err := p.r.verifyHealth(doc, challenge); err != nil {
		return fmt.Errorf("probing %q: %w", row.ID, err)
	}
	return nil
}
