package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/client"
)

// crowBin is the crow binary built once by TestMain.
var crowBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "crow-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	crowBin = filepath.Join(dir, "crow")
	build := exec.Command("go", "build", "-o", crowBin, "../cmd/crow")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building crow:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Daemon is one crow instance run as a real process with its own CROW_HOME.
type Daemon struct {
	t    testing.TB
	Name string
	Home string

	mu   sync.Mutex
	cmd  *exec.Cmd
	log  *bytes.Buffer // every run's output, appended
	done chan struct{}
	Addr string // gateway host:port of the current run
	Key  string

	api             *client.Client // API's, for apiAddr and apiKey
	apiAddr, apiKey string

	gwPort, syncPort int      // kept across restarts, like a real machine's
	Env              []string // extra environment for serve
	Unset            []string // variables removed from every process's environment (e.g. CROW_PASSPHRASE)
}

// NewDaemon creates a data directory and runs `crow init` in it. With joinTo
// set (a running home), it enrolls the new instance as a satellite by
// invitation: `crow instance invite --name NAME` on home, then
// `crow init --name NAME --join INVITE` here. Its first start then completes
// the enrollment (see Enrolled).
func NewDaemon(t testing.TB, name string, joinTo *Daemon) *Daemon {
	t.Helper()
	d := newDaemon(t, name)
	if joinTo == nil {
		d.MustCLI("init", "--name", name)
	} else {
		d.MustCLI("init", "--name", name, "--join", Invite(joinTo, name))
	}
	d.readKey()
	return d
}

// ImportDaemon creates a satellite that holds the master seed, from an
// export of from's identity (`crow init --import`).
func ImportDaemon(t testing.TB, name string, from *Daemon) *Daemon {
	t.Helper()
	d := newDaemon(t, name)
	blob := filepath.Join(t.TempDir(), name+".blob")
	from.MustCLI("identity", "export", "--out", blob)
	d.MustCLI("init", "--name", name, "--import", blob)
	d.readKey()
	return d
}

