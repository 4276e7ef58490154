package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crow-sync/crow/app"
)

// stdioClient returns node and the stdio MCP client: $CROW_MCP_STDIO, set by
// .ci/run after tools/mcp-stdio/setup.sh installed it with the official
// TypeScript SDK. Without them the test is skipped locally, and fails in CI.
func stdioClient(t *testing.T) (node, script string) {
	t.Helper()
	node, err := exec.LookPath("node")
	script = os.Getenv("CROW_MCP_STDIO")
	msg := ""
	switch {
	case err != nil:
		msg = "node is not on PATH"
	case script == "":
		msg = "CROW_MCP_STDIO is not set (the path of client.mjs that tools/mcp-stdio/setup.sh prints)"
	default:
		if _, err := os.Stat(script); err != nil {
			msg = "CROW_MCP_STDIO: " + err.Error()
		}
	}
	if msg != "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + ": the stdio MCP client test must run in CI (.ci/run installs nodejs and the client)")
		}
		t.Skip(msg + "; run: export CROW_MCP_STDIO=$(tools/mcp-stdio/setup.sh DIR)")
	}
	return node, script
}

// stdioOut is what tools/mcp-stdio/client.mjs prints.
type stdioOut struct {
	Fatal  string `json:"fatal"`
	Server struct {
		Name string `json:"name"`
	} `json:"server"`
	Capabilities map[string]any `json:"capabilities"`
	Tools        []string       `json:"tools"`
	Prompts      []struct {
		Name      string   `json:"name"`
		Arguments []string `json:"arguments"`
	} `json:"prompts"`
	Templates []string `json:"templates"`
	Stored    struct {
		ID      string `json:"id"`
		Content string `json:"content"`
		Source  string `json:"source"`
	} `json:"stored"`
	Search struct {
		Results []struct {
			ID string `json:"id"`
		} `json:"results"`
	} `json:"search"`
	ToolError struct {
		IsError bool   `json:"isError"`
		Text    string `json:"text"`
	} `json:"tool_error"`
	Changes struct {
		Client string `json:"client"`
		Cursor string `json:"cursor"`
		Total  int    `json:"total"`
	} `json:"changes"`
	Resources []struct {
		URI      string `json:"uri"`
		MIMEType string `json:"mimeType"`
	} `json:"resources"`
	Instances []struct {
		URI      string         `json:"uri"`
		MIMEType string         `json:"mimeType"`
		JSON     map[string]any `json:"json"`
	} `json:"instances"`
	Memory []struct {
		URI  string         `json:"uri"`
		JSON map[string]any `json:"json"`
	} `json:"memory"`
	Prompt struct {
		Messages []struct {
			Role string `json:"role"`
			Text string `json:"text"`
		} `json:"messages"`
	} `json:"prompt"`
	Missing struct {
		Error string `json:"error"`
	} `json:"missing"`
}

