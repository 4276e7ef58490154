package gateway

import (
	"crypto/sha256"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/crow-sync/crow/app"
)

const (
	ownerKey = "the-owner-key"
	otherKey = "not-the-owner-key"
)

// bareServer is a gateway with no domain parts: enough for everything that
// happens before a handler (routing, auth, query checks) and the document.
func bareServer(t *testing.T) *Server {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	return New(Config{
		Logger: logger,
		App: app.New(app.Deps{
			Logger: logger,
			Self:   Self{InstanceID: "inst-1", Name: "home", Role: "home", Version: "test", GatewayURL: "http://127.0.0.1:3001"},
			Sign:   func(c []byte) []byte { return c },
		}),
		Keys: NewKeyChecker(sha256.Sum256([]byte(ownerKey))),
	})
}

// rotatingServer is a gateway whose App rotates the owner key with rotate,
// then makes keys accept only the new one (as the daemon wires it).
func rotatingServer(rotate func() (string, error)) *Server {
	logger := slog.New(slog.DiscardHandler)
	keys := NewKeyChecker(sha256.Sum256([]byte(ownerKey)))
	return New(Config{
		Logger: logger,
		App: app.New(app.Deps{Logger: logger, RotateAPIKey: func() (string, error) {
			key, err := rotate()
			if err == nil {
				keys.SetHash(sha256.Sum256([]byte(key)))
			}
			return key, err
		}}),
		Keys: keys,
	})
}

// concretePath fills a route path's {wildcards}.
func concretePath(p string) string {
	return pathParam.ReplaceAllString(p, "x1")
}

// serve sends one request through the whole gateway (observe included).
func serve(s *Server, method, target, key string, body io.Reader) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, body)
	req.Host = "127.0.0.1:3001"
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, req)
	return w
}

// errorOf decodes the one error shape, failing when the body is not it.
func errorOf(t *testing.T, w *httptest.ResponseRecorder) string {
	t.Helper()
	if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("error answer has Content-Type %q, want application/json; body %q", ct, w.Body.String())
	}
	var e map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil {
		t.Fatalf("error answer is not JSON: %q", w.Body.String())
	}
	msg, ok := e["error"].(string)
	if !ok || msg == "" || len(e) != 1 {
		t.Fatalf(`error answer is not {"error": "..."}: %q`, w.Body.String())
	}
	return msg
}

// TestOwnerRoutesRefuseWithoutTheKey walks the route table: every owner route,
// under every method it serves, answers 401 with the JSON error to no key, a
// wrong Bearer key and a wrong x-api-key; public routes answer without a key.
func TestOwnerRoutesRefuseWithoutTheKey(t *testing.T) {
	s := bareServer(t)
	owner, pub := 0, 0
	for _, rt := range s.routes {
		for _, m := range rt.methods() {
			target := concretePath(rt.path)
			if rt.access == public {
				pub++
				w := serve(s, m, target, "", strings.NewReader("{}"))
				if w.Code == http.StatusUnauthorized {
					t.Errorf("public %s %s answered 401 without a key", m, rt.path)
				}
				continue
			}
			owner++
			for _, tc := range []struct {
				name   string
				header string
				value  string
			}{
				{"no key", "", ""},
				{"wrong bearer", "Authorization", "Bearer " + otherKey},
				{"wrong x-api-key", "x-api-key", otherKey},
				{"owner key under another scheme", "Authorization", "Basic " + ownerKey},
			} {
				req := httptest.NewRequest(m, target, strings.NewReader(`{"content":"x"}`))
				req.Host = "127.0.0.1:3001"
				req.Header.Set("Content-Type", "application/json")
				if tc.header != "" {
					req.Header.Set(tc.header, tc.value)
				}
				w := httptest.NewRecorder()
				s.Handler().ServeHTTP(w, req)
				if w.Code != http.StatusUnauthorized {
					t.Errorf("%s %s with %s = %d, want 401", m, rt.path, tc.name, w.Code)
					continue
				}
				errorOf(t, w)
				if w.Header().Get("WWW-Authenticate") == "" {
					t.Errorf("%s %s: 401 without WWW-Authenticate", m, rt.path)
				}
			}
		}
	}
	if owner < 20 || pub != 8 { // health, openapi, announce, join, state anchor, verify, chain rpc (POST, OPTIONS)
		t.Fatalf("walked %d owner and %d public operations; the route table looks wrong", owner, pub)
	}
	// The public ones, with their answers.
	if w := serve(s, "GET", "/health", "", nil); w.Code != 200 {
		t.Errorf("GET /health = %d", w.Code)
	}
	if w := serve(s, "GET", OpenAPIPath, "", nil); w.Code != 200 {
		t.Errorf("GET %s = %d", OpenAPIPath, w.Code)
	}
	if w := serve(s, "POST", "/v1/instances/announce", "", strings.NewReader("{")); w.Code != 400 {
		t.Errorf("POST announce with a broken body = %d, want 400", w.Code)
	}
	// /metrics is owner-only and answers the owner.
	if w := serve(s, "GET", "/metrics", ownerKey, nil); w.Code != 200 || !strings.Contains(w.Body.String(), "crow_http_requests_total") {
		t.Errorf("GET /metrics with the key = %d", w.Code)
	}
}

