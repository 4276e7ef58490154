package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// The JSON-schema package mcp-go imports compiles its metaschemas on first use, not at
// every start of crow (third_party/jsonschema/CROW.md): its package initialisation
// allocates kilobytes, not the 1.7 MB upstream's init does. This fails if go.mod's replace
// of it is dropped. It reads the Go runtime's own report (GODEBUG=inittrace=1) of this
// test binary, which links the same packages as crow.
func TestJSONSchemaInitIsLazy(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("running the test binary with no test: %v\n%s", err, stderr.String())
	}
	// init github.com/santhosh-tekuri/jsonschema/v6 @12 ms, 0.090 ms clock, 9576 bytes, 120 allocs
	const pkg = "github.com/santhosh-tekuri/jsonschema/v6"
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 9 || f[0] != "init" || f[1] != pkg {
			continue
		}
		n, err := strconv.Atoi(f[7])
		if err != nil || f[8] != "bytes," {
			t.Fatalf("unexpected inittrace line %q", sc.Text())
		}
		t.Logf("%s", sc.Text())
		if n > 100_000 {
			t.Fatalf("%s's init allocated %d bytes: it compiled its metaschemas at start-up (upstream's init, not third_party/jsonschema)", pkg, n)
		}
		return
	}
	t.Fatalf("no inittrace line for %s: is it still linked into crow?", pkg)
}
