package federation

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/crow-sync/crow/clock"
)

// Summary schedule and the tools it uses (SPEC §9).
const (
	// SummariesTool answers summaries; peers call it with {"self_only":
	// true} and get {"instances": [their own summary]}.
	SummariesTool = "crow_instance_summaries"
	// HealthTool is the cheap call that checks a peer's health.
	HealthTool = "crow_sync_status"
	// SummaryInterval: every peer's summary is fetched this often.
	SummaryInterval = time.Hour
	// HealthInterval: every peer's health is checked this often; a peer
	// whose summary has not been fetched yet is fetched then too.
	HealthInterval = 5 * time.Minute
	// SummaryCallTimeout bounds each call to a peer.
	SummaryCallTimeout = 10 * time.Second
)

// Health values of a Summary.
const (
	HealthOK           = "ok"
	HealthDown         = "down"         // the last check failed
	HealthUnauthorized = "unauthorized" // the peer refused this instance's token
	HealthUnknown      = "unknown"      // not checked yet
)

// ProjectCount is a project and how many memories it has.
type ProjectCount struct {
	ID       string `json:"id,omitempty"`
	Name     string `json:"name"`
	Memories int    `json:"memories"`
}

// Summary describes what an instance holds, to help an AI pick instances to
// ask. Instances compute their own; Summaries caches the peers'.
type Summary struct {
	InstanceID string         `json:"instance_id"`
	Name       string         `json:"name"`
	Projects   []ProjectCount `json:"projects"`
	Categories map[string]int `json:"categories"` // memories per category
	Memories   int            `json:"memories"`
	Health     string         `json:"health"` // one of the Health constants
	// UpdatedAt is when the summary was computed (self) or fetched (peers);
	// zero if never.
	UpdatedAt time.Time `json:"updated_at,omitzero"`
	// HealthCheckedAt is when Health was last checked (peers); zero if
	// never.
	HealthCheckedAt time.Time `json:"health_checked_at,omitzero"`
}

// summariesAnswer is what SummariesTool returns.
type summariesAnswer struct {
	Instances []Summary `json:"instances"`
}

// caller is what Summaries needs of a Client.
type caller interface {
	peerList() []Peer
	CallTool(ctx context.Context, instanceID, tool string, args json.RawMessage) (*mcp.CallToolResult, error)
}

// Summaries caches each peer's summary and health, refreshed by Serve.
// Safe for concurrent use.
type Summaries struct {
	peers   caller
	self    string
	clk     clock.Clock
	local   func(ctx context.Context) (Summary, error)
	timeout time.Duration
	log     *slog.Logger
	// onRound, when set (tests), is called after each refresh round.
	onRound func(full bool)

	kick chan struct{} // Kick: a round now (capacity 1)

	mu    sync.Mutex             // guards cache
	cache map[string]*cacheEntry // by peer id
}

type cacheEntry struct {
	summary  Summary // as fetched; zero UpdatedAt if never
	health   string
	healthAt time.Time
}

// NewSummaries returns a cache of c's peers' summaries. local computes this
// instance's own summary; clk schedules the refreshes and bounds each call
// by SummaryCallTimeout (nil: clock.System).
func NewSummaries(c *Client, clk clock.Clock, local func(ctx context.Context) (Summary, error)) *Summaries {
	return newSummaries(c, c.cfg.Self, clk, local, c.log)
}

func newSummaries(peers caller, self string, clk clock.Clock, local func(ctx context.Context) (Summary, error), log *slog.Logger) *Summaries {
	if log == nil {
		log = slog.Default()
	}
	return &Summaries{
		peers: peers, self: self, clk: clock.Or(clk), local: local, timeout: SummaryCallTimeout,
		log: log.With("part", "summaries"), cache: make(map[string]*cacheEntry), kick: make(chan struct{}, 1),
	}
}

// Kick asks Serve for a health round now, which also fetches the summary of
// every peer never fetched (the daemon kicks when an instance is
// registered, so a new peer does not wait for the next HealthInterval). It
// never blocks; kicks during a round coalesce into one more round.
func (s *Summaries) Kick() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Serve refreshes the cache until ctx ends: everything at once, then every
// peer's health each HealthInterval and summary each SummaryInterval. Each
// round calls the peers in parallel, each call bounded by
// SummaryCallTimeout, so a dead peer delays nothing beyond that.
func (s *Summaries) Serve(ctx context.Context) error {
	summaryT := s.clk.NewTicker(SummaryInterval)
	defer summaryT.Stop()
	healthT := s.clk.NewTicker(HealthInterval)
	defer healthT.Stop()
	full := true
	for {
		s.round(ctx, full)
		if ctx.Err() != nil {
			return nil
		}
		if s.onRound != nil {
			s.onRound(full)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-summaryT.C():
			full = true
		case <-healthT.C():
			full = false
		case <-s.kick:
			full = false
		}
	}
}

