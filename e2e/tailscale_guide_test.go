package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/crow-sync/crow/app"
)

// guideBlock is one command block of docs/TAILSCALE.md: a fenced block
// whose info string is "sh guide:MACHINE" (run on that machine), with
// "retry" when its outcome is eventual (run again until it succeeds).
type guideBlock struct {
	machine string
	retry   bool
	lines   []string
	line    int // in the guide, for messages
}

var fence = regexp.MustCompile("^```(\\S*)\\s*(.*)$")

// readGuide returns the guide's marked blocks and every other sh block's
// lines.
func readGuide(t *testing.T, path string) (marked []guideBlock, other []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var cur *guideBlock
	in, isSh := false, false
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		m := fence.FindStringSubmatch(l)
		switch {
		case m != nil && !in:
			in, isSh = true, m[1] == "sh"
			if f := strings.Fields(m[2]); isSh && len(f) > 0 && strings.HasPrefix(f[0], "guide:") {
				cur = &guideBlock{machine: strings.TrimPrefix(f[0], "guide:"), retry: len(f) > 1 && f[1] == "retry", line: n}
			}
		case m != nil && in:
			if cur != nil {
				marked = append(marked, *cur)
			}
			in, cur = false, nil
		case in && cur != nil:
			cur.lines = append(cur.lines, l)
		case in && isSh:
			other = append(other, l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return marked, other
}

// TestTailscaleGuide follows docs/TAILSCALE.md on loopback with the real
// binary: every block marked for home or the laptop runs as written in
// bash (with `crow` on $PATH and the machine's CROW_HOME), the Tailscale
// addresses replaced by 127.0.0.1 and each machine's ports, LAPTOP_ID by
// the laptop's instance id; `crow serve &` starts the daemon through the
// harness on those ports. Every crow command of the other blocks (sudo,
// systemctl, tailscale serve: not run here) must name a command the
// binary has.
func TestTailscaleGuide(t *testing.T) {
	marked, other := readGuide(t, "../docs/TAILSCALE.md")
	if len(marked) < 6 {
		t.Fatalf("docs/TAILSCALE.md has %d marked blocks; the test follows its sh guide:MACHINE blocks", len(marked))
	}
	usage, _ := exec.Command(crowBin, "help").CombinedOutput()
	for _, l := range other {
		l = strings.ReplaceAll(strings.TrimPrefix(strings.TrimSpace(l), "sudo "), `"$(command -v crow)"`, "crow")
		if rest, ok := strings.CutPrefix(l, "crow "); ok {
			if sub := strings.Fields(rest)[0]; !regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(sub) + `\s`).Match(usage) {
				t.Errorf("the guide runs crow %s, which the binary does not have:\n%s", sub, usage)
			}
		}
	}

	work := t.TempDir()
	machines := map[string]*Daemon{"home": newDaemon(t, "home"), "laptop": newDaemon(t, "laptop")}
	addrs := map[string]string{"home": "100.64.0.1", "laptop": "100.64.0.2"}
	subst := func(s string) string {
		for name, ip := range addrs {
			s = strings.ReplaceAll(s, ip+":3001", fmt.Sprintf("127.0.0.1:%d", machines[name].gwPort))
		}
		for _, ip := range addrs {
			s = strings.ReplaceAll(s, ip, "127.0.0.1")
		}
		if strings.Contains(s, "LAPTOP_ID") {
			s = strings.ReplaceAll(s, "LAPTOP_ID", machines["laptop"].instanceID())
		}
		return s
	}
	run := func(d *Daemon, b guideBlock, script string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
		cmd.Dir = work
		cmd.Env = append(d.env(), "PATH="+filepath.Dir(crowBin)+":"+os.Getenv("PATH"))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	started := map[string]bool{}
	for _, b := range marked {
		d := machines[b.machine]
		if d == nil {
			t.Fatalf("guide line %d: a block for an unknown machine %q", b.line, b.machine)
		}
		var script []string
		flush := func() {
			if len(script) == 0 {
				return
			}
			text := subst(strings.Join(script, "\n"))
			script = nil
			deadline := time.Now().Add(60 * time.Second)
			for {
				out, err := run(d, b, text)
				// A retried block waits for an eventual outcome; crow verify
				// also reports a version still being anchored as pending.
				ok := err == nil && !(b.retry && strings.Contains(out, "pending"))
				if ok {
					t.Logf("%s (guide line %d):\n%s\n%s", b.machine, b.line, text, out)
					break
				}
				if !b.retry || time.Now().After(deadline) {
					t.Fatalf("%s: guide block at line %d failed: %v\n%s\noutput:\n%s", b.machine, b.line, err, text, out)
				}
				time.Sleep(500 * time.Millisecond)
			}
			// crow init wrote the API key, crow apikey rotate a new one.
			if key, err := os.ReadFile(filepath.Join(d.Home, "api-key")); err == nil && d.Key == "" {
				d.readKey()
			} else if err == nil {
				d.Key = strings.TrimSpace(string(key))
			}
		}
		for _, l := range b.lines {
			cmdPart, _, _ := strings.Cut(l, " #")
			if strings.TrimSpace(cmdPart) == "crow serve &" {
				flush()
				d.Start()
				started[b.machine] = true
				if b.machine == "laptop" {
					// "A few seconds later both list each other."
					Enrolled(t, machines["home"], d)
				}
				continue
			}
			script = append(script, l)
		}
		flush()
	}
	home, laptop := machines["home"], machines["laptop"]
	if !started["home"] || !started["laptop"] {
		t.Fatalf("the guide started %v", started)
	}

	// What the guide's steps must have done.
	for _, d := range []*Daemon{home, laptop} {
		shown := Must(d, app.ConfigShow, app.NoInput{})
		for _, s := range shown.Settings {
			if s.Key == "gateway_url" && (s.Source != "file" || s.Value != d.URL()) {
				t.Errorf("%s: gateway_url %+v, want %s from the file", d.Name, s, d.URL())
			}
			if s.Key == "listen" && s.Source != "flag" {
				t.Errorf("%s: listen %+v (the harness gives --listen)", d.Name, s)
			}
		}
	}
	if text, err := os.ReadFile(filepath.Join(home.Home, "config.toml")); err != nil || !strings.Contains(string(text), `listen = "tailscale"`) {
		t.Errorf("home's config.toml after the guide: %v\n%s", err, text)
	}
	page := Must(home, app.InstancesList, app.NoInput{})
	revoked := false
	for _, in := range page.Instances {
		if in.Name == "laptop" && in.Revoked() {
			revoked = true
		}
	}
	if !revoked {
		t.Errorf("home does not list the laptop as revoked: %+v", page.Instances)
	}
}
