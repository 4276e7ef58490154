package federation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/crow-sync/crow/clock"
)

// fakePeers is a caller whose peers answer from memory.
type fakePeers struct {
	mu       sync.Mutex // guards the fields below
	peers    []Peer
	calls    map[string]int // "peer tool" → count
	down     map[string]bool
	refuse   map[string]bool
	dead     map[string]bool // calls block until their context ends
	memories map[string]int  // what each peer's summary says
	// hung receives a dead peer's id each time one of its calls starts
	// blocking (its call timeout is already on the clock by then).
	hung chan string
}

func newFakePeers(ids ...string) *fakePeers {
	f := &fakePeers{calls: map[string]int{}, down: map[string]bool{}, refuse: map[string]bool{}, dead: map[string]bool{}, memories: map[string]int{}, hung: make(chan string, 16)}
	for _, id := range ids {
		f.peers = append(f.peers, Peer{ID: id, Name: id + "-name", Online: true})
		f.memories[id] = 1
	}
	return f
}

func (f *fakePeers) peerList() []Peer {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.peers)
}

func (f *fakePeers) update(fn func(f *fakePeers)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *fakePeers) count(id, tool string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[id+" "+tool]
}

func (f *fakePeers) CallTool(ctx context.Context, id, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	f.mu.Lock()
	f.calls[id+" "+tool]++
	down, refuse, dead, n := f.down[id], f.refuse[id], f.dead[id], f.memories[id]
	f.mu.Unlock()
	switch {
	case dead:
		f.hung <- id
		<-ctx.Done()
		return nil, ctx.Err()
	case refuse:
		return nil, fmt.Errorf("calling %s: %w", tool, ErrUnauthorized)
	case down:
		return nil, errors.New("connection refused")
	}
	switch tool {
	case HealthTool:
		return mcp.NewToolResultStructuredOnly(map[string]any{"self": id}), nil
	case SummariesTool:
		if string(args) != `{"self_only":true}` {
			return mcp.NewToolResultError("want self_only"), nil
		}
		return mcp.NewToolResultStructuredOnly(summariesAnswer{Instances: []Summary{{
			InstanceID: id, Name: "self-reported", Memories: n, Health: HealthOK,
			Projects: []ProjectCount{{ID: "p-" + id, Name: "crow", Memories: n}}, Categories: map[string]int{"fact": n},
		}}}), nil
	}
	return mcp.NewToolResultError("no such tool"), nil
}

func localSummary(context.Context) (Summary, error) {
	return Summary{Name: "home-name", Memories: 7, Projects: []ProjectCount{{Name: "crow", Memories: 7}}, Categories: map[string]int{"fact": 7}}, nil
}

// serveSummaries runs s.Serve until the test ends and returns a channel
// with one value per finished round (true: summaries were fetched).
func serveSummaries(t *testing.T, s *Summaries) <-chan bool {
	rounds := make(chan bool, 16)
	s.onRound = func(full bool) { rounds <- full }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return rounds
}

func byID(all []Summary) map[string]Summary {
	m := map[string]Summary{}
	for _, s := range all {
		m[s.InstanceID] = s
	}
	return m
}

