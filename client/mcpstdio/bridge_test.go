package mcpstdio

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// newMCP returns a real mcp-go streamable-HTTP server with one tool, "note",
// that sends a log notification before answering (so mcp-go answers it as an
// event stream).
func newMCP() http.Handler {
	ms := server.NewMCPServer("test", "1", server.WithToolCapabilities(false), server.WithLogging())
	ms.AddTool(mcp.NewTool("note"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		_ = server.ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/message",
			map[string]any{"level": "info", "data": "noted"})
		return mcp.NewToolResultText("done"), nil
	})
	return server.NewStreamableHTTPServer(ms)
}

// The bridge through a real mcp-go streamable-HTTP server: initialize and
// its session, a JSON answer, an event-stream answer (notification, then
// result, each one line), a restarted server (the bridge opens a new session
// and the request still gets its answer), an unreachable daemon (a JSON-RPC
// error with the request's id; a notification gets nothing), and EOF ends
// Serve.
func TestBridge(t *testing.T) {
	var h atomic.Pointer[http.Handler]
	first := newMCP()
	h.Store(&first)
	var auth atomic.Value
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"))
		(*h.Load()).ServeHTTP(w, r)
	}))
	defer ts.Close()
	var down atomic.Bool
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	b := &Bridge{In: inR, Out: outW, Log: slog.New(slog.DiscardHandler), Target: func() (string, string, error) {
		if down.Load() {
			return "", "", errors.New("no daemon is running for H (no gateway.addr): start it with 'crow serve'")
		}
		return ts.URL, "k", nil
	}}
	done := make(chan error, 1)
	go func() { done <- b.Serve(context.Background()); outW.Close() }()
	lines := bufio.NewScanner(outR)
	send := func(msg string) {
		t.Helper()
		if _, err := io.WriteString(inW, msg+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	next := func() map[string]any {
		t.Helper()
		got := make(chan map[string]any, 1)
		go func() {
			var m map[string]any
			if lines.Scan() {
				_ = json.Unmarshal(lines.Bytes(), &m)
			}
			got <- m
		}()
		select {
		case m := <-got:
			if m == nil {
				t.Fatal("no JSON line on stdout")
			}
			return m
		case <-time.After(30 * time.Second):
			t.Fatal("no answer within 30s")
		}
		return nil
	}

	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if m := next(); m["id"] != 1.0 || m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	if auth.Load() != "Bearer k" {
		t.Errorf("Authorization = %v", auth.Load())
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if m := next(); m["id"] != 2.0 || !strings.Contains(mustJSON(m), `"note"`) {
		t.Fatalf("tools/list: %v", m)
	}
	// The tool sends a notification on the event stream, then its result;
	// mcp-go may write the notification after the result (seen under
	// -race), so notifications are skipped wherever they come and counted.
	notes := 0
	reply := func() map[string]any {
		t.Helper()
		for {
			m := next()
			if m["method"] != "notifications/message" {
				return m
			}
			notes++
		}
	}
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"note","arguments":{}}}`)
	if m := reply(); m["id"] != 3.0 || !strings.Contains(mustJSON(m), "done") {
		t.Fatalf("tools/call: %v", m)
	}

	second := newMCP() // the daemon restarted: the old session is unknown (404)
	h.Store(&second)
	send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"note","arguments":{}}}`)
	m := reply()
	if m["id"] != 4.0 || !strings.Contains(mustJSON(m), "done") {
		t.Fatalf("after a restart: %v", m)
	}
	t.Logf("%d notifications relayed with the two tool calls", notes)

	down.Store(true)
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}`)
	send(`{"jsonrpc":"2.0","id":"five","method":"ping"}`)
	m = reply()
	e, _ := m["error"].(map[string]any)
	if m["id"] != "five" || e == nil || e["code"] != float64(CodeDaemon) || !strings.Contains(e["message"].(string), "crow serve") {
		t.Fatalf("no daemon: %v", m)
	}
	// The daemon comes back (a new process): the session is opened again.
	third := newMCP()
	h.Store(&third)
	down.Store(false)
	send(`{"jsonrpc":"2.0","id":6,"method":"tools/list"}`)
	if m := reply(); m["id"] != 6.0 || !strings.Contains(mustJSON(m), `"note"`) {
		t.Fatalf("after the daemon came back: %v", m)
	}

	// A client whose initialize found no daemon gets a session once it runs.
	b.mu.Lock()
	b.session = ""
	b.mu.Unlock()
	send(`{"jsonrpc":"2.0","id":7,"method":"tools/list"}`)
	if m := next(); m["id"] != 7.0 || !strings.Contains(mustJSON(m), `"note"`) {
		t.Fatalf("without a session: %v", m)
	}
	inW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return at EOF")
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
