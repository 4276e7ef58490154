package gateway_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// The MCP wire rules of mcpwire.go, each against a real mcp-go server behind
// the whole gateway (httptest), on both endpoints.

// mcpDo sends one request with the owner key (and session, when not "") and
// returns the response and its body.
func mcpDo(t *testing.T, method, url, session, body string) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+testKey)
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// initSession initializes a session at url with protocol version and returns
// its id.
func initSession(t *testing.T, url, version string) string {
	t.Helper()
	resp, b := mcpDo(t, "POST", url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+version+
		`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || id == "" {
		t.Fatalf("initialize: %d %s (session %q)", resp.StatusCode, b, id)
	}
	var res struct {
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	if json.Unmarshal(b, &res) != nil || res.Result.ProtocolVersion != version {
		t.Fatalf("initialize negotiated %s, want %s", b, version)
	}
	if resp, b := mcpDo(t, "POST", url, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d %s", resp.StatusCode, b)
	}
	return id
}

// wantHTTPError checks an HTTP-level error: status and {"error": "..."}
// containing substr.
func wantHTTPError(t *testing.T, what string, resp *http.Response, b []byte, status int, substr string) {
	t.Helper()
	var e struct {
		Error string `json:"error"`
	}
	if resp.StatusCode != status || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") ||
		json.Unmarshal(b, &e) != nil || !strings.Contains(e.Error, substr) {
		t.Errorf("%s: %d %q %s, want %d and {\"error\": ...%q...}", what, resp.StatusCode, resp.Header.Get("Content-Type"), b, status, substr)
	}
}

// wantRPCError checks a JSON-RPC-level error: HTTP status and a JSON-RPC error
// object with code.
func wantRPCError(t *testing.T, what string, resp *http.Response, b []byte, status, code int) {
	t.Helper()
	var e struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if resp.StatusCode != status || json.Unmarshal(b, &e) != nil || e.JSONRPC != "2.0" || e.Error.Code != code || e.Error.Message == "" || string(e.ID) != "null" {
		t.Errorf("%s: %d %s, want %d and a JSON-RPC error %d with id null", what, resp.StatusCode, b, status, code)
	}
}

const toolsList = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`

func TestMCPSessionsAreTracked(t *testing.T) {
	env := newGatewayEnv(t)
	for _, path := range []string{mcpPath, rtrPath} {
		url := env.url + path
		resp, b := mcpDo(t, "POST", url, "", toolsList)
		wantHTTPError(t, path+": tools/list without a session", resp, b, http.StatusBadRequest, "Mcp-Session-Id")
		for _, m := range []string{"GET", "DELETE"} {
			resp, b = mcpDo(t, m, url, "", "")
			wantHTTPError(t, path+": "+m+" without a session", resp, b, http.StatusBadRequest, "Mcp-Session-Id")
		}
		for _, bogus := range []string{"nope", "mcp-session-5f0e4a52-2e7e-4a4b-9b5c-2a5f3c1d9e01"} {
			for _, m := range []string{"POST", "GET", "DELETE"} {
				resp, b = mcpDo(t, m, url, bogus, map[string]string{"POST": toolsList}[m])
				wantHTTPError(t, path+": "+m+" with an unknown session", resp, b, http.StatusNotFound, "session")
			}
		}

		id := initSession(t, url, "2025-06-18")
		if resp, b := mcpDo(t, "POST", url, id, toolsList); resp.StatusCode != 200 || !strings.Contains(string(b), "crow_store_memory") {
			t.Fatalf("%s: tools/list in the session: %d %s", path, resp.StatusCode, b)
		}
		// Sessions are per endpoint: /mcp's id is unknown to the router.
		other := map[string]string{mcpPath: rtrPath, rtrPath: mcpPath}[path]
		resp, b = mcpDo(t, "POST", env.url+other, id, toolsList)
		wantHTTPError(t, path+": its session on "+other, resp, b, http.StatusNotFound, "session")

		if resp, b := mcpDo(t, "DELETE", url, id, ""); resp.StatusCode != 200 {
			t.Fatalf("%s: DELETE of the session: %d %s", path, resp.StatusCode, b)
		}
		for _, m := range []string{"POST", "GET", "DELETE"} {
			resp, b = mcpDo(t, m, url, id, map[string]string{"POST": toolsList}[m])
			wantHTTPError(t, path+": "+m+" in the ended session", resp, b, http.StatusNotFound, "session")
		}
	}
}

func TestMCPBatches(t *testing.T) {
	env := newGatewayEnv(t)
	batch := `[{"jsonrpc":"2.0","id":7,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},` + toolsList + `]`
	for _, path := range []string{mcpPath, rtrPath} {
		url := env.url + path
		// A batch needs a session like any other message.
		resp, b := mcpDo(t, "POST", url, "", batch)
		wantHTTPError(t, path+": a batch without a session", resp, b, http.StatusBadRequest, "Mcp-Session-Id")
		for _, v := range []string{"2025-06-18", "2025-11-25"} {
			resp, b := mcpDo(t, "POST", url, initSession(t, url, v), batch)
			wantRPCError(t, path+": a batch in "+v, resp, b, http.StatusBadRequest, -32600)
		}

		// 2025-03-26 has batches: each message is answered, the notification not.
		id := initSession(t, url, "2025-03-26")
		resp, b = mcpDo(t, "POST", url, id, batch)
		var answers []struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if resp.StatusCode != 200 || json.Unmarshal(b, &answers) != nil || len(answers) != 2 ||
			answers[0].ID != 7 || answers[1].ID != 2 || !strings.Contains(string(answers[1].Result), "crow_store_memory") {
			t.Errorf("%s: a 2025-03-26 batch: %d %s", path, resp.StatusCode, b)
		}
		if resp, b := mcpDo(t, "POST", url, id, `[{"jsonrpc":"2.0","method":"notifications/initialized"}]`); resp.StatusCode != http.StatusAccepted {
			t.Errorf("%s: a batch of notifications: %d %s, want 202", path, resp.StatusCode, b)
		}
		resp, b = mcpDo(t, "POST", url, id, `[]`)
		wantRPCError(t, path+": an empty batch", resp, b, http.StatusBadRequest, -32600)
		// Bad elements are answered in place; initialize may not be batched.
		resp, b = mcpDo(t, "POST", url, id, `[1,{"jsonrpc":"2.0","id":3},{"jsonrpc":"2.0","id":4,"method":"initialize","params":{}}]`)
		var errs []struct {
			ID    json.RawMessage `json:"id"`
			Error struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		if resp.StatusCode != 200 || json.Unmarshal(b, &errs) != nil || len(errs) != 3 ||
			errs[0].Error.Code != -32600 || errs[1].Error.Code != -32600 || errs[2].Error.Code != -32600 || string(errs[2].ID) != "4" {
			t.Errorf("%s: a batch of bad messages: %d %s", path, resp.StatusCode, b)
		}
	}
}

func TestMCPMessageWithoutMethod(t *testing.T) {
	env := newGatewayEnv(t)
	for _, path := range []string{mcpPath, rtrPath} {
		url := env.url + path
		id := initSession(t, url, "2025-06-18")
		for _, body := range []string{`{"jsonrpc":"2.0","id":1}`, `{"jsonrpc":"2.0","params":{}}`, `{}`, `{"jsonrpc":"2.0","id":null,"result":{}}`} {
			for _, session := range []string{"", id} {
				resp, b := mcpDo(t, "POST", url, session, body)
				wantRPCError(t, path+": "+body, resp, b, http.StatusBadRequest, -32600)
			}
		}
		for _, body := range []string{`not json`, `"a string"`, `7`} {
			resp, b := mcpDo(t, "POST", url, id, body)
			wantRPCError(t, path+": "+body, resp, b, http.StatusBadRequest, -32700)
		}
		// A response (to a request the server never sent) is not refused as
		// a message without method: it is a response.
		if resp, b := mcpDo(t, "POST", url, id, `{"jsonrpc":"2.0","id":5,"result":{}}`); resp.StatusCode != http.StatusAccepted {
			t.Errorf("%s: a response: %d %s, want 202", path, resp.StatusCode, b)
		}
	}
}

func TestMCPMethodNotAllowed(t *testing.T) {
	env := newGatewayEnv(t)
	for _, path := range []string{mcpPath, rtrPath} {
		for _, m := range []string{"PUT", "PATCH", "OPTIONS", "HEAD"} {
			resp, b := mcpDo(t, m, env.url+path, "", `{}`)
			if resp.Header.Get("Allow") != "GET, POST, DELETE" {
				t.Errorf("%s %s: Allow %q", m, path, resp.Header.Get("Allow"))
			}
			if m == "HEAD" {
				if resp.StatusCode != http.StatusMethodNotAllowed {
					t.Errorf("HEAD %s: %d", path, resp.StatusCode)
				}
				continue
			}
			wantHTTPError(t, m+" "+path, resp, b, http.StatusMethodNotAllowed, "not allowed")
		}
	}
}

// chunked hides its length from http.Client, so the body goes out without a
// Content-Length and the cap is met while reading.
type chunked struct{ io.Reader }

func TestMCPOversizedBody(t *testing.T) {
	env := newGatewayEnv(t)
	big := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":"` + strings.Repeat("x", 1<<20) + `"}}`
	for _, path := range []string{mcpPath, rtrPath} {
		url := env.url + path
		id := initSession(t, url, "2025-06-18")
		for _, withLength := range []bool{true, false} {
			var body io.Reader = strings.NewReader(big)
			if !withLength {
				body = chunked{body}
			}
			req, _ := http.NewRequest("POST", url, body)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer "+testKey)
			req.Header.Set("Mcp-Session-Id", id)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			wantHTTPError(t, path+": an oversized body", resp, b, http.StatusRequestEntityTooLarge, "larger than")
		}
	}
}
