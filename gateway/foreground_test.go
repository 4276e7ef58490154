package gateway_test

import (
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/gateway"
)

// TestForegroundIsCalledForWritesOnly: the daemon paces its background
// anchoring on app.Deps.Foreground, so every operation that changes
// something calls it, over REST and over MCP, and reads do not.
func TestForegroundIsCalledForWritesOnly(t *testing.T) {
	var n atomic.Int64
	env := newGatewayEnv(t, func(d *app.Deps, _ *gateway.Config) { d.Foreground = func() { n.Add(1) } })
	want := func(what string, w int64) {
		t.Helper()
		if got := n.Load(); got != w {
			t.Fatalf("after %s: Foreground called %d times, want %d", what, got, w)
		}
	}
	rest := func(method, path, body string, status int) {
		t.Helper()
		if st, b := restDo(t, method, env.url+path, body); st != status {
			t.Fatalf("%s %s: %d %s", method, path, st, b)
		}
	}
	rest(http.MethodGet, "/health", "", http.StatusOK) // peers probe it
	rest(http.MethodGet, "/v1/memories/search?q=river", "", http.StatusOK)
	rest(http.MethodGet, "/v1/memories/list", "", http.StatusOK)
	want("REST reads", 0)
	rest(http.MethodPost, "/v1/memory", `{"content":"the river is cold"}`, http.StatusCreated)
	want("a REST write", 1)

	c := owner(t, env.url+mcpPath)
	ok(t, c, "crow_search_memories", map[string]any{"query": "river"})
	want("an MCP search", 1)
	ok(t, c, "crow_store_memory", map[string]any{"content": "the sea is warm"})
	want("an MCP write", 2)
}
