package e2e

import (
	"context"
	"encoding/json"
	"strings"
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
	if !strings.Contains(laptop.Log(), "peer called a tool outside the allow-list") {
		t.Fatal("the refused peer call is not logged on the laptop")
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
	if !strings.Contains(home.Log(), "federation token refused") {
		t.Fatal("home did not log the refused token")
	}
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
