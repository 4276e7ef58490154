package e2e

import (
	"path/filepath"
	"strings"
	"testing"
)

// Long commands draw progress bars only on a terminal: piped, their stdout
// and stderr hold no escape codes and no carriage returns.
func TestLongCommandsQuietWhenPiped(t *testing.T) {
	d := NewDaemon(t, "home", nil)
	d.Start()
	writeN(t, d, 20, "progress")
	dir := t.TempDir()
	export, archive := filepath.Join(dir, "m.jsonl"), filepath.Join(dir, "b.crowbak")
	check := func(who *Daemon, args ...string) {
		t.Helper()
		out, errOut, err := who.CLI(args...)
		if err != nil {
			t.Fatalf("crow %s: %v\n%s\n%s", strings.Join(args, " "), err, out, errOut)
		}
		for name, s := range map[string]string{"stdout": out, "stderr": errOut} {
			if strings.ContainsAny(s, "\x1b\r") {
				t.Fatalf("crow %s, piped, drew progress on %s: %q", strings.Join(args, " "), name, s)
			}
		}
	}
	check(d, "memory", "export", "--out", export)
	check(d, "memory", "import", export)
	check(d, "backup", "--out", archive)
	check(d, "audit")
	d.Stop()
	fresh := newDaemon(t, "restored")
	check(fresh, "restore", archive)
}
