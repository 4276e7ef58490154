package federation

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/crow-sync/crow/clock"
)

func searchArgsJSON(query string) json.RawMessage {
	return json.RawMessage(`{"query":` + strconvQuote(query) + `}`)
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// structuredMap returns a result's structured content as a map.
func structuredMap(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	raw, err := structured(res)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestCallToolWithValidToken(t *testing.T) {
	f := newFederation()
	laptop := newTestPeer(t, "laptop", f.keys, withResults(result("m1", 0.5)))
	f.peers.set(laptop.peer())
	c := f.client(t, nil)

	for range 3 {
		res, err := c.CallTool(t.Context(), "laptop", SearchTool, searchArgsJSON("frankfurt"))
		if err != nil {
			t.Fatal(err)
		}
		if res.IsError {
			t.Fatalf("tool error: %s", toolText(res))
		}
		m := structuredMap(t, res)
		if m["query"] != "frankfurt" || len(m["results"].([]any)) != 1 {
			t.Fatalf("answer %v", m)
		}
	}
	if n := laptop.count("tools/call"); n != 3 {
		t.Errorf("%d tools/call reached the peer, want 3", n)
	}
	// One session for the three calls.
	if n := laptop.count("server/discover") + laptop.count("initialize"); n != 1 {
		t.Errorf("%d handshakes for three calls, want 1", n)
	}
	if r := laptop.refusals(); len(r) != 0 {
		t.Errorf("peer refused %v", r)
	}
	// A tool failure is a result, not an error, and keeps the session.
	res, err := c.CallTool(t.Context(), "laptop", SearchTool, json.RawMessage(`{}`))
	if err != nil {
		t.Fatalf("missing argument: %v", err)
	}
	if !res.IsError {
		t.Fatalf("missing argument accepted: %v", res)
	}
	// The peer's schema is strict (as crow's gateway's): Search has to strip
	// arguments the peer's /mcp does not take.
	res, err = c.CallTool(t.Context(), "laptop", SearchTool, json.RawMessage(`{"query":"x","instances":"all"}`))
	if err != nil || !res.IsError {
		t.Fatalf("unknown argument accepted: %v, %v", res, err)
	}
	if n := laptop.count("server/discover") + laptop.count("initialize"); n != 1 {
		t.Errorf("tool errors cost a new session: %d handshakes", n)
	}
}

func TestRetryable(t *testing.T) {
	eof := transport.NewError(fmt.Errorf("failed to send request: %w", io.EOF))
	for _, tc := range []struct {
		tool string
		err  error
		want bool
	}{
		{SearchTool, eof, true},
		{"crow_store_memory", eof, false},
		{"crow_store_memory", transport.NewError(transport.ErrSessionTerminated), true},
		{"crow_store_memory", transport.NewError(&net.OpError{Op: "dial", Err: errors.New("connection refused")}), true},
		{SearchTool, fmt.Errorf("%w: %w", ErrUnauthorized, transport.ErrAuthorizationRequired), false},
		{"", transport.NewError(transport.ErrSessionTerminated), true},
	} {
		if got := retryable(tc.tool, tc.err); got != tc.want {
			t.Errorf("retryable(%q, %v) = %v", tc.tool, tc.err, got)
		}
	}
}

func TestCallToolConcurrentShareSession(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		t.Run(map[bool]string{false: "modern", true: "legacy"}[legacy], func(t *testing.T) {
			f := newFederation()
			var opts []peerOption
			if legacy {
				opts = append(opts, legacyOnly)
			}
			laptop := newTestPeer(t, "laptop", f.keys, opts...)
			f.peers.set(laptop.peer())
			c := f.client(t, nil)
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					if _, err := c.CallTool(t.Context(), "laptop", HealthTool, nil); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			handshake := "server/discover"
			if legacy {
				handshake = "initialize"
			}
			if n := laptop.count(handshake); n != 1 {
				t.Errorf("%d %s for 8 concurrent calls, want 1", n, handshake)
			}
		})
	}
}

func TestCallToolUnknownInstance(t *testing.T) {
	f := newFederation()
	laptop := newTestPeer(t, "laptop", f.keys)
	f.peers.set(laptop.peer())
	c := f.client(t, nil)
	for _, id := range []string{"ghost", "home", ""} {
		if _, err := c.CallTool(t.Context(), id, SearchTool, nil); !errors.Is(err, ErrUnknownInstance) {
			t.Errorf("%q: err %v, want ErrUnknownInstance", id, err)
		}
	}
	if n := laptop.requests.Load(); n != 0 {
		t.Errorf("%d requests reached a peer", n)
	}
}

// TestCallToolSurvivesRestart restarts the peer between calls. With the
// session protocol the restarted peer does not know the old session (404)
// and the client starts a new one; with the stateless protocol only the
// connections go.
func TestCallToolSurvivesRestart(t *testing.T) {
	for _, legacy := range []bool{true, false} {
		t.Run(map[bool]string{false: "modern", true: "legacy"}[legacy], func(t *testing.T) {
			f := newFederation()
			var opts []peerOption
			if legacy {
				opts = append(opts, legacyOnly)
			}
			laptop := newTestPeer(t, "laptop", f.keys, append(opts, withResults(result("m1", 1)))...)
			f.peers.set(laptop.peer())
			c := f.client(t, nil)
			call := func(what string) {
				t.Helper()
				res, err := c.CallTool(t.Context(), "laptop", SearchTool, searchArgsJSON("x"))
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if res.IsError {
					t.Fatalf("%s: %s", what, toolText(res))
				}
			}
			call("first call")
			for i := range 2 {
				laptop.restart(false)
				call(fmt.Sprintf("call after restart %d", i+1))
			}
			if legacy {
				// Each first call on a forgotten session is refused (404)
				// before it runs, and made again on a new session.
				if n := laptop.count("initialize"); n != 3 {
					t.Errorf("%d sessions for 3 calls around 2 restarts, want 3", n)
				}
				if n := laptop.count("tools/call"); n != 5 {
					t.Errorf("%d tools/call reached the peer, want 5", n)
				}
			}
			for i := range 3 {
				laptop.restart(true)
				call(fmt.Sprintf("call after restart with connections dropped %d", i+1))
			}
		})
	}
}

// TestCallToolPeerMoved follows a peer to its new gateway URL.
func TestCallToolPeerMoved(t *testing.T) {
	f := newFederation()
	old := newTestPeer(t, "laptop", f.keys, legacyOnly)
	moved := newTestPeer(t, "laptop", f.keys, legacyOnly)
	f.peers.set(old.peer())
	c := f.client(t, nil)
	if _, err := c.CallTool(t.Context(), "laptop", HealthTool, nil); err != nil {
		t.Fatal(err)
	}
	f.peers.set(moved.peer())
	if _, err := c.CallTool(t.Context(), "laptop", HealthTool, nil); err != nil {
		t.Fatal(err)
	}
	if old.count("tools/call") != 1 || moved.count("tools/call") != 1 || moved.count("initialize") != 1 {
		t.Errorf("old got %d calls, moved %d calls and %d initialize; want 1, 1, 1",
			old.count("tools/call"), moved.count("tools/call"), moved.count("initialize"))
	}
}

func TestCallToolDeadPeer(t *testing.T) {
	f := newFederation()
	laptop := newTestPeer(t, "laptop", f.keys)
	f.peers.set(laptop.peer())
	laptop.srv.Close() // nothing listens there any more
	c := f.client(t, nil)
	_, err := c.CallTool(t.Context(), "laptop", HealthTool, nil)
	if err == nil || errors.Is(err, ErrUnknownInstance) {
		t.Fatalf("err %v, want a connection error", err)
	}
	if !notDelivered(err) {
		t.Errorf("a refused connection is not recognised as undelivered: %v", err)
	}
}

// TestMiddlewareRefuses sends requests with bad tokens straight to a peer:
// every one gets 401, for the reason Verify gives.
func TestMiddlewareRefuses(t *testing.T) {
	f := newFederation()
	gone := testKey("gone")
	f.keys.keys["gone"] = gone.Public().(ed25519.PublicKey)
	f.keys.revoke("gone")
	laptop := newTestPeer(t, "laptop", f.keys)
	now := time.Now()
	sign := func(priv ed25519.PrivateKey, issuer, audience string, iat time.Time, life time.Duration) string {
		tok, err := Sign(priv, Claims{Issuer: issuer, Audience: audience, IssuedAt: iat, Expiry: iat.Add(life)})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	initBody := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	for _, tc := range []struct {
		name, token string
		want        error
	}{
		{"other audience", sign(f.homeKey, "home", "vps", now, time.Minute), ErrWrongAudience},
		{"expired", sign(f.homeKey, "home", "laptop", now.Add(-10*time.Minute), 5*time.Minute), ErrExpired},
		{"revoked issuer", sign(gone, "gone", "laptop", now, time.Minute), ErrUnknownIssuer},
		{"unregistered issuer", sign(testKey("x"), "x", "laptop", now, time.Minute), ErrUnknownIssuer},
		{"forged", sign(testKey("x"), "home", "laptop", now, time.Minute), ErrBadSignature},
		{"garbage", "hello", ErrMalformed},
		{"none", "", ErrMalformed},
	} {
		before := len(laptop.refusals())
		req, _ := http.NewRequest(http.MethodPost, laptop.srv.URL+MCPPath, strings.NewReader(initBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401", tc.name, resp.StatusCode)
			continue
		}
		r := laptop.refusals()
		if len(r) != before+1 || !errors.Is(r[before], tc.want) {
			t.Errorf("%s: refused for %v, want %v", tc.name, r[len(r)-1], tc.want)
		}
	}
	if n := laptop.count("initialize"); n != 0 {
		t.Errorf("%d refused requests reached the MCP server", n)
	}
}

// TestCallToolRefused: the peer refuses home's tokens once home is revoked
// there, or when home's clock is far off; the client says so and does not
// retry.
func TestCallToolRefused(t *testing.T) {
	t.Run("revoked", func(t *testing.T) {
		f := newFederation()
		laptop := newTestPeer(t, "laptop", f.keys)
		f.peers.set(laptop.peer())
		c := f.client(t, nil)
		if _, err := c.CallTool(t.Context(), "laptop", HealthTool, nil); err != nil {
			t.Fatal(err)
		}
		f.keys.revoke("home")
		before := laptop.requests.Load()
		_, err := c.CallTool(t.Context(), "laptop", HealthTool, nil)
		if !errors.Is(err, ErrUnauthorized) {
			t.Fatalf("err %v, want ErrUnauthorized", err)
		}
		if n := laptop.requests.Load() - before; n != 1 {
			t.Errorf("%d requests for a refused call, want 1 (no retry)", n)
		}
		if r := laptop.refusals(); len(r) != 1 || !errors.Is(r[0], ErrUnknownIssuer) || !errors.Is(r[0], errRevoked) {
			t.Errorf("refusals %v", r)
		}
	})
	t.Run("clock behind", func(t *testing.T) {
		f := newFederation()
		laptop := newTestPeer(t, "laptop", f.keys)
		f.peers.set(laptop.peer())
		c := f.client(t, clock.NewFake(time.Now().Add(-10*time.Minute)))
		if _, err := c.CallTool(t.Context(), "laptop", HealthTool, nil); !errors.Is(err, ErrUnauthorized) {
			t.Fatalf("err %v, want ErrUnauthorized", err)
		}
		if r := laptop.refusals(); len(r) == 0 || !errors.Is(r[0], ErrExpired) {
			t.Errorf("refusals %v, want ErrExpired", r)
		}
	})
}

func TestClientClosed(t *testing.T) {
	f := newFederation()
	laptop := newTestPeer(t, "laptop", f.keys)
	f.peers.set(laptop.peer())
	c := f.client(t, nil)
	if _, err := c.CallTool(t.Context(), "laptop", HealthTool, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CallTool(t.Context(), "laptop", HealthTool, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: err %v, want ErrClosed", err)
	}
	res := c.Search(t.Context(), nil, searchArgsJSON("x"), time.Second, nil)
	if len(res.Instances) != 1 || res.Instances[0].Status != StatusError || !res.Partial {
		t.Errorf("search after Close: %+v", res)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestSearchFanOut searches home and four peers: two answer, one hangs
// past the deadline, one is offline. The search returns at the deadline,
// merges the copies of replicated memories, and reports every instance.
func TestSearchFanOut(t *testing.T) {
	f := newFederation()
	a := newTestPeer(t, "a", f.keys, withResults(result("m1", 0.9), result("m2", 0.5), result("m9", 0.1)))
	b := newTestPeer(t, "b", f.keys, legacyOnly, withResults(result("m1", 0.7), result("m3", 0.8)))
	slow := newTestPeer(t, "c", f.keys, hanging, withResults(result("m4", 1)))
	off := newTestPeer(t, "d", f.keys, withResults(result("m5", 1)))
	offline := off.peer()
	offline.Online = false
	f.peers.set(slow.peer(), a.peer(), offline, b.peer())
	c := f.client(t, nil)
	local := func(ctx context.Context) ([]json.RawMessage, error) {
		m3, _ := json.Marshal(result("m3", 0.95))
		m2, _ := json.Marshal(result("m2", 0.5))
		return []json.RawMessage{m3, m2}, nil
	}

	const deadline = time.Second
	// instances and instance_id are removed before the peers (strict
	// schemas) see them; the limit is kept and applied to the merge.
	args := json.RawMessage(`{"query":"q","instances":"all","instance_id":"a","limit":4}`)
	start := time.Now()
	res := c.Search(t.Context(), nil, args, deadline, local)
	elapsed := time.Since(start)
	if elapsed > 2*deadline {
		t.Errorf("search took %s with a %s deadline", elapsed, deadline)
	}
	select {
	case <-slow.entered:
	default:
		t.Error("the hanging peer was never called")
	}

	wantStatus := []struct{ id, status string }{
		{"home", StatusOK}, {"a", StatusOK}, {"b", StatusOK}, {"c", StatusTimeout}, {"d", StatusSkippedOffline},
	}
	if len(res.Instances) != len(wantStatus) {
		t.Fatalf("instances %+v", res.Instances)
	}
	for i, w := range wantStatus {
		got := res.Instances[i]
		if got.ID != w.id || got.Status != w.status {
			t.Errorf("instance %d: %s %s (%s), want %s %s", i, got.ID, got.Status, got.Error, w.id, w.status)
		}
	}
	if st := res.Instances[1]; st.Name != "a-name" || st.Results != 3 || st.Error != "" {
		t.Errorf("a: %+v", st)
	}
	if st := res.Instances[3]; st.Error == "" || st.Results != 0 {
		t.Errorf("c: %+v", st)
	}
	if !res.Partial {
		t.Error("not partial though c timed out")
	}
	if n := off.requests.Load(); n != 0 {
		t.Errorf("offline peer got %d requests", n)
	}

	type hit struct {
		id       string
		score    float64
		instance string
		foundOn  string
	}
	want := []hit{
		{"m3", 0.95, "home", "home,b"},
		{"m1", 0.9, "a", "a,b"},
		{"m2", 0.5, "home", "home,a"},
		{"m9", 0.1, "a", "a"},
	}
	if len(res.Results) != len(want) {
		t.Fatalf("results %+v", res.Results)
	}
	for i, w := range want {
		h := res.Results[i]
		got := hit{h.ID, h.Score, h.Instance, strings.Join(h.FoundOn, ",")}
		if got != w {
			t.Errorf("result %d: %+v, want %+v", i, got, w)
		}
		var m map[string]any
		if err := json.Unmarshal(h.Memory, &m); err != nil || m["id"] != h.ID || m["score"] != h.Score {
			t.Errorf("result %d memory %s", i, h.Memory)
		}
	}

	// Close waits for the abandoned call to c, which its timeout ended.
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestSearchTargets(t *testing.T) {
	f := newFederation()
	a := newTestPeer(t, "a", f.keys, withResults(result("m1", 0.9)))
	b := newTestPeer(t, "b", f.keys, withResults(result("m2", 0.5)))
	f.peers.set(a.peer(), b.peer())
	c := f.client(t, nil)

	// Explicit targets, in the order given; self and repeats ignored; no
	// local search.
	res := c.Search(t.Context(), []string{"b", "ghost", "home", "b"}, searchArgsJSON("q"), time.Second, nil)
	if len(res.Instances) != 2 || res.Instances[0].ID != "b" || res.Instances[0].Status != StatusOK ||
		res.Instances[1].ID != "ghost" || res.Instances[1].Status != StatusError || !res.Partial {
		t.Fatalf("instances %+v partial %v", res.Instances, res.Partial)
	}
	if len(res.Results) != 1 || res.Results[0].ID != "m2" {
		t.Errorf("results %+v", res.Results)
	}
	if n := a.requests.Load(); n != 0 {
		t.Errorf("untargeted peer got %d requests", n)
	}

	// All answer: not partial.
	res = c.Search(t.Context(), nil, searchArgsJSON("q"), time.Second, nil)
	if res.Partial || len(res.Instances) != 2 || len(res.Results) != 2 {
		t.Errorf("all peers: %+v", res)
	}

	// A failing local search is an error, and the answer partial.
	res = c.Search(t.Context(), []string{}, searchArgsJSON("q"), time.Second, func(context.Context) ([]json.RawMessage, error) {
		return nil, errors.New("index closed")
	})
	if len(res.Instances) != 1 || res.Instances[0].Status != StatusError || res.Instances[0].Error != "index closed" || !res.Partial {
		t.Errorf("failing local: %+v", res)
	}

	// Arguments that are not an object make every call an error, without
	// calling anyone.
	before := a.requests.Load() + b.requests.Load()
	res = c.Search(t.Context(), nil, json.RawMessage(`[1]`), time.Second, nil)
	for _, st := range res.Instances {
		if st.Status != StatusError {
			t.Errorf("bad args: %+v", st)
		}
	}
	if a.requests.Load()+b.requests.Load() != before {
		t.Error("bad args were sent")
	}

	// A tool error from the peer is that instance's error.
	res = c.Search(t.Context(), []string{"a"}, json.RawMessage(`{}`), time.Second, nil)
	if st := res.Instances[0]; st.Status != StatusError || st.Error == "" {
		t.Errorf("tool error: %+v", st)
	}
}

// TestSearchCanceled: a caller that gives up gets its answer at once.
func TestSearchCanceled(t *testing.T) {
	f := newFederation()
	slow := newTestPeer(t, "c", f.keys, hanging)
	f.peers.set(slow.peer())
	c := f.client(t, nil)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan SearchResult)
	go func() { done <- c.Search(ctx, nil, searchArgsJSON("q"), time.Hour, nil) }()
	<-slow.entered
	cancel()
	res := <-done
	if st := res.Instances[0]; st.Status != StatusError || !strings.Contains(st.Error, "cancel") {
		t.Errorf("canceled search: %+v", st)
	}
}

// TestSearchDeadlineOnFakeClock: the per-instance deadline runs on the
// client's clock. Home and a answer at once; c hangs until the clock reaches
// the deadline, and only then does Search return, with c timed out.
func TestSearchDeadlineOnFakeClock(t *testing.T) {
	f := newFederation()
	a := newTestPeer(t, "a", f.keys, withResults(result("m1", 0.9)))
	slow := newTestPeer(t, "c", f.keys, hanging, withResults(result("m4", 1)))
	f.peers.set(slow.peer(), a.peer())
	clk := clock.NewFake(time.Now()) // peers check the tokens' times on their real clocks
	c := f.client(t, clk)
	local := func(ctx context.Context) ([]json.RawMessage, error) { return raws(t, result("m2", 0.5)), nil }

	const deadline = 3 * time.Second
	done := make(chan SearchResult, 1)
	go func() { done <- c.Search(t.Context(), nil, searchArgsJSON("q"), deadline, local) }()
	<-slow.entered // every call has started, after the search's own deadline timer
	// Home's and a's calls are over (their timeouts stopped): left are the
	// search deadline and c's call timeout.
	if err := clk.WaitPending(t.Context(), func(n int) bool { return n == 2 }); err != nil {
		t.Fatal(err)
	}
	if p := clk.Pending(); p[0] != deadline || p[1] != deadline {
		t.Fatalf("pending timers %v, want two at the deadline", p)
	}
	clk.Advance(deadline - time.Millisecond)
	select {
	case res := <-done:
		t.Fatalf("Search returned before its deadline: %+v", res)
	default:
	}
	clk.Advance(time.Millisecond)
	res := <-done

	want := []struct {
		id, status string
		elapsed    int64
	}{{"home", StatusOK, 0}, {"a", StatusOK, 0}, {"c", StatusTimeout, deadline.Milliseconds()}}
	if len(res.Instances) != len(want) {
		t.Fatalf("instances %+v", res.Instances)
	}
	for i, w := range want {
		if got := res.Instances[i]; got.ID != w.id || got.Status != w.status || got.ElapsedMS != w.elapsed {
			t.Errorf("instance %d: %+v, want %s %s after %dms", i, got, w.id, w.status, w.elapsed)
		}
	}
	if !res.Partial || len(res.Results) != 2 || res.Results[0].ID != "m1" || res.Results[1].ID != "m2" {
		t.Errorf("result %+v", res)
	}
	// The deadline also ended the abandoned call to c: Close returns.
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(clk.Pending()); n != 0 {
		t.Errorf("%d timers left after the search", n)
	}
}
