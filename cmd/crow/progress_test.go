package main

import (
	"bytes"
	"os"
	"testing"
)

func TestCountBarQuietOffATerminal(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if bar := newCountBar(w, 10, "verifying", "versions", false); bar != nil {
		t.Fatal("a bar on a pipe")
	}
	if bar := newCountBar(&bytes.Buffer{}, 10, "verifying", "versions", false); bar != nil {
		t.Fatal("a bar on a buffer")
	}
}
