package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/home"
)

// exitCode is the exit status of a finished CLI run (0 when err is nil).
func exitCode(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	if err == nil {
		return 0
	}
	if !errors.As(err, &ee) {
		t.Fatalf("running crow: %v", err)
	}
	return ee.ExitCode()
}

func settingsByKey(t *testing.T, out string) map[string]home.Setting {
	t.Helper()
	var list []home.Setting
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("config show --json: %v\n%s", err, out)
	}
	m := map[string]home.Setting{}
	for _, s := range list {
		m[s.Key] = s
	}
	return m
}

// TestConfigShowAndSet: crow config show computes the configuration
// locally without a daemon and says so, asks the daemon while it runs (its
// flags show as source flag); crow config set writes config.toml (source
// file from then on), refuses unknown keys (exit 2) and bad values (exit 1)
// without touching the file, and unset brings the default back.
func TestConfigShowAndSet(t *testing.T) {
	d := NewDaemon(t, "home", nil)
	cfgFile := filepath.Join(d.Home, "config.toml")

	out := d.MustCLI("config", "show")
	if !strings.Contains(out, "no daemon is running") || !strings.Contains(out, "listen") {
		t.Errorf("config show without a daemon:\n%s", out)
	}
	gw := fmt.Sprintf("http://127.0.0.1:%d", d.gwPort)
	out = d.MustCLI("config", "set", "gateway_url", gw)
	if !strings.Contains(out, "gateway_url = "+gw) {
		t.Errorf("config set: %s", out)
	}
	d.MustCLI("config", "set", "chain.replace_after", "45s")
	d.MustCLI("config", "set", "min_free_mb", "-1")
	before, err := os.ReadFile(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"config", "set", "gateway", "x"}, 2, `unknown config key "gateway"`},
		{[]string{"config", "set", "chain.replace_after", "30"}, 1, "not a duration"},
		{[]string{"config", "set", "chain.max_fee_gwei", "-1"}, 1, "must be positive"},
		{[]string{"config", "set", "listen", "localhost"}, 1, "HOST:PORT"},
		{[]string{"config", "set", "chain.checkpoint.interval", "2h"}, 1, "rpc_url is not"},
		{[]string{"config", "set", "listen"}, 2, "usage"},
		{[]string{"config", "frobnicate"}, 2, "unknown config command"},
	} {
		o, e, err := d.CLI(c.args...)
		if got := exitCode(t, err); got != c.code || !strings.Contains(e, c.msg) || strings.Count(strings.TrimSpace(e), "\n") > 0 {
			t.Errorf("crow %s: exit %d, stderr %q, stdout %q; want exit %d and a one-line %q", strings.Join(c.args, " "), got, e, o, c.code, c.msg)
		}
	}
	if after, _ := os.ReadFile(cfgFile); !bytes.Equal(after, before) {
		t.Errorf("refused sets changed config.toml:\n%s", after)
	}

	// A bad tailscale port is refused before any address is looked up
	// (nothing is bound).
	if o, e, err := d.CLI("serve", "--listen", "tailscale:http"); exitCode(t, err) == 0 || !strings.Contains(e, "tailscale:PORT") {
		t.Errorf("serve --listen tailscale:http: %v\n%s%s", err, o, e)
	}

	m := settingsByKey(t, d.MustCLI("config", "show", "--json"))
	for k, want := range map[string]home.Source{"gateway_url": home.SourceFile, "chain.replace_after": home.SourceFile,
		"log_level": home.SourceEnv, "listen": home.SourceDefault} {
		if m[k].Source != want {
			t.Errorf("locally, %s: %+v, want source %s", k, m[k], want)
		}
	}

	d.Start("--log-level", "debug")
	m = settingsByKey(t, d.MustCLI("config", "show", "--json"))
	for k, want := range map[string]struct {
		value  string
		source home.Source
	}{
		"listen":              {fmt.Sprintf("127.0.0.1:%d", d.gwPort), home.SourceFlag},
		"sync_listen":         {fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", d.syncPort), home.SourceFlag},
		"log_level":           {"debug", home.SourceFlag},
		"gateway_url":         {gw, home.SourceFile},
		"chain.replace_after": {"45s", home.SourceFile},
		"min_free_mb":         {"-1", home.SourceFile},
		"chain.confirmations": {"0", home.SourceDefault},
	} {
		if got := m[k]; got.Value != want.value || got.Source != want.source {
			t.Errorf("daemon's %s: %+v, want %s from %s", k, got, want.value, want.source)
		}
	}
	text := d.MustCLI("config", "show")
	if strings.Contains(text, "no daemon") || !strings.Contains(text, "log_level") || !strings.Contains(text, "flag") {
		t.Errorf("config show with a daemon:\n%s", text)
	}
	// The same through the typed client; owner-only.
	shown := Must(d, app.ConfigShow, app.NoInput{})
	if shown.File != filepath.Join(d.Home, "config.toml") || len(shown.Settings) != len(home.ConfigKeys()) {
		t.Errorf("GET /v1/config: %+v", shown)
	}
	if status, _ := d.RawJSON("", "GET", "/v1/config", ""); status != 401 {
		t.Errorf("GET /v1/config without the key: %d, want 401", status)
	}
	out = d.MustCLI("config", "set", "chain.confirmations", "2")
	if !strings.Contains(out, "restart the daemon") {
		t.Errorf("config set while running: %s", out)
	}
	d.Stop()
	d.Start()
	m = settingsByKey(t, d.MustCLI("config", "show", "--json"))
	if m["chain.confirmations"].Value != "2" || m["chain.confirmations"].Source != home.SourceFile {
		t.Errorf("after the restart: %+v", m["chain.confirmations"])
	}
	d.Stop()
	d.MustCLI("config", "unset", "chain.confirmations")
	d.MustCLI("config", "set", "min_free_mb", "")
	m = settingsByKey(t, d.MustCLI("config", "show", "--json"))
	if m["chain.confirmations"].Source != home.SourceDefault || m["min_free_mb"].Source != home.SourceDefault || m["gateway_url"].Source != home.SourceFile {
		t.Errorf("after unset: %+v %+v %+v", m["chain.confirmations"], m["min_free_mb"], m["gateway_url"])
	}
}

