package gateway

import (
	"crypto/sha256"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/crow-sync/crow/app"
)

// The browser guard is in front of every route (REST, MCP, the UI, /health,
// the OpenAPI document, unmatched paths), before auth: a rebound Host, a
// foreign Origin or a cross-site fetch is refused with a JSON 403 wherever it
// goes, even without a key, and a loopback or configured host passes the
// guard (an owner route then asks for the key: 401). The chain's JSON-RPC
// takes any origin, past the Host check.
func TestBrowserGuardCoversEveryRoute(t *testing.T) {
	s := New(Config{
		Logger: slog.New(slog.DiscardHandler),
		App: app.New(app.Deps{Self: Self{InstanceID: "inst-1", Name: "home", Role: "home", Version: "test", GatewayURL: "http://100.64.0.1:3001"},
			Sign: func(c []byte) []byte { return c }}),
		Keys: NewKeyChecker(sha256.Sum256([]byte(ownerKey))),
	})
	paths := []string{"/ui/", "/ui", "/nope"}
	owner := map[string]bool{}
	for _, rt := range s.routes {
		m := rt.method
		if m == "" {
			m = "POST"
		}
		paths = append(paths, m+" "+concretePath(rt.path))
		owner[m+" "+concretePath(rt.path)] = rt.access != public
	}
	refused := []map[string]string{
		{"Host": "evil.example:3001"},
		{"Host": "100.64.0.2:3001"},
		{"Host": "127.0.0.1:3001", "Origin": "https://evil.example"},
		{"Host": "127.0.0.1:3001", "Origin": "http://localhost:9999"},
		{"Host": "127.0.0.1:3001", "Sec-Fetch-Site": "cross-site"},
		{"Host": "127.0.0.1:3001", "Sec-Fetch-Site": "same-site"},
	}
	passed := []map[string]string{
		{"Host": "127.0.0.1:3001"},
		{"Host": "localhost:3001", "Origin": "http://localhost:3001", "Sec-Fetch-Site": "same-origin"},
		{"Host": "100.64.0.1:3001"},
		{"Host": "[::1]:3001"},
	}
	for _, p := range paths {
		method, path, ok := strings.Cut(p, " ")
		if !ok {
			method, path = "GET", p
		}
		send := func(h map[string]string) *httptest.ResponseRecorder {
			req := httptest.NewRequest(method, path, nil)
			for k, v := range h {
				if k == "Host" {
					req.Host = v
				} else {
					req.Header.Set(k, v)
				}
			}
			w := httptest.NewRecorder()
			s.Handler().ServeHTTP(w, req)
			return w
		}
		for _, h := range refused {
			if path == ChainRPCPath && h["Host"] == "127.0.0.1:3001" {
				// Any origin may call the chain's JSON-RPC: past the guard
				// (this bare server has no chain: 404).
				if w := send(h); w.Code != http.StatusNotFound {
					t.Errorf("%s %s with %v: %d %s, want the route's 404", method, path, h, w.Code, w.Body.String())
				}
				continue
			}
			if w := send(h); w.Code != http.StatusForbidden || !strings.Contains(errorOf(t, w), "refused") {
				t.Errorf("%s %s with %v: %d %s, want 403", method, path, h, w.Code, w.Body.String())
			}
		}
		want := map[string]int{"/ui/": http.StatusOK, "/ui": http.StatusMovedPermanently, "/nope": http.StatusNotFound}[path]
		if owner[p] {
			want = http.StatusUnauthorized
		}
		if want == 0 {
			continue // a public route: its handler needs what this bare server lacks
		}
		for _, h := range passed {
			if w := send(h); w.Code != want {
				t.Errorf("%s %s with %v: %d %s, want %d", method, path, h, w.Code, w.Body.String(), want)
			}
		}
	}
}

// POST /v1/apikey/rotate takes no fields: an empty body or {} rotates, any
// field or a non-object is a 400 and rotates nothing.
func TestAPIKeyRotateRefusesBodyFields(t *testing.T) {
	var rotated int
	key := ownerKey
	s := rotatingServer(func() (string, error) {
		rotated++
		return "key-" + strings.Repeat("x", rotated), nil
	})
	for _, body := range []string{`{"ttl":3}`, `{"api_key":"mine"}`, `[]`, `"x"`, `{} {}`} {
		w := serve(s, "POST", "/v1/apikey/rotate", key, strings.NewReader(body))
		if w.Code != http.StatusBadRequest || rotated != 0 {
			t.Errorf("rotate with %s: %d %s (rotated %d)", body, w.Code, w.Body.String(), rotated)
		}
		errorOf(t, w)
	}
	for i, body := range []string{"", "{}", " \n"} {
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		w := serve(s, "POST", "/v1/apikey/rotate", key, rd)
		if w.Code != http.StatusOK || rotated != i+1 {
			t.Fatalf("rotate with %q: %d %s", body, w.Code, w.Body.String())
		}
		key = "key-" + strings.Repeat("x", rotated)
	}
}