func TestSummariesSchedule(t *testing.T) {
	peers := newFakePeers("laptop", "vps")
	peers.update(func(f *fakePeers) { f.down["vps"] = true })
	clk := clock.NewFake(t0)
	s := newSummaries(peers, "home", clk, localSummary, nil)

	// Before any round: self, then the peers, unknown.
	all := s.All(t.Context())
	if len(all) != 3 || all[0].InstanceID != "home" || all[0].Health != HealthOK || all[0].Memories != 7 ||
		all[1].InstanceID != "laptop" || all[1].Health != HealthUnknown || all[1].Name != "laptop-name" ||
		all[2].InstanceID != "vps" || all[2].Health != HealthUnknown {
		t.Fatalf("before the first round: %+v", all)
	}
	if b, _ := json.Marshal(all[1]); string(b) != `{"instance_id":"laptop","name":"laptop-name","projects":[],"categories":{},"memories":0,"health":"unknown"}` {
		t.Errorf("never-fetched peer encodes as %s", b)
	}

	rounds := serveSummaries(t, s)
	if full := <-rounds; !full {
		t.Fatal("first round did not fetch summaries")
	}
	got := byID(s.All(t.Context()))
	if l := got["laptop"]; l.Health != HealthOK || l.Memories != 1 || l.Name != "laptop-name" ||
		!l.UpdatedAt.Equal(t0) || !l.HealthCheckedAt.Equal(t0) || len(l.Projects) != 1 || l.Categories["fact"] != 1 {
		t.Errorf("laptop after the first round: %+v", l)
	}
	if v := got["vps"]; v.Health != HealthDown || !v.UpdatedAt.IsZero() || !v.HealthCheckedAt.Equal(t0) {
		t.Errorf("vps after the first round: %+v", v)
	}
	if peers.count("vps", SummariesTool) != 0 {
		t.Error("fetched the summary of a peer that is down")
	}

	// Health every 5 minutes; the laptop's summary is not fetched again,
	// the vps's is fetched once it is up, and a new peer's at once.
	peers.update(func(f *fakePeers) {
		f.down["vps"] = false
		f.memories["laptop"] = 2
		f.peers = append(f.peers, Peer{ID: "pi", Name: "pi-name"})
		f.memories["pi"] = 5
	})
	clk.Advance(5 * time.Minute)
	if full := <-rounds; full {
		t.Fatal("5-minute round fetched summaries")
	}
	got = byID(s.All(t.Context()))
	if peers.count("laptop", HealthTool) != 2 || peers.count("laptop", SummariesTool) != 1 || got["laptop"].Memories != 1 {
		t.Errorf("laptop: %d health checks, %d summary fetches, %d memories; want 2, 1, 1",
			peers.count("laptop", HealthTool), peers.count("laptop", SummariesTool), got["laptop"].Memories)
	}
	if v := got["vps"]; v.Health != HealthOK || v.Memories != 1 || !v.UpdatedAt.Equal(t0.Add(5*time.Minute)) {
		t.Errorf("vps once up: %+v", v)
	}
	if p := got["pi"]; p.Health != HealthOK || p.Memories != 5 {
		t.Errorf("new peer: %+v", p)
	}

	// At the hour every summary is fetched again (and health checked).
	clk.Advance(55 * time.Minute)
	var fulls []bool
	for len(fulls) < 2 {
		fulls = append(fulls, <-rounds)
	}
	if !slices.Contains(fulls, true) {
		t.Fatalf("no summary round at the hour: %v", fulls)
	}
	got = byID(s.All(t.Context()))
	if l := got["laptop"]; l.Memories != 2 || !l.UpdatedAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("laptop after an hour: %+v", l)
	}
	if n := peers.count("laptop", SummariesTool); n != 2 {
		t.Errorf("laptop's summary fetched %d times in an hour, want 2", n)
	}

	// A revoked peer disappears; a refused token shows as such, keeping the
	// last summary.
	peers.update(func(f *fakePeers) {
		f.peers = slices.DeleteFunc(f.peers, func(p Peer) bool { return p.ID == "pi" })
		f.refuse["vps"] = true
	})
	clk.Advance(5 * time.Minute)
	<-rounds
	all = s.All(t.Context())
	got = byID(all)
	if _, ok := got["pi"]; ok || len(all) != 3 {
		t.Errorf("revoked peer still listed: %+v", all)
	}
	if v := got["vps"]; v.Health != HealthUnauthorized || v.Memories != 1 {
		t.Errorf("vps refusing: %+v", v)
	}
	s.mu.Lock()
	_, cached := s.cache["pi"]
	s.mu.Unlock()
	if cached {
		t.Error("revoked peer still cached")
	}
}

