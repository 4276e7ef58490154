package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/client"
)

// readKey returns the key in d's api-key file, checking its mode.
func readKey(t *testing.T, d *Daemon) string {
	t.Helper()
	p := filepath.Join(d.Home, "api-key")
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("api-key has mode %v after rotation, want 0600", st.Mode().Perm())
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// keyStatus reports the status an owner call with key gets.
func keyStatus(d *Daemon, key string) int {
	if _, err := CallKey(d, key, app.InstancesList, app.NoInput{}); err != nil {
		return client.StatusOf(err)
	}
	return 200
}

// TestAPIKeyRotate rotates the owner key through the CLI: through the running
// daemon (the old key is refused at once), with --json and --show, with no
// daemon running, and with a stale gateway.addr left by kill -9.
func TestAPIKeyRotate(t *testing.T) {
	d := NewDaemon(t, "home", nil)
	d.Start()
	first := d.Key

	out := d.MustCLI("apikey", "rotate")
	second := readKey(t, d)
	if second == first || second == "" {
		t.Fatalf("api-key did not change: %q", second)
	}
	if strings.Contains(out, second) || !strings.Contains(out, filepath.Join(d.Home, "api-key")) {
		t.Errorf("crow apikey rotate printed %q: it must say where the key is, not print it", out)
	}
	if st := keyStatus(d, first); st != 401 {
		t.Errorf("the old key answered %d after rotation, want 401", st)
	}
	if st := keyStatus(d, second); st != 200 {
		t.Errorf("the new key answered %d, want 200", st)
	}
	d.Key = second

	var res struct {
		APIKey  string `json:"api_key"`
		KeyFile string `json:"key_file"`
		Via     string `json:"via"`
	}
	if err := json.Unmarshal([]byte(d.MustCLI("apikey", "rotate", "--json")), &res); err != nil {
		t.Fatal(err)
	}
	third := readKey(t, d)
	if res.APIKey != third || res.Via != "daemon" || res.KeyFile != filepath.Join(d.Home, "api-key") {
		t.Errorf("--json printed %+v; the file holds %q", res, third)
	}
	if keyStatus(d, second) != 401 || keyStatus(d, third) != 200 {
		t.Errorf("after the second rotation: old %d, new %d", keyStatus(d, second), keyStatus(d, third))
	}
	shown := strings.TrimSpace(d.MustCLI("apikey", "rotate", "--show"))
	if shown != readKey(t, d) || keyStatus(d, shown) != 200 || keyStatus(d, third) != 401 {
		t.Errorf("--show printed %q; file %q", shown, readKey(t, d))
	}
	d.Key = shown
	// The CLI keeps working: it reads the new key from the file.
	d.MustCLI("instance", "list")

	// No daemon: the files are rotated directly and the next start uses them.
	d.Stop()
	out = d.MustCLI("apikey", "rotate")
	if !strings.Contains(out, "no daemon") {
		t.Errorf("rotation without a daemon printed %q", out)
	}
	offline := readKey(t, d)
	d.Key = offline
	d.Start()
	if keyStatus(d, offline) != 200 || keyStatus(d, shown) != 401 {
		t.Errorf("after an offline rotation and a restart: new %d, old %d", keyStatus(d, offline), keyStatus(d, shown))
	}

	// kill -9 leaves gateway.addr behind; nobody listens, so the CLI rotates the files.
	d.Kill()
	if _, err := os.Stat(filepath.Join(d.Home, "gateway.addr")); err != nil {
		t.Fatalf("kill -9 left no gateway.addr (%v): the daemon cannot have removed it", err)
	}
	var stale struct{ Via string }
	if err := json.Unmarshal([]byte(d.MustCLI("apikey", "rotate", "--json")), &stale); err != nil || stale.Via != "files" {
		t.Errorf("rotation with a stale gateway.addr: via %q (%v)", stale.Via, err)
	}
	d.Key = readKey(t, d)
	d.Start()
	if keyStatus(d, d.Key) != 200 || keyStatus(d, offline) != 401 {
		t.Errorf("after the stale-address rotation: new %d, old %d", keyStatus(d, d.Key), keyStatus(d, offline))
	}
}

// metricFamilies are the families /metrics must carry (SPEC §8).
var metricFamilies = []string{
	"crow_store_writes_total",             // write rate
	"crow_store_write_commits_total",      // group commits
	"crow_feed_length",                    // per feed
	"crow_sync_peer_lag",                  // per peer
	"crow_apply_entries_total",            // apply rate
	"crow_sync_conflicts_unresolved",      // conflicts
	"crow_http_request_duration_seconds",  // HTTP latency
	"crow_mcp_tool_call_duration_seconds", // MCP tool latency
	"crow_sync_entries_received_total",
}

// TestMetricsAndOpenAPI scrapes a satellite that has replicated from home and
// checks every family; reads the public OpenAPI document.
func TestMetricsAndOpenAPI(t *testing.T) {
	home, sats := cluster(t, "sat")
	sat := sats[0]
	id := Must(home, app.MemoryCreate, app.MemoryCreateIn{Content: "metrics see this replicate"}).ID
	Eventually(t, syncTimeout, "the memory on the satellite", func() bool {
		_, err := Call(sat, app.MemoryGet, app.MemoryID{ID: id})
		return err == nil
	})

	if st, e := sat.RawJSON("", "GET", "/metrics", ""); st != 401 || e == nil || e.Msg == "" {
		t.Errorf("/metrics without a key = %d %v, want 401 with a JSON error", st, e)
	}
	var text string
	Eventually(t, syncTimeout, "every metric family on the satellite", func() bool {
		var st int
		st, text = sat.DoRaw("GET", "/metrics")
		if st != 200 {
			return false
		}
		for _, f := range metricFamilies {
			if !strings.Contains(text, "\n# TYPE "+f+" ") {
				return false
			}
		}
		return strings.Contains(text, `crow_feed_length{feed="`) && strings.Contains(text, `instance="home"`)
	})
	if !strings.Contains(text, `crow_sync_peer_lag{instance_id="`) || !strings.Contains(text, `peer="home"`) {
		t.Errorf("no per-peer lag for home in:\n%s", grepLines(text, "crow_sync_peer_lag"))
	}
	_, homeText := home.DoRaw("GET", "/metrics")
	if !strings.Contains(homeText, "crow_store_writes_total ") || strings.Contains(homeText, "crow_store_writes_total 0\n") {
		t.Errorf("home's write counter: %s", grepLines(homeText, "crow_store_writes_total"))
	}

	// The OpenAPI document is public and lists the whole surface.
	resp, err := http.Get("http://" + sat.Addr + "/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("GET /v1/openapi.json = %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var doc struct {
		OpenAPI string                     `json:"openapi"`
		Paths   map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/health", "/metrics", "/mcp", "/router/mcp", "/v1/instances/announce", "/v1/memory/{id}", "/v1/apikey/rotate"} {
		if doc.Paths[p] == nil {
			t.Errorf("the served document lacks %s", p)
		}
	}
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi = %q", doc.OpenAPI)
	}
}

// grepLines returns the lines of text that contain s.
func grepLines(text, s string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
