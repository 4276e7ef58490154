package main

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// signalHelperEnv makes the test binary act as a process whose stop hangs.
const signalHelperEnv = "CROW_TEST_SIGNAL_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(signalHelperEnv) == "1" {
		ctx, stop := signalContext()
		defer stop()
		os.Stdout.WriteString("ready\n")
		<-ctx.Done()
		os.Stdout.WriteString("stopping\n")
		select {} // a stop that never ends
	}
	os.Exit(m.Run())
}

// The first SIGTERM begins a stop; a second SIGTERM is the same stop (a
// supervisor's, after the terminal's Ctrl-C reached the process too), but a
// SIGINT then ends a process whose stop hangs, instead of being swallowed.
func TestSecondInterruptEndsHungStop(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), signalHelperEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(out)
	expect := func(want string) {
		t.Helper()
		if !lines.Scan() || lines.Text() != want {
			t.Fatalf("helper printed %q (%v), want %q", lines.Text(), lines.Err(), want)
		}
	}
	expect("ready")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	expect("stopping")
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Both SIGTERMs were handled: the process is still there, stopping.
	select {
	case err := <-exited:
		t.Fatalf("a SIGTERM ended the process (%v); it should begin (or be) a stop", err)
	case <-time.After(300 * time.Millisecond):
	}
	// SIGINT's default action comes back on its own goroutine after the first
	// signal; send it until it lands (one that raced it is handled and ignored).
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(20 * time.Second)
	for {
		if err := cmd.Process.Signal(os.Interrupt); err != nil && !errors.Is(err, os.ErrProcessDone) {
			t.Fatal(err)
		}
		select {
		case err := <-exited:
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("helper exit: %v", err)
			}
			ws := ee.Sys().(syscall.WaitStatus)
			if !ws.Signaled() || ws.Signal() != syscall.SIGINT {
				t.Fatalf("helper ended by %v, want SIGINT's default action", ws)
			}
			return
		case <-tick.C:
		case <-deadline:
			t.Fatal("a second interrupt did not end a process whose stop hangs")
		}
	}
}