// TestSummariesDeadPeer: a peer that never answers costs one call timeout
// (on the Summaries' clock) per round, and shows as down.
func TestSummariesDeadPeer(t *testing.T) {
	peers := newFakePeers("laptop", "ghost")
	peers.update(func(f *fakePeers) { f.dead["ghost"] = true })
	clk := clock.NewFake(t0)
	s := newSummaries(peers, "home", clk, localSummary, nil)
	s.timeout = 10 * time.Second
	rounds := serveSummaries(t, s)
	// timeOut waits until the ghost's nth health call hangs with its timeout
	// the only timer besides Serve's two tickers, then fires that timeout.
	// (The call is awaited first: its count changes nothing on the clock, so
	// a WaitPending that also looked at the count could miss it and wait for
	// ever.)
	timeOut := func(n int) {
		t.Helper()
		select {
		case <-peers.hung:
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		}
		if got := peers.count("ghost", HealthTool); got != n {
			t.Fatalf("ghost's health calls: %d, want %d", got, n)
		}
		if err := clk.WaitPending(t.Context(), func(p int) bool { return p == 3 }); err != nil {
			t.Fatal(err)
		}
		clk.Advance(s.timeout - time.Nanosecond)
		select {
		case <-rounds:
			t.Fatal("a round ended before the dead peer's call timed out")
		default:
		}
		clk.Advance(time.Nanosecond)
	}
	timeOut(1)
	<-rounds
	got := byID(s.All(t.Context()))
	if got["ghost"].Health != HealthDown || got["laptop"].Health != HealthOK || got["laptop"].Memories != 1 {
		t.Errorf("after a round with a dead peer: %+v", got)
	}
	if !got["ghost"].HealthCheckedAt.Equal(t0.Add(s.timeout)) {
		t.Errorf("dead peer checked at %v, want at its timeout", got["ghost"].HealthCheckedAt)
	}
	clk.Advance(5 * time.Minute)
	timeOut(2)
	<-rounds
	if n := peers.count("ghost", HealthTool); n != 2 {
		t.Errorf("dead peer checked %d times, want 2", n)
	}
}

func TestSummariesLocalFails(t *testing.T) {
	s := newSummaries(newFakePeers(), "home", clock.NewFake(t0), func(context.Context) (Summary, error) {
		return Summary{}, errors.New("store closed")
	}, nil)
	all := s.All(t.Context())
	if len(all) != 1 || all[0].InstanceID != "home" || all[0].Health != HealthDown {
		t.Errorf("%+v", all)
	}
}

// TestSummariesThroughClient fetches summaries from real peers through a
// Client.
func TestSummariesThroughClient(t *testing.T) {
	f := newFederation()
	laptop := newTestPeer(t, "laptop", f.keys)
	vps := newTestPeer(t, "vps", f.keys, legacyOnly)
	vps.mu.Lock()
	vps.down = true
	vps.mu.Unlock()
	f.peers.set(laptop.peer(), vps.peer())
	s := NewSummaries(f.client(t, nil), clock.NewFake(t0), localSummary)
	rounds := serveSummaries(t, s)
	<-rounds
	got := byID(s.All(t.Context()))
	want := Summary{
		InstanceID: "laptop", Name: "laptop-name", Memories: 3, Health: HealthOK, UpdatedAt: t0, HealthCheckedAt: t0,
		Projects: []ProjectCount{{ID: "p1", Name: "crow", Memories: 2}}, Categories: map[string]int{"fact": 2, "decision": 1},
	}
	gotJSON, _ := json.Marshal(got["laptop"])
	wantJSON, _ := json.Marshal(want)
	if string(gotJSON) != string(wantJSON) {
		t.Errorf("laptop\n got %s\nwant %s", gotJSON, wantJSON)
	}
	if got["vps"].Health != HealthDown {
		t.Errorf("vps whose sync_status fails: %+v", got["vps"])
	}
}

// Kick runs a round at once (the clock does not move): a peer registered
// after the first round is fetched without waiting for the health interval.
func TestSummariesKickFetchesNewPeer(t *testing.T) {
	peers := newFakePeers("laptop")
	clk := clock.NewFake(t0)
	s := newSummaries(peers, "home", clk, localSummary, nil)
	rounds := serveSummaries(t, s)
	<-rounds
	peers.update(func(f *fakePeers) {
		f.peers = append(f.peers, Peer{ID: "pi", Name: "pi-name"})
		f.memories["pi"] = 3
	})
	s.Kick()
	if full := <-rounds; full {
		t.Fatal("a kick ran a full round")
	}
	if p := byID(s.All(t.Context()))["pi"]; p.Health != HealthOK || p.Memories != 3 {
		t.Fatalf("new peer after a kick: %+v", p)
	}
	if n := peers.count("laptop", SummariesTool); n != 1 {
		t.Fatalf("a kick refetched a known summary (%d fetches)", n)
	}
}