// TestMCPStdio: the official TypeScript SDK's StdioClientTransport spawns
// `crow mcp --home H` against a real running daemon and lists the same tools
// as the daemon's /mcp, the resources (instances, the numbered memory), the
// templates and the prompts; stores a memory and finds it by search; gets a
// tool error as an IsError result; reads resources and gets a prompt. With no
// daemon running, `crow mcp` answers initialize with a JSON-RPC error that
// says to start it, on stdout (JSON-RPC only), and a line on stderr.
func TestMCPStdio(t *testing.T) {
	node, script := stdioClient(t)
	d := NewDaemon(t, "home", nil)
	d.Start()
	m := Must(d, app.MemoryCreate, app.MemoryCreateIn{Content: "numbered before the stdio client came", Project: "stdio"})
	var number uint64
	Eventually(t, syncTimeout, "the memory numbered", func() bool {
		got, err := Call(d, app.MemoryGet, app.MemoryID{ID: m.ID})
		if err == nil && got.Number != nil {
			number = *got.Number
		}
		return number != 0
	})

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, crowBin, "mcp", "--home", d.Home)
	cmd.Env = append(withoutEnv(os.Environ(), "CROW_HOME"), "CROW_MCP_PROJECT=stdio", "CROW_MCP_NUMBER="+strconv.FormatUint(number, 10))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("client: %v\nstdout: %s\nstderr: %s", err, raw, stderr.String())
	}
	var out stdioOut
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("client output %q: %v\nstderr: %s", raw, err, stderr.String())
	}
	if out.Fatal != "" {
		t.Fatalf("client failed: %s\nstderr: %s\ndaemon log:\n%s", out.Fatal, stderr.String(), d.Log())
	}

	if out.Server.Name != "crow" || out.Capabilities["tools"] == nil || out.Capabilities["resources"] == nil || out.Capabilities["prompts"] == nil {
		t.Errorf("server %v, capabilities %v", out.Server, out.Capabilities)
	}
	var want []string
	for _, op := range app.Ops() {
		if op.Info().Tool != "" {
			want = append(want, op.Info().Tool)
		}
	}
	slices.Sort(want)
	got := slices.Sorted(slices.Values(out.Tools))
	if !slices.Equal(got, want) {
		t.Errorf("tools through crow mcp = %v\nwant the daemon's %v", got, want)
	}
	if strings.Join(out.Templates, " ") != "crow://memory/{number} crow://project/{name}/state" {
		t.Errorf("templates = %v", out.Templates)
	}
	if len(out.Prompts) != 2 || out.Prompts[0].Name != "consolidate_project" || !slices.Equal(out.Prompts[0].Arguments, []string{"project"}) ||
		out.Prompts[1].Name != "review_sync_conflicts" {
		t.Errorf("prompts = %+v", out.Prompts)
	}

	if out.Stored.ID == "" || out.Stored.Content != "stdio clients reach crow through crow mcp" {
		t.Errorf("stored = %+v", out.Stored)
	}
	if stored, err := Call(d, app.MemoryGet, app.MemoryID{ID: out.Stored.ID}); err != nil || stored.Project != "stdio" {
		t.Errorf("the memory stored through crow mcp, over REST: %+v %v", stored, err)
	}
	found := false
	for _, r := range out.Search.Results {
		found = found || r.ID == out.Stored.ID
	}
	if !found {
		t.Errorf("search did not find the stored memory: %+v", out.Search)
	}
	if !out.ToolError.IsError || !strings.Contains(out.ToolError.Text, "no-such-memory") {
		t.Errorf("tool error = %+v", out.ToolError)
	}

	// crow_changes_since remembers the cursor under the MCP client's name;
	// this instance's own writes are not news.
	if out.Changes.Client != "crow-stdio-test" || out.Changes.Cursor == "" || out.Changes.Total != 0 {
		t.Errorf("crow_changes_since = %+v", out.Changes)
	}
	uris := map[string]string{}
	for _, r := range out.Resources {
		uris[r.URI] = r.MIMEType
	}
	n := strconv.FormatUint(number, 10)
	if uris["crow://instances"] != "application/json" || uris["crow://memory/"+n] != "application/json" {
		t.Errorf("resources = %v", uris)
	}
	if len(out.Instances) != 1 || out.Instances[0].MIMEType != "application/json" || out.Instances[0].JSON["self"] != d.instanceID() {
		t.Errorf("crow://instances = %+v", out.Instances)
	}
	if len(out.Memory) != 1 || out.Memory[0].URI != "crow://memory/"+n || out.Memory[0].JSON["id"] != m.ID ||
		out.Memory[0].JSON["content"] != "numbered before the stdio client came" {
		t.Errorf("crow://memory/%s = %+v", n, out.Memory)
	}
	if len(out.Prompt.Messages) != 1 || out.Prompt.Messages[0].Role != "user" ||
		!strings.Contains(out.Prompt.Messages[0].Text, `"stdio"`) || !strings.Contains(out.Prompt.Messages[0].Text, "update_project_state") {
		t.Errorf("consolidate_project = %+v", out.Prompt)
	}
	if !strings.Contains(out.Missing.Error, "999999") {
		t.Errorf("reading a missing memory: %+v", out.Missing)
	}

	// No daemon: a JSON-RPC error with the request's id, stdout JSON-RPC only.
	d.Stop()
	mcp := exec.CommandContext(ctx, crowBin, "mcp", "--home", d.Home)
	mcp.Env = withoutEnv(os.Environ(), "CROW_HOME")
	mcp.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	var e2 bytes.Buffer
	mcp.Stderr = &e2
	so, err := mcp.Output()
	if err != nil {
		t.Fatalf("crow mcp without a daemon: %v (stderr %s)", err, e2.String())
	}
	sc := bufio.NewScanner(bytes.NewReader(so))
	var answers []map[string]any
	for sc.Scan() {
		var msg map[string]any
		if err := json.Unmarshal(sc.Bytes(), &msg); err != nil || msg["jsonrpc"] != "2.0" {
			t.Fatalf("stdout line %q is not JSON-RPC", sc.Text())
		}
		answers = append(answers, msg)
	}
	if len(answers) != 1 || answers[0]["id"] != 7.0 {
		t.Fatalf("answers without a daemon = %v", answers)
	}
	e, _ := answers[0]["error"].(map[string]any)
	if e == nil || e["code"] != -32000.0 || !strings.Contains(e["message"].(string), "crow serve") {
		t.Errorf("error without a daemon = %v", answers[0])
	}
	if !strings.Contains(e2.String(), "crow serve") {
		t.Errorf("stderr without a daemon = %q", e2.String())
	}
}
