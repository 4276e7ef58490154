package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
)

func TestBarsQuietOffATerminal(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if bar := newCountBar(w, 10, "verifying", "versions", false); bar != nil {
		t.Fatal("a count bar on a pipe")
	}
	if bar := newCountBar(&bytes.Buffer{}, 10, "verifying", "versions", false); bar != nil {
		t.Fatal("a count bar on a buffer")
	}
	if bar := newBytesBar(w, -1, "backing up", false); bar != nil {
		t.Fatal("a bytes bar on a pipe")
	}
}

func TestBarsDrawnOnATerminal(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	defer tty.Close()
	if bar := newCountBar(tty, 10, "verifying", "versions", true); bar != nil {
		t.Fatal("a bar with --json")
	}
	if bar := newCountBar(tty, 0, "verifying", "versions", false); bar != nil {
		t.Fatal("a bar for nothing to count")
	}
	read := make(chan string)
	go func() {
		var b strings.Builder
		buf := make([]byte, 4096)
		for !strings.Contains(b.String(), "verifying") {
			n, err := ptmx.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		read <- b.String()
	}()
	count := newCountBar(tty, 10, "verifying", "versions", false)
	if count == nil {
		t.Fatal("no count bar on a terminal")
	}
	if err := count.Add(3); err != nil {
		t.Fatal(err)
	}
	if bytesBar := newBytesBar(tty, 4096, "restoring", false); bytesBar == nil {
		t.Fatal("no bytes bar on a terminal")
	}
	select {
	case out := <-read:
		if !strings.Contains(out, "verifying") {
			t.Fatalf("the terminal shows %q, want the bar's description", out)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the count bar drew nothing on the terminal")
	}
}
