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

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/memory"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// mcpClient connects a real mcp-go streamable-HTTP client to d's path with
// the owner key.
func mcpClient(t *testing.T, d *Daemon, path string) *mcpclient.Client {
	t.Helper()
	c, err := mcpclient.NewStreamableHttpClient(d.URL()+path, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + d.Key}))
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

// callTool calls tool with args (an app input, or routed's) and returns its
// structured (or JSON text) result decoded into the operation's output type
// Out, or, for a tool error, its text.
func callTool[Out any](t *testing.T, c *mcpclient.Client, tool string, args any) (Out, string) {
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
	var out Out
	if res.IsError {
		return out, text
	}
	raw := []byte(text)
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatalf("%s: structured result: %v", tool, err)
		}
		raw = b
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s: result is not a %T: %v: %s", tool, out, err, raw)
	}
	return out, ""
}

// routed is the arguments of a router tool: the app input in, plus the
// instance_id to run it on.
func routed(t *testing.T, id string, in any) map[string]json.RawMessage {
	t.Helper()
	args := map[string]json.RawMessage{}
	if in != nil {
		if err := json.Unmarshal([]byte(mustJSON(t, in)), &args); err != nil {
			t.Fatal(err)
		}
	}
	args["instance_id"] = json.RawMessage(mustJSON(t, id))
	return args
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
	st, errText := callTool[app.SyncStatus](t, r, "crow_sync_status", routed(t, id, nil))
	if errText != "" || st.InstanceID != id {
		t.Fatalf("routed sync status: %+v %q", st, errText)
	}
	if _, errText := callTool[memory.Memory](t, r, "crow_store_memory", routed(t, id, app.MemoryCreateIn{Content: "x"})); !strings.Contains(errText, "not allowed for federated calls") {
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
	if m, errText := callTool[memory.Memory](t, mcpClient(t, laptop, "/mcp"), "crow_store_memory", app.MemoryCreateIn{Content: "owner write"}); errText != "" || m.ID == "" || m.Content != "owner write" {
		t.Fatalf("owner write: %+v %q", m, errText)
	}
	// The laptop's router reaches home the same way.
	homeID := home.instanceID()
	lr := mcpClient(t, laptop, "/router/mcp")
	if st, errText := callTool[app.SyncStatus](t, lr, "crow_sync_status", routed(t, homeID, nil)); errText != "" || st.InstanceID != homeID {
		t.Fatalf("laptop → home: %+v %q", st, errText)
	}
	// Revoked on home: home routes nothing to it, and refuses its tokens
	// (the laptop's own router still tries until it hears of the revocation).
	home.MustCLI("instance", "revoke", id)
	if _, errText := callTool[app.SyncStatus](t, r, "crow_sync_status", routed(t, id, nil)); !strings.Contains(errText, "revoked") {
		t.Fatalf("home routed to a revoked instance: %q", errText)
	}
	if _, errText := callTool[app.SyncStatus](t, lr, "crow_sync_status", routed(t, homeID, nil)); errText == "" {
		t.Fatal("home answered a revoked instance's federated call")
	}
	Eventually(t, syncTimeout, "the refused token in home's log", func() bool {
		return strings.Contains(home.Log(), "security: federation token refused")
	})
}

// instanceID reads d's instance id with `crow identity show --json` (whose
// fields are named as /health's).
func (d *Daemon) instanceID() string {
	d.t.Helper()
	var ident app.Health
	if err := json.Unmarshal([]byte(d.MustCLI("identity", "show", "--json")), &ident); err != nil || ident.InstanceID == "" {
		d.t.Fatalf("identity show --json: %+v %v", ident, err)
	}
	return ident.InstanceID
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
func statuses(res app.SearchResult) map[string]string {
	out := map[string]string{}
	for _, s := range res.Instances {
		out[s.ID] = s.Status
	}
	return out
}

// search runs a REST search on d, failing the test on an error.
func search(t *testing.T, d *Daemon, in app.MemorySearchIn) app.SearchResult {
	t.Helper()
	res, err := Call(d, app.MemorySearch, in)
	if err != nil {
		t.Fatalf("%s: search %+v: %v", d.Name, in, err)
	}
	return res
}

// A federated search on real daemons: every instance is searched in
// parallel, a memory replicated everywhere comes back once with found_on
// listing all three; a hung satellite (SIGSTOP) costs the caller one
// deadline, is reported as a timeout, and the answer is partial; a killed
// one is an error; the router and the MCP tool give the same.
func TestFederatedSearch(t *testing.T) {
	home, sats := cluster(t, "laptop", "vps")
	laptop, vps := sats[0], sats[1]
	memID := Must(laptop, app.MemoryCreate, app.MemoryCreateIn{Content: "the federated pelican", Project: "crow"}).ID
	Eventually(t, syncTimeout, "the memory everywhere", func() bool {
		return memoryOf(home, memID) != nil && memoryOf(vps, memID) != nil
	})
	ids := map[string]string{"home": home.instanceID(), "laptop": laptop.instanceID(), "vps": vps.instanceID()}
	// Wait until home's prober has seen both satellites (a never-probed
	// instance is searched anyway, but its status should be settled here).
	Eventually(t, syncTimeout, "home to see both satellites online", func() bool {
		online := 0
		for _, in := range Must(home, app.InstancesList, app.NoInput{}).Instances {
			if in.Status == "online" {
				online++
			}
		}
		return online >= 2
	})

	body := search(t, home, app.MemorySearchIn{Query: "pelican", Instances: "all"})
	sts := statuses(body)
	for name, id := range ids {
		if sts[id] != "ok" {
			t.Fatalf("%s's status = %q in %+v", name, sts[id], body.Instances)
		}
	}
	if len(body.Results) != 1 || body.Partial {
		t.Fatalf("want one merged result, not partial: %+v", body)
	}
	if r := body.Results[0]; r.ID != memID || len(r.FoundOn) != 3 {
		t.Fatalf("merged result = %+v", r)
	}

	// crow_instance_summaries: home first (computed now), then the
	// satellites' cached summaries, fetched when they were registered.
	mc := mcpClient(t, home, "/mcp")
	defer func() {
		if t.Failed() {
			res, _ := callTool[app.Summaries](t, mc, "crow_instance_summaries", nil)
			t.Logf("summaries: %+v", res)
		}
	}()
	Eventually(t, syncTimeout, "the satellites' summaries on home", func() bool {
		res, errText := callTool[app.Summaries](t, mc, "crow_instance_summaries", nil)
		if errText != "" {
			t.Fatalf("summaries: %q", errText)
		}
		list := res.Instances
		if len(list) != 3 || list[0].InstanceID != ids["home"] {
			return false
		}
		// Peers' summaries are snapshots (refreshed hourly): fetched when
		// registered, before the memory was written. Home's is live.
		if m := list[0]; m.Memories != 1 || m.Categories["general"] != 1 {
			t.Fatalf("home's own summary: %+v", m)
		}
		for _, m := range list[1:] {
			if m.Health != "ok" || m.UpdatedAt.IsZero() || m.Name == "" {
				return false
			}
		}
		return true
	})

	// A list of ids searches just those.
	body = search(t, home, app.MemorySearchIn{Query: "pelican", Instances: ids["laptop"]})
	if len(statuses(body)) != 1 || statuses(body)[ids["laptop"]] != "ok" {
		t.Fatalf("search of the laptop only = %+v", body)
	}

	// A hung satellite: a timeout, the rest answers, partial.
	thaw := vps.freeze()
	start := time.Now()
	body = search(t, home, app.MemorySearchIn{Query: "pelican", Instances: "all"})
	took := time.Since(start)
	sts = statuses(body)
	if sts[ids["vps"]] != "timeout" || sts[ids["laptop"]] != "ok" || sts[ids["home"]] != "ok" || !body.Partial {
		t.Fatalf("with vps hung: %+v", body)
	}
	if len(body.Results) != 1 {
		t.Fatalf("with vps hung the result is lost: %+v", body)
	}
	t.Logf("search with a hung peer answered in %v (deadline %v)", took, 3*time.Second)
	// Through MCP, the same.
	res, errText := callTool[app.SearchResult](t, mcpClient(t, home, "/mcp"), "crow_search_memories", app.MemorySearchIn{Query: "pelican", Instances: "all"})
	if errText != "" || !res.Partial || statuses(res)[ids["vps"]] != "timeout" {
		t.Fatalf("MCP federated search with vps hung: %+v %q", res, errText)
	}
	thaw()

	// A dead satellite: an error (or skipped once a probe marks it offline).
	vps.Kill()
	body = search(t, home, app.MemorySearchIn{Query: "pelican", Instances: "all"})
	if s := statuses(body)[ids["vps"]]; (s != "error" && s != "skipped_offline" && s != "timeout") || !body.Partial {
		t.Fatalf("with vps dead: %+v", body)
	}
	// A peer searching through its own /mcp never fans out again: the laptop's
	// router asking home to search "all" gets home's own answer only.
	res, errText = callTool[app.SearchResult](t, mcpClient(t, laptop, "/router/mcp"), "crow_search_memories", routed(t, ids["home"], app.MemorySearchIn{Query: "pelican"}))
	if errText != "" || res.Instances != nil || len(res.Results) != 1 {
		t.Fatalf("routed search on home: %+v %q", res, errText)
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