func TestUnmatchedAnswersJSON(t *testing.T) {
	s := bareServer(t)
	for _, tc := range []struct {
		method, path string
		code         int
		allow        string
	}{
		{"PUT", "/v1/memories/list", 405, "GET, HEAD"},
		{"POST", "/health", 405, "GET, HEAD"},
		{"POST", "/v1/memory/abc", 405, "GET, HEAD, PATCH, DELETE"},
		{"GET", "/v1/memory", 405, "POST"},
		{"PATCH", "/v1/tables/notes/rows/r1", 405, "GET, HEAD, PUT, DELETE"},
		{"GET", "/v1/nothing-here", 404, ""},
		{"GET", "/", 404, ""},
	} {
		w := serve(s, tc.method, tc.path, ownerKey, nil)
		if w.Code != tc.code {
			t.Errorf("%s %s = %d, want %d", tc.method, tc.path, w.Code, tc.code)
			continue
		}
		msg := errorOf(t, w)
		if got := w.Header().Get("Allow"); got != tc.allow {
			t.Errorf("%s %s: Allow %q, want %q", tc.method, tc.path, got, tc.allow)
		}
		if tc.code == 405 && !strings.Contains(msg, tc.allow) {
			t.Errorf("%s %s: message %q does not name the allowed methods", tc.method, tc.path, msg)
		}
	}
}

func TestQueryParametersValidated(t *testing.T) {
	s := bareServer(t)
	for _, tc := range []struct {
		target string
		want   string
	}{
		{"/v1/memories/list?colour=red", `unknown query parameter "colour"`},
		{"/v1/memories/list?limit=0", "limit must be a whole number from 1 to 1000"},
		{"/v1/memories/list?limit=ten", "limit must be a whole number from 1 to 1000"},
		{"/v1/memories/list?limit=5&limit=6", "given 2 times"},
		{"/v1/memories/list?min_importance=11", "min_importance must be a whole number from 1 to 10"},
		{"/v1/memories/list?order=sideways", "order must be newest or oldest"},
		{"/v1/memories/search?q=x&cursor=abc", `unknown query parameter "cursor"`},
		{"/v1/sync/conflicts?unresolved=maybe", "unresolved must be true or false"},
		{"/v1/tables/notes/rows?order=newest", "order must be asc or desc"},
		{"/v1/tables/notes/rows?limit=1001", "limit must be a whole number"},
		{"/v1/instances?x=1", "takes no query parameters"},
		{"/v1/memories/list?%zz", "malformed query string"},
		{"/health?challenge=ab&challenge=cd", "given 2 times"},
	} {
		w := serve(s, "GET", tc.target, ownerKey, nil)
		if w.Code != 400 {
			t.Errorf("GET %s = %d, want 400", tc.target, w.Code)
			continue
		}
		if msg := errorOf(t, w); !strings.Contains(msg, tc.want) {
			t.Errorf("GET %s: %q does not say %q", tc.target, msg, tc.want)
		}
	}
}