// TestServiceInstall: --dry-run prints the unit for this binary and data
// directory and writes nothing; --user writes it under
// ~/.config/systemd/user (systemd-analyze verify accepts it when the tool
// is installed; package service's test requires it in CI) and prints the
// systemctl commands without running them.
func TestServiceInstall(t *testing.T) {
	d := NewDaemon(t, "home", nil)
	fakeHome := t.TempDir()
	d.Env = nil
	out := d.MustCLI("service", "install", "--dry-run")
	bin, _ := filepath.EvalSymlinks(crowBin)
	for _, want := range []string{"# would write /etc/systemd/system/crow.service", "ExecStart=" + bin + " serve --home " + d.Home,
		"NoNewPrivileges=yes", "ProtectSystem=strict", "ReadWritePaths=" + d.Home, "WantedBy=multi-user.target"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat("/etc/systemd/system/crow.service"); err == nil {
		t.Log("note: /etc/systemd/system/crow.service exists on this machine (not written by this test)")
	}

	cmd := exec.Command(crowBin, "service", "install", "--user")
	cmd.Env = append(d.env(), "HOME="+fakeHome)
	o, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("service install --user: %v\n%s", err, o)
	}
	unit := filepath.Join(fakeHome, ".config", "systemd", "user", "crow.service")
	content, err := os.ReadFile(unit)
	if err != nil {
		t.Fatalf("unit not written: %v\n%s", err, o)
	}
	if !strings.Contains(string(o), "systemctl --user daemon-reload && systemctl --user enable --now crow") ||
		!strings.Contains(string(content), "WantedBy=default.target") {
		t.Errorf("install --user printed:\n%s\nunit:\n%s", o, content)
	}
	if tool, err := exec.LookPath("systemd-analyze"); err == nil {
		if vo, err := exec.Command(tool, "verify", unit).CombinedOutput(); strings.Contains(string(vo), unit) || err != nil && len(vo) == 0 {
			t.Errorf("systemd-analyze verify: %v\n%s", err, vo)
		}
	}
}

// TestServeUnderJournald: with JOURNAL_STREAM naming its stderr (as systemd
// sets it for StandardError=journal), crow serve leaves the timestamps to
// the journal; elsewhere its lines carry time=.
func TestServeUnderJournald(t *testing.T) {
	d := NewDaemon(t, "home", nil)
	logf, err := os.Create(filepath.Join(t.TempDir(), "journal"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	st, err := logf.Stat()
	if err != nil {
		t.Fatal(err)
	}
	sys := st.Sys().(*syscall.Stat_t)
	cmd := exec.Command(crowBin, "serve", "--listen", fmt.Sprintf("127.0.0.1:%d", d.gwPort),
		"--sync-listen", fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", d.syncPort))
	cmd.Env = append(d.env(), fmt.Sprintf("JOURNAL_STREAM=%d:%d", sys.Dev, sys.Ino))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	Eventually(t, 30*time.Second, "the gateway", func() bool {
		_, err := os.Stat(filepath.Join(d.Home, "gateway.addr"))
		return err == nil
	})
	_ = cmd.Process.Signal(syscall.SIGTERM)
	werr := cmd.Wait()
	text, _ := os.ReadFile(logf.Name())
	if werr != nil {
		t.Errorf("crow serve: %v; its output:\n%s", werr, text)
	}
	if !strings.Contains(string(text), "level=INFO") || strings.Contains(string(text), "time=") {
		t.Errorf("under journald the lines have no time= but a level:\n%s", text)
	}
	// Not the journal's stream: timestamps kept.
	d.Start()
	d.Stop()
	if !strings.Contains(d.Log(), "time=") {
		t.Errorf("without the journal the lines have time=:\n%s", d.Log())
	}
}
