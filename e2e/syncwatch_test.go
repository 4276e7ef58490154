package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// syncBuffer is a bytes.Buffer safe to read while a process writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// runningCLI is a long crow command; done is closed once it exited (err
// then holds its exit error).
type runningCLI struct {
	cmd         *exec.Cmd
	out, errOut *syncBuffer
	done        chan struct{}
	err         error
}

// startCLI runs a long crow command against d's home (stdout a pipe).
func startCLI(t *testing.T, d *Daemon, args ...string) *runningCLI {
	t.Helper()
	return startCLIEnv(t, d.env(), args...)
}

// startCLIEnv runs crow args in the background with environment env; the
// process is killed at cleanup if it still runs.
func startCLIEnv(t *testing.T, env []string, args ...string) *runningCLI {
	t.Helper()
	cmd := exec.Command(crowBin, args...)
	cmd.Env = env
	out, errOut := &syncBuffer{}, &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &runningCLI{cmd: cmd, out: out, errOut: errOut, done: make(chan struct{})}
	go func() { r.err = cmd.Wait(); close(r.done) }()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			cmd.Process.Kill()
			<-r.done
		}
	})
	return r
}

// interrupt sends SIGINT and expects a clean exit 0.
func interrupt(t *testing.T, r *runningCLI) {
	t.Helper()
	r.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-r.done:
		if r.err != nil {
			t.Fatalf("%v after SIGINT: %v\nstderr: %s", r.cmd.Args, r.err, r.errOut)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%v did not stop on SIGINT", r.cmd.Args)
	}
}

// TestSyncStatusWatchPipedAndNDJSON watches home while the laptop writes:
// piped, one plain block per interval without escape codes; with --json,
// one JSON object per line whose laptop feed shows a rate while it grows
// and then no lag.
func TestSyncStatusWatchPipedAndNDJSON(t *testing.T) {
	home, sats := cluster(t, "laptop")
	laptop := sats[0]
	lid := instanceID(laptop)
	Eventually(t, syncTimeout, "first convergence", func() bool { return converged(home, laptop) })

	plain := startCLI(t, home, "sync", "status", "--watch", "--interval", "200ms")
	nd := startCLI(t, home, "sync", "status", "--watch", "--interval", "200ms", "--json")
	plainOut, ndOut := plain.out, nd.out
	Eventually(t, syncTimeout, "a first frame of each", func() bool {
		return strings.Contains(plainOut.String(), "FEED") && strings.Contains(ndOut.String(), "\n")
	})
	writeN(t, laptop, 30, "watched")
	want := feedLengths(laptop)[lid]
	type frame struct {
		Feeds []struct {
			InstanceID string  `json:"instance_id"`
			Length     uint64  `json:"length"`
			Lag        uint64  `json:"lag"`
			Rate       float64 `json:"entries_per_second"`
		} `json:"feeds"`
		Peers []struct {
			InstanceID string `json:"instance_id"`
			Connected  bool   `json:"connected"`
		} `json:"peers"`
		Anchors *struct {
			Kind string `json:"kind"`
		} `json:"anchors"`
	}
	var sawRate, sawDone bool
	Eventually(t, syncTimeout, "the laptop's writes to show in the NDJSON frames", func() bool {
		lines := strings.Split(strings.TrimSpace(ndOut.String()), "\n")
		sawRate, sawDone = false, false
		for i, line := range lines {
			var f frame
			if err := json.Unmarshal([]byte(line), &f); err != nil {
				if i == len(lines)-1 {
					return false // a line being written
				}
				t.Fatalf("NDJSON line %d is not JSON: %v\n%s", i+1, err, line)
			}
			for _, fd := range f.Feeds {
				if fd.InstanceID != lid {
					continue
				}
				sawRate = sawRate || fd.Rate > 0
				sawDone = sawDone || (fd.Length >= want && fd.Lag == 0)
			}
		}
		return sawRate && sawDone
	})
	// The NDJSON frames can see the whole sync before the plain watcher's second
	// interval (both poll home's chain status too, which can wait on an anchoring round).
	Eventually(t, syncTimeout, "a second plain block", func() bool {
		return strings.Count(plainOut.String(), "crow sync status at ") >= 2
	})
	interrupt(t, nd)
	interrupt(t, plain)

	text := plainOut.String()
	if strings.ContainsRune(text, '\x1b') {
		t.Fatalf("piped --watch output holds escape codes:\n%q", text)
	}
	if n := strings.Count(text, "crow sync status at "); n < 2 {
		t.Fatalf("piped --watch printed %d blocks, want one per interval:\n%s", n, text)
	}
	for _, s := range []string{"ENTRIES/S", "ETA", "laptop", "connected", "RECV/S", "anchors"} {
		if !strings.Contains(text, s) {
			t.Fatalf("--watch output lacks %q:\n%s", s, text)
		}
	}

	// No daemon: a one-line error and a non-zero exit, at once.
	home.Stop()
	if out, errOut, err := home.CLI("sync", "status", "--watch"); err == nil || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
		t.Fatalf("--watch without a daemon: err=%v stdout=%q stderr=%q", err, out, errOut)
	}
	if _, errOut, err := home.CLI("sync", "status", "--watch", "--interval", "1ms"); exitCode(t, err) != 2 {
		t.Fatalf("--interval 1ms: err=%v stderr=%q, want a usage error (exit 2)", err, errOut)
	}
}

// TestSyncStatusWatchRedrawsOnATerminal runs --watch with stdout on a
// pseudo-terminal: it switches to the alternate screen, clears and redraws
// each interval, and on SIGINT leaves it, prints the last frame and exits 0.
func TestSyncStatusWatchRedrawsOnATerminal(t *testing.T) {
	home := NewDaemon(t, "home", nil)
	home.Start()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatalf("opening a pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	cmd := exec.Command(crowBin, "sync", "status", "--watch", "--interval", "200ms")
	cmd.Env = home.env()
	errOut := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = tty, errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	r := &runningCLI{cmd: cmd, errOut: errOut, done: make(chan struct{})}
	go func() { r.err = cmd.Wait(); close(r.done) }()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			cmd.Process.Kill()
			<-r.done
		}
	})
	screen := &syncBuffer{}
	copied := make(chan struct{})
	go func() { io.Copy(screen, ptmx); close(copied) }()
	const altScreen, clear, leave = "\x1b[?1049h", "\x1b[2J", "\x1b[?1049l"
	Eventually(t, syncTimeout, "three redraws on the terminal", func() bool {
		return strings.Contains(screen.String(), altScreen) && strings.Count(screen.String(), clear) >= 3
	})
	interrupt(t, r)
	Eventually(t, syncTimeout, "the terminal's output to drain", func() bool {
		s := screen.String()
		i := strings.LastIndex(s, leave)
		return i >= 0 && strings.Contains(s[i:], "anchors")
	})
	s := screen.String()
	if last := s[strings.LastIndex(s, leave)+len(leave):]; !strings.Contains(last, "crow sync status at ") || !strings.Contains(last, "FEED") {
		t.Fatalf("after Ctrl-C the last frame is not printed on the normal screen: %q", last)
	}
}
