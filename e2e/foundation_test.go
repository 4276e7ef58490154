package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInitServeWriteRestartSearch is the foundation's acceptance path: init →
// serve → write → restart → the memory is still there and searchable.
func TestInitServeWriteRestartSearch(t *testing.T) {
	d := NewDaemon(t, "home", nil)

	for _, f := range []string{"identity", "api-key", "instance-id"} {
		st, err := os.Stat(filepath.Join(d.Home, f))
		if err != nil {
			t.Fatalf("%s missing after init: %v", f, err)
		}
		if f != "instance-id" && st.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", f, st.Mode().Perm())
		}
	}
	// init twice refuses and changes nothing.
	idBefore, _ := os.ReadFile(filepath.Join(d.Home, "identity"))
	keyBefore, _ := os.ReadFile(filepath.Join(d.Home, "api-key"))
	if _, _, err := d.CLI("init", "--name", "again"); err == nil {
		t.Fatal("second init succeeded")
	}
	idAfter, _ := os.ReadFile(filepath.Join(d.Home, "identity"))
	keyAfter, _ := os.ReadFile(filepath.Join(d.Home, "api-key"))
	if string(idBefore) != string(idAfter) || string(keyBefore) != string(keyAfter) {
		t.Fatal("second init changed the identity or the API key")
	}

	d.Start()
	status, m := d.Do("POST", "/v1/memory", map[string]any{
		"content": "We chose badger as the embedded store for its group commit", "project": "crow",
		"category": "decision", "importance": 8, "tags": []string{"storage"},
	})
	if status != 201 {
		t.Fatalf("POST /v1/memory = %d %v", status, m)
	}
	id, _ := m["id"].(string)
	if id == "" {
		t.Fatalf("no id in %v", m)
	}
	out := d.MustCLI("memory", "add", "The CLI can write memories too", "--project", "crow")
	if !strings.Contains(out, "crow") {
		t.Errorf("memory add printed %q", out)
	}

	// A second daemon on the same home is refused with a clear reason and
	// leaves the running one untouched (its gateway.addr included).
	_, errOut, err := d.CLI("serve", "--listen", fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		"--sync-listen", fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", freePort(t)))
	if err == nil || !strings.Contains(errOut, "another 'crow serve' is running") || !strings.Contains(errOut, d.URL()[len("http://"):]) {
		t.Fatalf("second serve on the same home: err=%v stderr=%q", err, errOut)
	}
	if status, _ := d.Do("GET", "/v1/memory/"+id, nil); status != 200 {
		t.Fatalf("first daemon after a refused second serve: GET = %d", status)
	}
	d.MustCLI("memory", "get", id)

	d.Stop()
	d.Start()

	status, got := d.Do("GET", "/v1/memory/"+id, nil)
	if status != 200 || got["content"] != m["content"] {
		t.Fatalf("after restart GET = %d %v", status, got)
	}
	status, res := d.Do("GET", "/v1/memories/search?q=badger", nil)
	if status != 200 {
		t.Fatalf("search = %d %v", status, res)
	}
	results, _ := res["results"].([]any)
	if len(results) != 1 || results[0].(map[string]any)["id"] != id {
		t.Fatalf("search after restart = %v", res)
	}
	out = d.MustCLI("memory", "search", "CLI")
	if !strings.Contains(out, "The CLI can write memories too") {
		t.Fatalf("crow memory search printed %q", out)
	}
	out = d.MustCLI("memory", "list", "--json")
	if !strings.Contains(out, id) {
		t.Fatalf("crow memory list --json lacks %s: %s", id, out)
	}
}

// TestBadInputAndAuth checks that bad requests get a 4xx JSON error and change nothing.
func TestBadInputAndAuth(t *testing.T) {
	d := NewDaemon(t, "home", nil)
	d.Start()

	if st, body := d.DoKey("", "GET", "/v1/memories/list", nil); st != 401 || body["error"] == nil {
		t.Errorf("no key: %d %v", st, body)
	}
	if st, body := d.DoKey("wrong", "GET", "/v1/memories/list", nil); st != 401 || body["error"] == nil {
		t.Errorf("wrong key: %d %v", st, body)
	}
	if st, _ := d.DoKey("", "GET", "/health", nil); st != 200 {
		t.Errorf("/health without key = %d, want 200", st)
	}

	bad := []struct {
		name string
		body any
	}{
		{"malformed", `{"content": "x"`},
		{"not an object", `[1,2]`},
		{"missing content", map[string]any{"project": "p"}},
		{"empty content", map[string]any{"content": "   "}},
		{"importance too high", map[string]any{"content": "x", "importance": 11}},
		{"importance zero", map[string]any{"content": "x", "importance": -1}},
		{"unknown field", map[string]any{"content": "x", "colour": "red"}},
		{"oversized", map[string]any{"content": strings.Repeat("a", 2<<20)}},
		{"trailing data", `{"content":"x"} {"content":"y"}`},
	}
	for _, b := range bad {
		st, body := d.Do("POST", "/v1/memory", b.body)
		if st < 400 || st >= 500 {
			t.Errorf("%s: status %d, want 4xx", b.name, st)
		}
		if msg, _ := body["error"].(string); msg == "" {
			t.Errorf("%s: no JSON error in %v", b.name, body)
		}
	}
	if st, body := d.Do("GET", "/v1/memories/list", nil); st != 200 || len(body["memories"].([]any)) != 0 {
		t.Fatalf("bad input wrote something: %d %v", st, body)
	}
	if st, _ := d.Do("GET", "/v1/memory/nope", nil); st != 404 {
		t.Errorf("GET unknown memory = %d, want 404", st)
	}
	if st, _ := d.Do("PATCH", "/v1/memory/nope", map[string]any{"importance": 3}); st != 404 {
		t.Errorf("PATCH unknown memory = %d, want 404", st)
	}
	if _, errOut, err := d.CLI("memory", "add", "x", "--importance", "12"); err == nil || !strings.Contains(errOut, "importance") {
		t.Errorf("CLI with bad importance: err=%v stderr=%q", err, errOut)
	}
}

// TestAcknowledgedWritesSurviveKill9: every write the gateway acknowledged is
// still there, and searchable, after kill -9 and a restart.
func TestAcknowledgedWritesSurviveKill9(t *testing.T) {
	d := NewDaemon(t, "home", nil)
	d.Start()
	const n = 40
	ids := make(chan string, n)
	errs := make(chan string, n)
	for i := 0; i < n; i++ {
		go func() {
			st, m := d.Do("POST", "/v1/memory", map[string]any{"content": fmt.Sprintf("durable fact number %d zebra", i)})
			if st != 201 {
				errs <- fmt.Sprintf("write %d: %d %v", i, st, m)
				ids <- ""
				return
			}
			ids <- m["id"].(string)
		}()
	}
	var got []string
	for i := 0; i < n; i++ {
		if id := <-ids; id != "" {
			got = append(got, id)
		}
	}
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	d.Kill()
	d.Start()
	for _, id := range got {
		if st, m := d.Do("GET", "/v1/memory/"+id, nil); st != 200 {
			t.Errorf("acknowledged memory %s lost after kill -9: %d %v", id, st, m)
		}
	}
	st, res := d.Do("GET", "/v1/memories/search?q=zebra&limit=100", nil)
	if st != 200 {
		t.Fatalf("search = %d %v", st, res)
	}
	if results, _ := res["results"].([]any); len(results) != len(got) {
		t.Fatalf("search after kill -9 found %d of %d memories", len(results), len(got))
	}
}
