package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// mcpClient connects a real mcp-go streamable-HTTP client to d's path with
// the owner key.
func mcpClient(t *testing.T, d *Daemon, path string) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(d.URL()+path, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + d.Key}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "crow-e2e", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatal(err)
	}
	return c
}

// callTool calls tool and returns its structured (or JSON text) result and
// whether it is a tool error (with its text).
func callTool(t *testing.T, c *client.Client, tool string, args map[string]any) (map[string]any, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var text string
	for _, ct := range res.Content {
		if tc, ok := ct.(mcp.TextContent); ok {
			text += tc.Text
		}
	}
	if res.IsError {
		return nil, text
	}
	var out map[string]any
	if m, ok := res.StructuredContent.(map[string]any); ok {
		out = m
	} else if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatalf("%s: result is neither structured nor JSON: %q", tool, text)
	}
	return out, ""
}

// The router on home runs tools on a satellite through federation: the call
// reaches the satellite's /mcp with home's signed, short-lived token (the
// satellite's sync status names the satellite), and the satellite's
// allow-list refuses a write; the laptop reaches home the same way. Once
// home revokes the laptop, neither direction works.
func TestRouterCallsPeerWithToken(t *testing.T) {
	home, sats := cluster(t, "laptop")
	laptop := sats[0]
	id := laptop.instanceID()
	r := mcpClient(t, home, "/router/mcp")
	st, errText := callTool(t, r, "crow_sync_status", map[string]any{"instance_id": id})
	if errText != "" || st["instance_id"] != id {
		t.Fatalf("routed sync status: %v %q", st, errText)
	}
	if _, errText := callTool(t, r, "crow_store_memory", map[string]any{"instance_id": id, "content": "x"}); !strings.Contains(errText, "not allowed for federated calls") {
		t.Fatalf("a routed write was not refused by the peer's allow-list: %q", errText)
	}
	Eventually(t, syncTimeout, "the refused peer call in the laptop's log", func() bool {
		return strings.Contains(laptop.Log(), "peer called a tool outside the allow-list")
	})
	if _, m := laptop.DoRaw("GET", "/metrics"); !strings.Contains(m, `crow_federation_peer_requests_total{outcome="tool_denied"} 1`) ||
		!strings.Contains(m, `crow_federation_peer_requests_total{outcome="admitted"}`) {
		t.Fatalf("the laptop's federation metrics:\n%s", grepLines(m, "crow_federation"))
	}
	// The owner key still writes on the laptop's own /mcp.
	if _, errText := callTool(t, mcpClient(t, laptop, "/mcp"), "crow_store_memory", map[string]any{"content": "owner write"}); errText != "" {
		t.Fatalf("owner write: %q", errText)
	}
	// The laptop's router reaches home the same way.
	homeID := home.instanceID()
	lr := mcpClient(t, laptop, "/router/mcp")
	if st, errText := callTool(t, lr, "crow_sync_status", map[string]any{"instance_id": homeID}); errText != "" || st["instance_id"] != homeID {
		t.Fatalf("laptop → home: %v %q", st, errText)
	}
	// Revoked on home: home routes nothing to it, and refuses its tokens
	// (the laptop's own router still tries until it hears of the revocation).
	home.MustCLI("instance", "revoke", id)
	if _, errText := callTool(t, r, "crow_sync_status", map[string]any{"instance_id": id}); !strings.Contains(errText, "revoked") {
		t.Fatalf("home routed to a revoked instance: %q", errText)
	}
	if _, errText := callTool(t, lr, "crow_sync_status", map[string]any{"instance_id": homeID}); errText == "" {
		t.Fatal("home answered a revoked instance's federated call")
	}
	Eventually(t, syncTimeout, "the refused token in home's log", func() bool {
		return strings.Contains(home.Log(), "federation token refused")
	})
}

// instanceID reads d's instance id with `crow identity show --json`.
func (d *Daemon) instanceID() string {
	d.t.Helper()
	var ident map[string]any
	if err := json.Unmarshal([]byte(d.MustCLI("identity", "show", "--json")), &ident); err != nil {
		d.t.Fatalf("identity show --json: %v", err)
	}
	return ident["instance_id"].(string)
}

// freeze stops d's process with SIGSTOP (a hung machine: connections are
// accepted by the kernel but never answered) until the returned func
// continues it; the test's cleanup continues it too, before the daemon is
// stopped.
func (d *Daemon) freeze() (thaw func()) {
	d.t.Helper()
	d.mu.Lock()
	cmd := d.cmd
	d.mu.Unlock()
	if cmd == nil {
		d.t.Fatalf("%s: not running", d.Name)
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		d.t.Fatal(err)
	}
	// The signal is asynchronous: wait until every thread is stopped, or a
	// thread still running could answer a request (seen on a loaded machine).
	Eventually(d.t, syncTimeout, d.Name+" stopped", func() bool { return allThreadsStopped(cmd.Process.Pid) })
	var once sync.Once
	thaw = func() { once.Do(func() { _ = cmd.Process.Signal(syscall.SIGCONT) }) }
	d.t.Cleanup(thaw) // runs before stopAtCleanup's Stop (cleanups run last-in first-out)
	return thaw
}

// statuses maps instance id → status of a federated search answer.
func statuses(body map[string]any) map[string]string {
	out := map[string]string{}
	list, _ := body["instances"].([]any)
	for _, s := range list {
		m := s.(map[string]any)
		out[m["id"].(string)] = m["status"].(string)
	}
	return out
}

