package e2e

import (
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// `crow demo --serve` leaves the three daemons running after the story and
// prints their gateways, keys and web UI links; each answers /health and a
// UI page; SIGINT stops them (ports closed), removes the directory and
// exits 0.
func TestDemoServe(t *testing.T) {
	tmp := t.TempDir()
	r := startCLIEnv(t, append(os.Environ(), "TMPDIR="+tmp), "demo", "--serve")
	out, errOut := r.out, r.errOut
	Eventually(t, 4*time.Minute, "the demo to serve", func() bool {
		select {
		case <-r.done:
			t.Fatalf("crow demo --serve exited: %v\n%s\n%s", r.err, out, errOut)
		default:
		}
		return strings.Contains(out.String(), "Press Ctrl-C to stop")
	})
	text := out.String()
	gateways := regexp.MustCompile(`(?m)^  gateway  (http://127\.0\.0\.1:\d+)$`).FindAllStringSubmatch(text, -1)
	if len(gateways) != 3 {
		t.Fatalf("want 3 gateway URLs printed, got %v:\n%s", gateways, text)
	}
	for _, want := range []string{"API key  ", "/ui/instances", "memory list", "CROW_HOME="} {
		if strings.Count(text, want) < 3 {
			t.Fatalf("the serve block lacks %q for each daemon:\n%s", want, text)
		}
	}
	dirs, _ := os.ReadDir(tmp)
	if len(dirs) == 0 {
		t.Fatal("no demo directory while serving")
	}
	var addrs []string
	for _, g := range gateways {
		for _, path := range []string{"/health", "/ui/", "/ui/instances"} {
			resp, err := http.Get(g[1] + path)
			if err != nil {
				t.Fatalf("GET %s%s: %v", g[1], path, err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("GET %s%s = %d", g[1], path, resp.StatusCode)
			}
		}
		addrs = append(addrs, strings.TrimPrefix(g[1], "http://"))
	}

	r.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-r.done:
		if r.err != nil {
			t.Fatalf("crow demo --serve after SIGINT: %v\n%s\n%s", r.err, out, errOut)
		}
	case <-time.After(90 * time.Second):
		t.Fatalf("crow demo --serve did not stop on SIGINT:\n%s", out)
	}
	for _, a := range addrs {
		if c, err := net.DialTimeout("tcp", a, 2*time.Second); err == nil {
			c.Close()
			t.Fatalf("%s still accepts connections after the demo stopped", a)
		}
	}
	left, _ := os.ReadDir(tmp)
	for _, e := range left {
		if strings.HasPrefix(e.Name(), "crow-demo-") {
			t.Fatalf("the demo left %s behind", e.Name())
		}
	}
	if s := errOut.String(); strings.Contains(s, "did not stop") {
		t.Fatalf("a daemon did not stop cleanly:\n%s", s)
	}
}