// TestOpenAPIMatchesTheMux checks the document against the route table both
// ways, and each documented operation against the mux itself: the pattern
// the mux picks for it is the route's own (not the catch-all, not another).
func TestOpenAPIMatchesTheMux(t *testing.T) {
	s := bareServer(t)
	w := serve(s, "GET", OpenAPIPath, "", nil)
	if w.Code != 200 {
		t.Fatalf("GET %s = %d", OpenAPIPath, w.Code)
	}
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	opOf := func(path, method string) map[string]any {
		var m map[string]any
		if err := json.Unmarshal(doc.Paths[path][method], &m); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		return m
	}
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi = %q", doc.OpenAPI)
	}
	type op struct{ method, path string }
	inTable := map[op]route{}
	for _, rt := range s.routes {
		for _, m := range rt.methods() {
			inTable[op{m, rt.path}] = rt
		}
	}
	inDoc := map[op]bool{}
	for p, item := range doc.Paths {
		for m := range item {
			if m == "parameters" {
				continue
			}
			inDoc[op{strings.ToUpper(m), p}] = true
		}
	}
	for o := range inTable {
		if !inDoc[o] {
			t.Errorf("route %s %s is missing from the OpenAPI document", o.method, o.path)
		}
	}
	for o := range inDoc {
		rt, ok := inTable[o]
		if !ok {
			t.Errorf("the OpenAPI document lists %s %s, which no route serves", o.method, o.path)
			continue
		}
		req := httptest.NewRequest(o.method, concretePath(o.path), nil)
		if _, pattern := s.mux.Handler(req); pattern != rt.pattern() {
			t.Errorf("the mux serves documented %s %s with pattern %q, want %q", o.method, o.path, pattern, rt.pattern())
		}
	}
	// The spec's surface (SPEC §8) that exists today is all there.
	for _, want := range []string{"/health", "/metrics", "/mcp", "/router/mcp", "/v1/instances/announce", "/v1/memory",
		"/v1/memories/search", "/v1/tables/{table}/rows", "/v1/apikey/rotate", OpenAPIPath} {
		if doc.Paths[want] == nil {
			t.Errorf("document lacks %s", want)
		}
	}
	// Operations: public ones say so, owner ones document 401.
	for o, rt := range inTable {
		opDoc := opOf(o.path, strings.ToLower(o.method))
		resp, _ := opDoc["responses"].(map[string]any)
		sec, hasSec := opDoc["security"]
		switch rt.access {
		case public:
			if !hasSec || len(sec.([]any)) != 0 {
				t.Errorf("public %s %s is not documented as needing no key", o.method, o.path)
			}
		case ownerOnly, ownerOrPeer:
			if hasSec || resp["401"] == nil {
				t.Errorf("owner %s %s: security %v, 401 documented %v", o.method, o.path, sec, resp["401"] != nil)
			}
		}
		if rt.op != nil && rt.op.Input().Body && opDoc["requestBody"] == nil {
			t.Errorf("%s %s: request body not documented", o.method, o.path)
		}
		var names []string
		if rt.op != nil { // an operation of app's table: its input's query fields
			for _, f := range rt.op.Input().Fields {
				if f.In == app.InQuery {
					names = append(names, f.RESTName)
				}
			}
		}
		var docNames []string
		params, _ := opDoc["parameters"].([]any)
		for _, p := range params {
			if pm := p.(map[string]any); pm["in"] == "query" {
				docNames = append(docNames, pm["name"].(string))
			}
		}
		if !slices.Equal(names, docNames) {
			t.Errorf("%s %s: documented query parameters %v, route takes %v", o.method, o.path, docNames, names)
		}
	}
}

