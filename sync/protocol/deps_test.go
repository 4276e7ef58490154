package protocol

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The machine is pure (see the package doc): it must link no network library.
// This asks the go command for the package's dependencies (tests excluded)
// and fails on libp2p, its multiformats helpers, or the standard net packages.
func TestLinksNoNetworkLibrary(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("go command not found: %v", err)
		}
		t.Skipf("go command not found: %v", err)
	}
	const pkg = "github.com/crow-sync/crow/sync/protocol"
	out, err := exec.Command(goBin, "list", "-deps", pkg).Output()
	if err != nil {
		var stderr string
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, stderr)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 || deps[len(deps)-1] != pkg {
		t.Fatalf("go list -deps printed no dependency list for %s: %q", pkg, out)
	}
	for _, d := range deps {
		if forbiddenDep(d) {
			t.Errorf("%s depends on %s; it must link no network library", pkg, d)
		}
	}
}

func forbiddenDep(path string) bool {
	for _, p := range []string{"github.com/libp2p/", "github.com/multiformats/", "net/"} {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return path == "net" || strings.Contains(path, "libp2p")
}

func TestForbiddenDep(t *testing.T) {
	for path, want := range map[string]bool{
		"github.com/libp2p/go-libp2p/core/peer": true,
		"github.com/multiformats/go-multiaddr":  true,
		"net":                                   true,
		"net/netip":                             true,
		"github.com/crow-sync/crow/sync/wire":   false,
		"encoding/binary":                       false,
		"network":                               false,
	} {
		if got := forbiddenDep(path); got != want {
			t.Errorf("forbiddenDep(%q) = %v, want %v", path, got, want)
		}
	}
}