// round checks every peer's health and, if full or the peer has no summary
// yet, fetches its summary when it is healthy.
func (s *Summaries) round(ctx context.Context, full bool) {
	peers := s.peers.peerList()
	current := make(map[string]bool, len(peers))
	var wg sync.WaitGroup
	for _, p := range peers {
		if p.ID == s.self {
			continue
		}
		current[p.ID] = true
		s.mu.Lock()
		e := s.cache[p.ID]
		if e == nil {
			e = &cacheEntry{health: HealthUnknown}
			s.cache[p.ID] = e
		}
		fetch := full || e.summary.UpdatedAt.IsZero()
		s.mu.Unlock()
		wg.Go(func() { s.refresh(ctx, p, fetch) })
	}
	wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	for id := range s.cache {
		if !current[id] {
			delete(s.cache, id)
		}
	}
}

// refresh checks p's health and, if fetch and it is healthy, fetches its
// summary.
func (s *Summaries) refresh(ctx context.Context, p Peer, fetch bool) {
	health := HealthOK
	callCtx, cancel := clock.WithTimeout(ctx, s.clk, s.timeout)
	res, err := s.peers.CallTool(callCtx, p.ID, HealthTool, json.RawMessage("{}"))
	cancel()
	switch {
	case errors.Is(err, ErrUnauthorized):
		health = HealthUnauthorized
	case err != nil:
		health = HealthDown
	case res.IsError:
		health, err = HealthDown, errors.New(toolText(res))
	}
	if ctx.Err() != nil {
		return // shutting down: the failure says nothing about the peer
	}
	if err != nil {
		s.log.Debug("peer health check failed", "peer", p.ID, "err", err)
	}
	var sum Summary
	if health == HealthOK && fetch {
		callCtx, cancel := clock.WithTimeout(ctx, s.clk, s.timeout)
		sum, err = s.fetch(callCtx, p)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.log.Warn("fetching peer summary", "peer", p.ID, "err", err)
		}
	}
	now := s.clk.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.cache[p.ID]
	if e == nil {
		return // no longer a peer
	}
	e.health, e.healthAt = health, now
	if fetch && err == nil && health == HealthOK {
		sum.UpdatedAt = now
		e.summary = sum
	}
}

// fetch calls p's SummariesTool for its own summary.
func (s *Summaries) fetch(ctx context.Context, p Peer) (Summary, error) {
	res, err := s.peers.CallTool(ctx, p.ID, SummariesTool, json.RawMessage(`{"self_only":true}`))
	if err != nil {
		return Summary{}, err
	}
	if res.IsError {
		return Summary{}, fmt.Errorf("peer answered with an error: %s", toolText(res))
	}
	raw, err := structured(res)
	if err != nil {
		return Summary{}, err
	}
	var ans summariesAnswer
	if err := json.Unmarshal(raw, &ans); err != nil {
		return Summary{}, fmt.Errorf("decoding summaries: %w", err)
	}
	for _, sum := range ans.Instances {
		if sum.InstanceID == p.ID {
			return sum, nil
		}
	}
	return Summary{}, fmt.Errorf("answer has no summary of %s", p.ID)
}

// All returns this instance's summary (computed now; Health ok, or down
// if local fails), then the current peers' cached ones, sorted by id. A
// peer never fetched appears with its id, name and Health unknown (or its
// health if only that was checked). Names are the registry's. The results
// are copies.
func (s *Summaries) All(ctx context.Context) []Summary {
	self, err := s.local(ctx)
	if err != nil {
		s.log.Warn("computing this instance's summary", "err", err)
		self = Summary{Health: HealthDown}
	}
	self.InstanceID = s.self
	if self.Health == "" {
		self.Health = HealthOK
	}
	if self.UpdatedAt.IsZero() && err == nil {
		self.UpdatedAt = s.clk.Now()
	}
	out := []Summary{normalize(self)}

	peers := slices.SortedFunc(slices.Values(s.peers.peerList()), func(a, b Peer) int { return cmp.Compare(a.ID, b.ID) })
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range peers {
		if p.ID == s.self {
			continue
		}
		sum := Summary{Health: HealthUnknown}
		if e := s.cache[p.ID]; e != nil {
			sum = e.summary
			sum.Projects = slices.Clone(sum.Projects)
			sum.Categories = maps.Clone(sum.Categories)
			sum.Health, sum.HealthCheckedAt = e.health, e.healthAt
		}
		sum.InstanceID, sum.Name = p.ID, p.Name
		out = append(out, normalize(sum))
	}
	return out
}

// normalize makes empty lists encode as [] and {}, not null.
func normalize(s Summary) Summary {
	if s.Projects == nil {
		s.Projects = []ProjectCount{}
	}
	if s.Categories == nil {
		s.Categories = map[string]int{}
	}
	return s
}
