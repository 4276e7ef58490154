package e2e

import (
	"context"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// conformanceScenarios are the server scenarios of the official MCP
// conformance suite (npm @modelcontextprotocol/conformance) that apply to
// crow: no resources, prompts, sampling or elicitation are served.
var conformanceScenarios = []string{
	"server-initialize", "ping", "tools-list", "dns-rebinding-protection", "server-sse-multiple-streams",
}

// conformanceSuite returns the suite's index.js: $CROW_MCP_CONFORMANCE, set
// by .ci/run after tools/mcp-conformance/setup.sh installed it. Without node
// or the suite the test is skipped, and fails in CI.
func conformanceSuite(t *testing.T) (node, index string) {
	t.Helper()
	node, err := exec.LookPath("node")
	index = os.Getenv("CROW_MCP_CONFORMANCE")
	msg := ""
	switch {
	case err != nil:
		msg = "node is not on PATH"
	case index == "":
		msg = "CROW_MCP_CONFORMANCE is not set (the path of the suite's index.js that tools/mcp-conformance/setup.sh prints)"
	default:
		if _, err := os.Stat(index); err != nil {
			msg = "CROW_MCP_CONFORMANCE: " + err.Error()
		}
	}
	if msg != "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + ": the MCP conformance suite must run in CI (.ci/run installs nodejs and the suite)")
		}
		t.Skip(msg + "; run: export CROW_MCP_CONFORMANCE=$(tools/mcp-conformance/setup.sh DIR)")
	}
	return node, index
}

var conformanceResult = regexp.MustCompile(`Passed: (\d+)/(\d+), (\d+) failed`)

// TestMCPConformance runs the applicable server scenarios of the official
// suite against a real daemon, on /mcp and /router/mcp. The suite cannot send
// headers, so a loopback reverse proxy adds the owner key (and keeps the Host
// header the suite sends: dns-rebinding-protection depends on it).
func TestMCPConformance(t *testing.T) {
	node, index := conformanceSuite(t)
	d := NewDaemon(t, "home", nil)
	d.Start()
	target, _ := url.Parse(d.URL())
	proxy := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Host = r.In.Host
		r.Out.Header.Set("Authorization", "Bearer "+d.Key)
	}, FlushInterval: -1})
	t.Cleanup(proxy.Close)
	run := func(path, sc string) (out []byte, m [][]byte, err error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, index, "server", "--url", proxy.URL+path, "--scenario", sc)
		cmd.Dir = t.TempDir() // the suite writes its results below the working directory
		out, err = cmd.CombinedOutput()
		return out, conformanceResult.FindSubmatch(out), err
	}
	passed := func(m [][]byte, err error) bool {
		return err == nil && m != nil && string(m[1]) == string(m[2]) && string(m[3]) == "0"
	}
	for _, path := range []string{"/mcp", "/router/mcp"} {
		for _, sc := range conformanceScenarios {
			out, m, err := run(path, sc)
			if !passed(m, err) && strings.Contains(string(out), "terminated") {
				// The suite's HTTP client lost its connection mid-answer
				// (seen once in CI under load, never reproduced): run the
				// scenario once more; a real failure fails twice.
				t.Logf("%s %s: the suite's connection was terminated; running it again\n%s\nthe daemon's cut answers (which end closed first):\n%s",
					path, sc, out, cutAnswers(d.Log()))
				out, m, err = run(path, sc)
			}
			if !passed(m, err) {
				t.Errorf("%s %s: %v\n%s", path, sc, err, out)
				continue
			}
			n, _ := strconv.Atoi(string(m[1]))
			t.Logf("%s %s: %d/%d checks passed", path, sc, n, n)
		}
	}
}

// cutAnswers returns the daemon's log lines of answers its client did not
// wait for (the gateway logs client_gone and the write error with them).
func cutAnswers(log string) string {
	var cut []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "client_gone") {
			cut = append(cut, l)
		}
	}
	if len(cut) == 0 {
		return "(none: every answer was written whole)"
	}
	return strings.Join(cut, "\n")
}