// A federated search on real daemons: every instance is searched in
// parallel, a memory replicated everywhere comes back once with found_on
// listing all three; a hung satellite (SIGSTOP) costs the caller one
// deadline, is reported as a timeout, and the answer is partial; a killed
// one is an error; the router and the MCP tool give the same.
func TestFederatedSearch(t *testing.T) {
	home, sats := cluster(t, "laptop", "vps")
	laptop, vps := sats[0], sats[1]
	st, m := laptop.Do("POST", "/v1/memory", map[string]any{"content": "the federated pelican", "project": "crow"})
	if st != 201 {
		t.Fatalf("write = %d %v", st, m)
	}
	memID := m["id"].(string)
	Eventually(t, syncTimeout, "the memory everywhere", func() bool {
		return memoryOf(home, memID) != nil && memoryOf(vps, memID) != nil
	})
	ids := map[string]string{"home": home.instanceID(), "laptop": laptop.instanceID(), "vps": vps.instanceID()}
	// Wait until home's prober has seen both satellites (a never-probed
	// instance is searched anyway, but its status should be settled here).
	Eventually(t, syncTimeout, "home to see both satellites online", func() bool {
		_, body := home.Do("GET", "/v1/instances", nil)
		online := 0
		for _, in := range body["instances"].([]any) {
			if in.(map[string]any)["status"] == "online" {
				online++
			}
		}
		return online >= 2
	})

	st, body := home.Do("GET", "/v1/memories/search?q=pelican&instances=all", nil)
	if st != 200 {
		t.Fatalf("federated search = %d %v", st, body)
	}
	sts := statuses(body)
	for name, id := range ids {
		if sts[id] != "ok" {
			t.Fatalf("%s's status = %q in %v", name, sts[id], body["instances"])
		}
	}
	results := body["results"].([]any)
	if len(results) != 1 || body["partial"] == true {
		t.Fatalf("want one merged result, not partial: %v", body)
	}
	r := results[0].(map[string]any)
	if r["id"] != memID || len(r["found_on"].([]any)) != 3 {
		t.Fatalf("merged result = %v", r)
	}

	// crow_instance_summaries: home first (computed now), then the
	// satellites' cached summaries, fetched when they were registered.
	mc := mcpClient(t, home, "/mcp")
	defer func() {
		if t.Failed() {
			res, _ := callTool(t, mc, "crow_instance_summaries", nil)
			t.Logf("summaries: %v", res)
		}
	}()
	Eventually(t, syncTimeout, "the satellites' summaries on home", func() bool {
		res, errText := callTool(t, mc, "crow_instance_summaries", nil)
		if errText != "" {
			t.Fatalf("summaries: %q", errText)
		}
		list := res["instances"].([]any)
		if len(list) != 3 || list[0].(map[string]any)["instance_id"] != ids["home"] {
			return false
		}
		// Peers' summaries are snapshots (refreshed hourly): fetched when
		// registered, before the memory was written. Home's is live.
		if m := list[0].(map[string]any); m["memories"] != 1.0 || m["categories"].(map[string]any)["general"] != 1.0 {
			t.Fatalf("home's own summary: %v", m)
		}
		for _, x := range list[1:] {
			if m := x.(map[string]any); m["health"] != "ok" || m["updated_at"] == nil || m["name"] == "" {
				return false
			}
		}
		return true
	})

	// A list of ids searches just those.
	st, body = home.Do("GET", "/v1/memories/search?q=pelican&instances="+ids["laptop"], nil)
	if st != 200 || len(statuses(body)) != 1 || statuses(body)[ids["laptop"]] != "ok" {
		t.Fatalf("search of the laptop only = %d %v", st, body)
	}

	// A hung satellite: a timeout, the rest answers, partial.
	thaw := vps.freeze()
	start := time.Now()
	st, body = home.Do("GET", "/v1/memories/search?q=pelican&instances=all", nil)
	took := time.Since(start)
	sts = statuses(body)
	if st != 200 || sts[ids["vps"]] != "timeout" || sts[ids["laptop"]] != "ok" || sts[ids["home"]] != "ok" || body["partial"] != true {
		t.Fatalf("with vps hung: %d %v", st, body)
	}
	if len(body["results"].([]any)) != 1 {
		t.Fatalf("with vps hung the result is lost: %v", body)
	}
	t.Logf("search with a hung peer answered in %v (deadline %v)", took, 3*time.Second)
	// Through MCP, the same.
	res, errText := callTool(t, mcpClient(t, home, "/mcp"), "crow_search_memories", map[string]any{"query": "pelican", "instances": "all"})
	if errText != "" || res["partial"] != true || statuses(res)[ids["vps"]] != "timeout" {
		t.Fatalf("MCP federated search with vps hung: %v %q", res, errText)
	}
	thaw()

	// A dead satellite: an error (or skipped once a probe marks it offline).
	vps.Kill()
	st, body = home.Do("GET", "/v1/memories/search?q=pelican&instances=all", nil)
	if s := statuses(body)[ids["vps"]]; st != 200 || (s != "error" && s != "skipped_offline" && s != "timeout") || body["partial"] != true {
		t.Fatalf("with vps dead: %d %v", st, body)
	}
	// A peer searching through its own /mcp never fans out again: the laptop's
	// router asking home to search "all" gets home's own answer only.
	res, errText = callTool(t, mcpClient(t, laptop, "/router/mcp"), "crow_search_memories", map[string]any{"instance_id": ids["home"], "query": "pelican"})
	if errText != "" || res["instances"] != nil || len(res["results"].([]any)) != 1 {
		t.Fatalf("routed search on home: %v %q", res, errText)
	}
}

// allThreadsStopped reports whether every thread of pid is in state T
// (stopped), from /proc.
func allThreadsStopped(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		if err != nil {
			return false
		}
		// stat: "pid (comm) S ..."; comm may hold spaces, so read after the last ')'.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 || i+2 >= len(b) || b[i+2] != 'T' {
			return false
		}
	}
	return true
}
