package chaos

import (
	"bytes"
	"context"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
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
	dir, err := os.MkdirTemp("", "crow-chaos-bin-")
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

// daemon is one crow instance run as a process with its own CROW_HOME and
// fixed loopback ports (kept across restarts, like a machine's).
type daemon struct {
	t        testing.TB
	name     string
	home     string
	key      string
	id       string // instance id, once started
	gwPort   int
	syncPort int
	api      *client.Client

	mu   sync.Mutex
	env  []string // extra environment of serve (guarded by mu)
	cmd  *exec.Cmd
	done chan struct{}
	log  *bytes.Buffer
	runs int
}

func newDaemon(t testing.TB, name string) *daemon {
	d := &daemon{t: t, name: name, home: filepath.Join(t.TempDir(), name), log: &bytes.Buffer{},
		gwPort: freePort(t), syncPort: freePort(t)}
	t.Cleanup(func() {
		d.stop()
		if t.Failed() {
			d.mu.Lock()
			n := 20000
			if strings.Contains(d.log.String(), "SIGQUIT: quit") {
				n = 400000 // a hung start's goroutine stacks (signal)
			}
			t.Logf("---- log of %s (last %d bytes) ----\n%s", d.name, n, tail(d.log.String(), n))
			d.mu.Unlock()
		}
	})
	return d
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func (d *daemon) baseEnv() []string {
	return append(os.Environ(), "CROW_HOME="+d.home, "CROW_PASSPHRASE=chaos-passphrase", "CROW_LOG_LEVEL=info")
}

// cli runs a crow command against the daemon's home and fails on an error.
func (d *daemon) cli(args ...string) string {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, crowBin, args...)
	cmd.Env = d.baseEnv()
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		d.t.Fatalf("%s: crow %s: %v\n%s%s", d.name, strings.Join(args, " "), err, o.String(), e.String())
	}
	return o.String()
}

func (d *daemon) readKey() {
	b, err := os.ReadFile(filepath.Join(d.home, "api-key"))
	if err != nil {
		d.t.Fatalf("%s: reading api-key: %v", d.name, err)
	}
	d.key = strings.TrimSpace(string(b))
	d.api = client.New(fmt.Sprintf("127.0.0.1:%d", d.gwPort), d.key)
}

func (d *daemon) setEnv(env ...string) {
	d.mu.Lock()
	d.env = env
	d.mu.Unlock()
}

// start runs crow serve and waits for /health.
func (d *daemon) start() {
	d.t.Helper()
	d.mu.Lock()
	if d.cmd != nil {
		d.mu.Unlock()
		d.t.Fatalf("%s already running", d.name)
	}
	os.Remove(filepath.Join(d.home, "gateway.addr"))
	args := []string{"serve", "--listen", fmt.Sprintf("127.0.0.1:%d", d.gwPort),
		"--sync-listen", fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", d.syncPort)}
	cmd := exec.Command(crowBin, args...)
	cmd.Env = append(d.baseEnv(), d.env...)
	d.runs++
	fmt.Fprintf(d.log, "==== start %d of %s %v %v\n", d.runs, d.name, args, d.env)
	w := &lockedWriter{mu: &d.mu, w: d.log}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		d.mu.Unlock()
		d.t.Fatalf("%s: starting crow serve: %v", d.name, err)
	}
	d.cmd = cmd
	d.done = make(chan struct{})
	done := d.done
	go func() { cmd.Wait(); close(done) }()
	d.mu.Unlock()

	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-done:
			d.t.Fatalf("%s: crow serve exited during start-up", d.name)
		default:
		}
		if resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/health", d.gwPort)); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("%s: gateway did not come up within 60s", d.name)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// logCount is how many times line occurs in d's log (all its runs).
func (d *daemon) logCount(line string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return bytes.Count(d.log.Bytes(), []byte(line))
}

func (d *daemon) running() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cmd != nil
}

// kill sends SIGKILL (kill -9) and waits for the process to end.
func (d *daemon) kill() { d.signal(syscall.SIGKILL) }

// stop sends SIGTERM and waits.
func (d *daemon) stop() { d.signal(syscall.SIGTERM) }

func (d *daemon) signal(sig syscall.Signal) {
	d.mu.Lock()
	cmd, done := d.cmd, d.done
	d.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		// SIGQUIT first: the Go runtime writes every goroutine's stack to the
		// daemon's log (printed when the test fails), which shows where it hung.
		_ = cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		d.t.Errorf("%s: did not exit within 60s of %v (goroutine stacks from SIGQUIT in its log)", d.name, sig)
	}
	d.mu.Lock()
	d.cmd = nil
	d.mu.Unlock()
}

// call runs op on d with the owner key.
func call[In, Out any](d *daemon, op *app.Def[In, Out], in In) (Out, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return client.Do(ctx, d.api, op, in)
}

// metrics returns d's /metrics text ("" when it does not answer).
func (d *daemon) metrics() string {
	req, _ := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d/metrics", d.gwPort), nil)
	req.Header.Set("Authorization", "Bearer "+d.key)
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return ""
	}
	return string(b)
}

var (
	usedPortsMu sync.Mutex
	usedPorts   = map[int]bool{}
)

// freePort returns a loopback port below the ephemeral range that was free
// a moment ago and was not handed out before in this process.
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
	t.Fatal("no free loopback port")
	return 0
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

// eventually polls cond until it holds or timeout passes.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
