package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/client"
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
	m, err := Call(d, app.MemoryCreate, app.MemoryCreateIn{
		Content: "We chose badger as the embedded store for its group commit", Project: "crow",
		Category: "decision", Importance: ptr(8), Tags: []string{"storage"},
	})
	if err != nil {
		t.Fatalf("POST /v1/memory: %v", err)
	}
	id := m.ID
	if id == "" {
		t.Fatalf("no id in %+v", m)
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
	if _, err := Call(d, app.MemoryGet, app.MemoryID{ID: id}); err != nil {
		t.Fatalf("first daemon after a refused second serve: GET: %v", err)
	}
	d.MustCLI("memory", "get", id)

	d.Stop()
	d.Start()

	got, err := Call(d, app.MemoryGet, app.MemoryID{ID: id})
	if err != nil || got.Content != m.Content {
		t.Fatalf("after restart GET = %+v %v", got, err)
	}
	res, err := Call(d, app.MemorySearch, app.MemorySearchIn{Query: "badger"})
	if err != nil {
		t.Fatalf("search: %v", err)
	}
	if len(res.Results) != 1 || res.Results[0].ID != id {
		t.Fatalf("search after restart = %+v", res)
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

	if st, e := d.RawJSON("", "GET", "/v1/memories/list", ""); st != 401 || e == nil || e.Msg == "" {
		t.Errorf("no key: %d %v", st, e)
	}
	if st, e := d.RawJSON("wrong", "GET", "/v1/memories/list", ""); st != 401 || e == nil || e.Msg == "" {
		t.Errorf("wrong key: %d %v", st, e)
	}
	if _, err := CallKey(d, "", app.InstanceHealth, app.HealthIn{}); err != nil {
		t.Errorf("/health without key: %v, want 200", err)
	}

	bad := []struct {
		name string
		body string
	}{
		{"malformed", `{"content": "x"`},
		{"not an object", `[1,2]`},
		{"missing content", `{"project": "p"}`},
		{"empty content", `{"content": "   "}`},
		{"importance too high", `{"content": "x", "importance": 11}`},
		{"importance zero", `{"content": "x", "importance": -1}`},
		{"unknown field", `{"content": "x", "colour": "red"}`},
		{"oversized", mustJSON(t, app.MemoryCreateIn{Content: strings.Repeat("a", 2<<20)})},
		{"trailing data", `{"content":"x"} {"content":"y"}`},
	}
	for _, b := range bad {
		st, e := d.RawJSON(d.Key, "POST", "/v1/memory", b.body)
		if st < 400 || st >= 500 {
			t.Errorf("%s: status %d, want 4xx", b.name, st)
		}
		if e == nil || e.Msg == "" {
			t.Errorf("%s: no JSON error in the answer", b.name)
		}
	}
	// The typed client's own validation does not stand in for the daemon's:
	// the same bad values through it are refused by the daemon too.
	if _, err := Call(d, app.MemoryCreate, app.MemoryCreateIn{Content: "x", Importance: ptr(11)}); client.StatusOf(err) != 400 || client.KindOf(err) != app.KindInvalid {
		t.Errorf("importance 11 through the client: %v (status %d), want 400", err, client.StatusOf(err))
	}
	if page, err := Call(d, app.MemoryList, app.MemoryListIn{}); err != nil || len(page.Memories) != 0 {
		t.Fatalf("bad input wrote something: %+v %v", page, err)
	}
	if _, err := Call(d, app.MemoryGet, app.MemoryID{ID: "nope"}); client.StatusOf(err) != 404 || client.KindOf(err) != app.KindNotFound {
		t.Errorf("GET unknown memory: %v (status %d), want 404", err, client.StatusOf(err))
	}
	if _, err := Call(d, app.MemoryUpdate, app.MemoryUpdateIn{ID: "nope", Importance: ptr(3)}); client.StatusOf(err) != 404 {
		t.Errorf("PATCH unknown memory: %v (status %d), want 404", err, client.StatusOf(err))
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
			m, err := Call(d, app.MemoryCreate, app.MemoryCreateIn{Content: fmt.Sprintf("durable fact number %d zebra", i)})
			if err != nil {
				errs <- fmt.Sprintf("write %d: %v", i, err)
				ids <- ""
				return
			}
			ids <- m.ID
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
		if _, err := Call(d, app.MemoryGet, app.MemoryID{ID: id}); err != nil {
			t.Errorf("acknowledged memory %s lost after kill -9: %v", id, err)
		}
	}
	res, err := Call(d, app.MemorySearch, app.MemorySearchIn{Query: "zebra", Limit: 100})
	if err != nil {
		t.Fatalf("search: %v", err)
	}
	if len(res.Results) != len(got) {
		t.Fatalf("search after kill -9 found %d of %d memories", len(res.Results), len(got))
	}
}