// Invite runs `crow instance invite --name name` on home and returns the
// invite: the last line of its stdout (the scripting contract).
func Invite(home *Daemon, name string, extra ...string) string {
	home.t.Helper()
	out := strings.TrimSpace(home.MustCLI(append([]string{"instance", "invite", "--name", name}, extra...)...))
	lines := strings.Split(out, "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// Enrolled waits until home and s list each other (s registered home and
// home registered s back, after s's first start).
func Enrolled(t testing.TB, home, s *Daemon) {
	t.Helper()
	sid, hid := s.instanceID(), home.instanceID()
	Eventually(t, syncTimeout, s.Name+" to be enrolled with "+home.Name, func() bool {
		return lists(home, sid) && lists(s, hid)
	})
}

// lists reports whether d's registry lists instance id (not revoked).
func lists(d *Daemon, id string) bool {
	page, err := Call(d, app.InstancesList, app.NoInput{})
	if err != nil {
		return false
	}
	for _, in := range page.Instances {
		if in.ID == id && !in.Revoked() {
			return true
		}
	}
	return false
}

func newDaemon(t testing.TB, name string) *Daemon {
	return &Daemon{t: t, Name: name, Home: filepath.Join(t.TempDir(), name), log: &bytes.Buffer{},
		gwPort: freePort(t), syncPort: freePort(t)}
}

func (d *Daemon) readKey() {
	t, name := d.t, d.Name
	key, err := os.ReadFile(filepath.Join(d.Home, "api-key"))
	if err != nil {
		t.Fatalf("%s: reading api-key: %v", name, err)
	}
	d.Key = strings.TrimSpace(string(key))
	d.stopAtCleanup()
}

// stopAtCleanup stops the daemon when the test ends and dumps its log if the
// test failed.
func (d *Daemon) stopAtCleanup() {
	d.t.Cleanup(func() {
		d.Stop()
		if d.t.Failed() {
			d.mu.Lock()
			d.t.Logf("---- log of %s ----\n%s", d.Name, d.log.String())
			d.mu.Unlock()
		}
	})
}

// env is the environment every crow process of this daemon gets.
func (d *Daemon) env() []string {
	env := append(os.Environ(), "CROW_HOME="+d.Home, "CROW_PASSPHRASE=e2e-passphrase", "CROW_LOG_LEVEL=info")
	return withoutEnv(env, d.Unset...)
}

// withoutEnv drops the variables named keys from env.
func withoutEnv(env []string, keys ...string) []string {
	out := env[:0:0]
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(keys, k) {
			out = append(out, kv)
		}
	}
	return out
}

// CLI runs a crow command against this daemon's home.
func (d *Daemon) CLI(args ...string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, crowBin, args...)
	cmd.Env = d.env()
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// MustCLI runs a crow command and fails the test if it does not exit 0.
func (d *Daemon) MustCLI(args ...string) string {
	d.t.Helper()
	out, errOut, err := d.CLI(args...)
	if err != nil {
		d.t.Fatalf("%s: crow %s: %v\nstdout: %s\nstderr: %s", d.Name, strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// Start runs `crow serve` on loopback ports of its own and waits until the
// gateway answers /health.
func (d *Daemon) Start(extra ...string) {
	d.t.Helper()
	d.mu.Lock()
	if d.cmd != nil {
		d.mu.Unlock()
		d.t.Fatalf("%s already running", d.Name)
	}
	os.Remove(filepath.Join(d.Home, "gateway.addr"))
	args := append([]string{"serve", "--listen", fmt.Sprintf("127.0.0.1:%d", d.gwPort),
		"--sync-listen", fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", d.syncPort)}, extra...)
	cmd := exec.Command(crowBin, args...)
	cmd.Env = append(d.env(), d.Env...)
	fmt.Fprintf(d.log, "==== start %s %v\n", d.Name, args)
	w := &lockedWriter{mu: &d.mu, w: d.log}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		d.mu.Unlock()
		d.t.Fatalf("%s: starting crow serve: %v", d.Name, err)
	}
	d.cmd = cmd
	d.done = make(chan struct{})
	done := d.done
	go func() { cmd.Wait(); close(done) }()
	d.mu.Unlock()

	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-done:
			d.t.Fatalf("%s: crow serve exited during start-up", d.Name)
		default:
		}
		if b, err := os.ReadFile(filepath.Join(d.Home, "gateway.addr")); err == nil && len(b) > 0 {
			addr := strings.TrimSpace(string(b))
			if resp, err := http.Get("http://" + addr + "/health"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					d.Addr = addr
					return
				}
			}
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("%s: gateway did not come up within 30s", d.Name)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop sends SIGTERM and waits for a clean exit (failing the test on a dirty one).
func (d *Daemon) Stop() { d.signal(syscall.SIGTERM, true) }

// Kill sends SIGKILL (kill -9) and waits.
func (d *Daemon) Kill() { d.signal(syscall.SIGKILL, false) }

func (d *Daemon) signal(sig syscall.Signal, wantClean bool) {
	d.mu.Lock()
	cmd, done := d.cmd, d.done
	d.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		d.t.Errorf("%s: did not exit within 30s of %v", d.Name, sig)
	}
	if wantClean && cmd.ProcessState != nil && !cmd.ProcessState.Success() {
		d.t.Errorf("%s: unclean exit after %v: %v", d.Name, sig, cmd.ProcessState)
	}
	d.mu.Lock()
	d.cmd = nil
	d.mu.Unlock()
}

// Log returns everything the daemon printed so far.
func (d *Daemon) Log() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.log.String()
}

// API is the typed REST client of the daemon's current run, with its
// current owner key (tests change d.Key after a rotation).
func (d *Daemon) API() *client.Client {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.api == nil || d.apiAddr != d.Addr || d.apiKey != d.Key {
		d.api, d.apiAddr, d.apiKey = client.New(d.Addr, d.Key), d.Addr, d.Key
	}
	return d.api
}

// Call runs operation op on d through the typed client with the owner key.
func Call[In, Out any](d *Daemon, op *app.Def[In, Out], in In) (Out, error) {
	return CallKey(d, d.Key, op, in)
}

// CallKey is Call with an explicit key ("" sends none).
func CallKey[In, Out any](d *Daemon, key string, op *app.Def[In, Out], in In) (Out, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := d.API()
	if key != d.Key {
		c = c.WithKey(key)
	}
	return client.Do(ctx, c, op, in)
}

// Must is Call that fails the test on an error.
func Must[In, Out any](d *Daemon, op *app.Def[In, Out], in In) Out {
	d.t.Helper()
	out, err := Call(d, op, in)
	if err != nil {
		d.t.Fatalf("%s: %s: %v", d.Name, op.Info().Name, err)
	}
	return out
}

// RawJSON sends body (JSON text, or "" for none) as it is, for the tests of
// bad requests, with key ("" sends none). It returns the status and, for an
// error answer, the error the body holds ({"error": msg} decoded into a
// client.Error; Msg "" when the body is not that JSON document).
func (d *Daemon) RawJSON(key, method, path, body string) (int, *client.Error) {
	d.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, "http://"+d.Addr+path, r)
	if err != nil {
		d.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatalf("%s: %s %s: %v", d.Name, method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode < 300 {
		return resp.StatusCode, nil
	}
	e := &client.Error{Status: resp.StatusCode}
	if json.Unmarshal(raw, e) != nil {
		e.Msg = ""
	}
	return resp.StatusCode, e
}

// mustJSON is v as JSON text.
func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// URL is the daemon's gateway URL.
func (d *Daemon) URL() string { return fmt.Sprintf("http://127.0.0.1:%d", d.gwPort) }

// usedPorts are the ports freePort handed out in this test process: a daemon
// keeps its ports across restarts, so none may be handed out twice.
var (
	usedPortsMu sync.Mutex
	usedPorts   = map[int]bool{}
)

// freePort returns a loopback TCP port that was free a moment ago and that no
// other daemon of this test process was given. It is drawn below the kernel's
// ephemeral range (32768 and up by default), so an outgoing connection cannot
// take it while its daemon is stopped for a restart.
func freePort(t testing.TB) int {
	t.Helper()
	usedPortsMu.Lock()
	defer usedPortsMu.Unlock()
	for range 1000 {
		port := 20000 + mrand.IntN(12000)
		if usedPorts[port] {
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		ln.Close()
		usedPorts[port] = true
		return port
	}
	t.Fatal("no free loopback port below the ephemeral range after 1000 tries")
	return 0
}

// Eventually polls cond until it holds or the timeout passes.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// DoRaw sends an authenticated GET-like request and returns the body as text.
func (d *Daemon) DoRaw(method, path string) (int, string) {
	d.t.Helper()
	req, err := http.NewRequest(method, "http://"+d.Addr+path, nil)
	if err != nil {
		d.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+d.Key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatalf("%s: %s %s: %v", d.Name, method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// CopyDaemon makes a daemon from a copy of src's data directory (src must be
// stopped): the same identity and instance id on another "machine" — a clone.
func CopyDaemon(t testing.TB, src *Daemon, name string) *Daemon {
	t.Helper()
	d := &Daemon{t: t, Name: name, Home: filepath.Join(t.TempDir(), name), log: &bytes.Buffer{},
		gwPort: freePort(t), syncPort: freePort(t), Key: src.Key}
	if out, err := exec.Command("cp", "-a", src.Home, d.Home).CombinedOutput(); err != nil {
		t.Fatalf("copying %s: %v: %s", src.Home, err, out)
	}
	d.stopAtCleanup()
	return d
}

// ptr returns a pointer to v (the optional fields of the app inputs).
func ptr[T any](v T) *T { return &v }