func TestBodiesAreCapped(t *testing.T) {
	s := bareServer(t)
	big := `{"content":"` + strings.Repeat("a", MaxBodyBytes) + `"}`
	// With a Content-Length (refused before reading) and without one (chunked:
	// refused when the body is read past the cap): 413 both times.
	for _, length := range []int64{int64(len(big)), -1} {
		req := httptest.NewRequest("POST", "/v1/memory", strings.NewReader(big))
		req.Host = "127.0.0.1:3001"
		req.ContentLength = length
		req.Header.Set("Authorization", "Bearer "+ownerKey)
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, req)
		if w.Code != http.StatusRequestEntityTooLarge || !strings.Contains(errorOf(t, w), "larger than") {
			t.Fatalf("an oversized body (Content-Length %d) = %d %s", length, w.Code, w.Body.String())
		}
	}
	// Every route has a cap: the wrapper installs one even where the handler
	// never decodes a body.
	for _, rt := range s.routes {
		if rt.maxBody != 0 && rt.maxBody != MaxMCPBodyBytes && (rt.op == nil || rt.maxBody != rt.op.Info().MaxBody) {
			t.Errorf("%s: unexpected body cap %d", rt.pattern(), rt.maxBody)
		}
	}
}

func TestAPIKeyRotation(t *testing.T) {
	var rotated int
	s := rotatingServer(func() (string, error) {
		rotated++
		return "the-new-key", nil
	})
	w := serve(s, "POST", "/v1/apikey/rotate", ownerKey, nil)
	if w.Code != 200 || rotated != 1 {
		t.Fatalf("rotate = %d %s (rotated %d times)", w.Code, w.Body.String(), rotated)
	}
	var resp app.APIKey
	if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil || resp.APIKey != "the-new-key" {
		t.Fatalf("rotate answered %s", w.Body.String())
	}
	if w := serve(s, "GET", "/metrics", ownerKey, nil); w.Code != 401 {
		t.Errorf("the old key still works after rotation: %d", w.Code)
	}
	if w := serve(s, "GET", "/metrics", "the-new-key", nil); w.Code != 200 {
		t.Errorf("the new key does not work: %d", w.Code)
	}
	if w := serve(s, "POST", "/v1/apikey/rotate", ownerKey, nil); w.Code != 401 || rotated != 1 {
		t.Errorf("the old key could rotate again: %d", w.Code)
	}
}

// TestConcurrentRotationsAgreeWithDisk: whatever the interleaving, the key the
// gateway accepts at the end is the one last written.
func TestConcurrentRotationsAgreeWithDisk(t *testing.T) {
	var mu sync.Mutex
	n, onDisk := 0, ownerKey
	s := rotatingServer(func() (string, error) {
		mu.Lock()
		defer mu.Unlock()
		n++
		onDisk = "key-" + strconv.Itoa(n)
		return onDisk, nil
	})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			mu.Lock()
			key := onDisk
			mu.Unlock()
			serve(s, "POST", "/v1/apikey/rotate", key, nil)
		})
	}
	wg.Wait()
	if !s.keys.Check(onDisk) {
		t.Fatalf("the gateway does not accept %q, the key on disk", onDisk)
	}
}

// A body of the wrong JSON type is refused in the client's terms, never
// with a Go type name.
func TestWrongBodyTypesNamedInJSONTerms(t *testing.T) {
	s := bareServer(t)
	for _, tc := range []struct {
		method, target, body, want string
	}{
		{"PUT", "/v1/tables/notes/rows/n1", `[1,2]`, "request body must be a JSON object, got a JSON array"},
		{"PUT", "/v1/tables/notes/rows/n1", `null`, "request body must be a JSON object, got null"},
		{"POST", "/v1/memory", `"text"`, "request body must be a JSON object, got a JSON string"},
		{"POST", "/v1/memory", `{"content":"x","importance":"high"}`, `field "importance" must be a whole number, got a JSON string`},
		{"POST", "/v1/memory", `{"content":"x","tags":"a,b"}`, `field "tags" must be a JSON array, got a JSON string`},
	} {
		w := serve(s, tc.method, tc.target, ownerKey, strings.NewReader(tc.body))
		if w.Code != 400 {
			t.Errorf("%s %s %s = %d, want 400", tc.method, tc.target, tc.body, w.Code)
			continue
		}
		if msg := errorOf(t, w); msg != tc.want {
			t.Errorf("%s %s %s: %q, want %q", tc.method, tc.target, tc.body, msg, tc.want)
		}
	}
}
