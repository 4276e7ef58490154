package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crow-sync/crow/app"
)

// TestIdentityLock locks home's seed at rest, serves it with the passphrase
// from CROW_PASSPHRASE and from CROW_PASSPHRASE_FILE, refuses a wrong one and
// none (no terminal), keeps the daemon-only commands and `identity show`
// working without it, and unlocks back to the clear seed.
func TestIdentityLock(t *testing.T) {
	const pass = "lock-passphrase e2e"
	d := NewDaemon(t, "home", nil)
	idPath, pubPath := filepath.Join(d.Home, "identity"), filepath.Join(d.Home, "identity.pub")
	clearSeed, _ := os.ReadFile(idPath)
	showBefore := d.MustCLI("identity", "show", "--json")

	d.Start()
	m := Must(d, app.MemoryCreate, app.MemoryCreateIn{Content: "a memory written before the lock", Project: "crow"})

	// Refused while the daemon serves this home; nothing changes.
	_, errOut, err := run(d, []string{"CROW_PASSPHRASE=" + pass}, "identity", "lock")
	if err == nil || !strings.Contains(errOut, "stop the daemon first") || !strings.Contains(errOut, "another 'crow serve' is running") {
		t.Fatalf("lock while serving: err=%v stderr=%q", err, errOut)
	}
	if b, _ := os.ReadFile(idPath); !bytes.Equal(b, clearSeed) {
		t.Fatal("a refused lock changed the identity")
	}
	d.Stop()

	// No passphrase and no terminal: a clear error.
	_, errOut, err = run(d, []string{"-CROW_PASSPHRASE"}, "identity", "lock")
	if err == nil || !strings.Contains(errOut, "no passphrase") {
		t.Fatalf("lock without a passphrase: err=%v stderr=%q", err, errOut)
	}
	d.MustCLI("identity", "show") // still unlocked

	if _, errOut, err = run(d, []string{"CROW_PASSPHRASE=" + pass}, "identity", "lock"); err != nil {
		t.Fatalf("lock: %v: %s", err, errOut)
	}
	locked, _ := os.ReadFile(idPath)
	if !strings.HasPrefix(string(locked), "crow-identity-v1:") || bytes.Contains(locked, bytes.TrimSpace(clearSeed)) {
		t.Fatalf("locked identity = %q", locked)
	}
	pub, _ := os.ReadFile(pubPath)
	if bytes.Contains(pub, bytes.TrimSpace(clearSeed)) {
		t.Fatal("identity.pub holds the seed")
	}
	if _, errOut, err = run(d, []string{"CROW_PASSPHRASE=" + pass}, "identity", "lock"); err == nil || !strings.Contains(errOut, "already locked") {
		t.Fatalf("lock twice: err=%v stderr=%q", err, errOut)
	}

	// identity show needs no passphrase and prints the same public data.
	showOut, errOut, err := run(d, []string{"-CROW_PASSPHRASE"}, "identity", "show", "--json")
	if err != nil {
		t.Fatalf("identity show of a locked home: %v: %s", err, errOut)
	}
	var before, after map[string]string
	json.Unmarshal([]byte(showBefore), &before)
	json.Unmarshal([]byte(showOut), &after)
	if after["locked"] != "true" {
		t.Errorf("identity show of a locked home: %v", after)
	}
	delete(after, "locked")
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Errorf("identity show changed with the lock:\n%v\n%v", before, after)
	}

	// export needs the passphrase of the locked seed (then the export's own).
	if _, errOut, err := run(d, []string{"-CROW_PASSPHRASE"}, "identity", "export"); err == nil || !strings.Contains(errOut, "no passphrase was given") {
		t.Errorf("export of a locked home without a passphrase: err=%v stderr=%q", err, errOut)
	}
	blob := filepath.Join(t.TempDir(), "seed.blob")
	if _, errOut, err := run(d, []string{"CROW_PASSPHRASE=" + pass}, "identity", "export", "--out", blob); err != nil || !strings.Contains(errOut, "master key") {
		t.Errorf("export of a locked home: err=%v stderr=%q", err, errOut)
	}

	// A wrong passphrase, or none: serve exits non-zero, says why, changes nothing.
	snap := fileSnapshot(t, d.Home, "identity", "identity.pub", "instance-id", "instance.json", "api-key")
	for _, c := range []struct {
		name string
		env  []string
		want string
	}{
		{"wrong env", []string{"CROW_PASSPHRASE=not the passphrase"}, "wrong passphrase"},
		{"wrong file", []string{"-CROW_PASSPHRASE", "CROW_PASSPHRASE_FILE=" + writePass(t, "not the passphrase\n")}, "wrong passphrase"},
		{"none", []string{"-CROW_PASSPHRASE"}, "no passphrase was given"},
		{"missing file", []string{"-CROW_PASSPHRASE", "CROW_PASSPHRASE_FILE=" + filepath.Join(t.TempDir(), "nope")}, "CROW_PASSPHRASE_FILE"},
	} {
		out, errOut, err := run(d, c.env, "serve", "--listen", fmt.Sprintf("127.0.0.1:%d", freePort(t)),
			"--sync-listen", fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", freePort(t)))
		if err == nil || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") > 1 {
			t.Errorf("serve, %s: err=%v stderr=%q, want a short error with %q", c.name, err, errOut, c.want)
		}
		if strings.Contains(out+errOut, "not the passphrase") {
			t.Errorf("serve, %s: printed the passphrase", c.name)
		}
		if _, err := os.Stat(filepath.Join(d.Home, "gateway.addr")); err == nil {
			t.Errorf("serve, %s: left gateway.addr", c.name)
		}
	}
	if got := fileSnapshot(t, d.Home, "identity", "identity.pub", "instance-id", "instance.json", "api-key"); got != snap {
		t.Fatal("a refused serve changed the files")
	}

	// The right passphrase from a file (trailing newline, as systemd
	// credentials and editors leave it).
	d.Unset = []string{"CROW_PASSPHRASE"}
	d.Env = []string{"CROW_PASSPHRASE_FILE=" + writePass(t, pass+"\n")}
	d.Start()
	if got, err := Call(d, app.MemoryGet, app.MemoryID{ID: m.ID}); err != nil || got.Content != m.Content {
		t.Fatalf("locked home served from CROW_PASSPHRASE_FILE: GET = %+v %v", got, err)
	}
	// Commands that only talk to the daemon need no passphrase.
	if out := d.MustCLI("memory", "list", "--json"); !strings.Contains(out, m.ID) {
		t.Errorf("memory list: %s", out)
	}
	d.MustCLI("memory", "add", "written to a locked home: zebra", "--project", "crow")
	d.MustCLI("instance", "list")
	if _, errOut, err = run(d, []string{"CROW_PASSPHRASE=" + pass}, "identity", "unlock"); err == nil || !strings.Contains(errOut, "stop the daemon first") {
		t.Errorf("unlock while serving: err=%v stderr=%q", err, errOut)
	}
	d.Stop()
	if strings.Contains(d.Log(), pass) {
		t.Error("the daemon logged the passphrase")
	}

	// The right passphrase from CROW_PASSPHRASE.
	d.Unset, d.Env = nil, []string{"CROW_PASSPHRASE=" + pass}
	d.Start()
	res := Must(d, app.MemorySearch, app.MemorySearchIn{Query: "zebra"})
	if len(res.Results) != 1 {
		t.Errorf("search on the locked home: %+v", res)
	}
	d.Stop()

	// The locked file is an export blob: init --import reads it, as it
	// reads the export.
	for i, f := range []string{idPath, blob} {
		sat := filepath.Join(t.TempDir(), fmt.Sprint("sat", i))
		if _, errOut, err := run(d, []string{"CROW_HOME=" + sat, "CROW_PASSPHRASE=" + pass}, "init", "--name", "sat", "--import", f); err != nil {
			t.Errorf("init --import %s: %v: %s", f, err, errOut)
		}
	}

	// Unlock: a wrong passphrase changes nothing; the right one restores
	// the clear seed byte for byte.
	if _, errOut, err = run(d, []string{"CROW_PASSPHRASE=wrong"}, "identity", "unlock"); err == nil || !strings.Contains(errOut, "wrong passphrase") {
		t.Errorf("unlock with a wrong passphrase: err=%v stderr=%q", err, errOut)
	}
	if got := fileSnapshot(t, d.Home, "identity", "identity.pub", "instance-id", "instance.json", "api-key"); got != snap {
		t.Fatal("a refused unlock changed the files")
	}
	if _, errOut, err = run(d, []string{"CROW_PASSPHRASE=" + pass}, "identity", "unlock"); err != nil {
		t.Fatalf("unlock: %v: %s", err, errOut)
	}
	if b, _ := os.ReadFile(idPath); !bytes.Equal(b, clearSeed) {
		t.Fatalf("unlocked identity = %q, want the original", b)
	}
	if _, err := os.Stat(pubPath); err == nil {
		t.Error("identity.pub left after unlock")
	}
	if got := d.MustCLI("identity", "show", "--json"); got != showBefore {
		t.Errorf("identity show after unlock = %s, want %s", got, showBefore)
	}
	d.Env = nil
	d.Start()
	if _, err := Call(d, app.MemoryGet, app.MemoryID{ID: m.ID}); err != nil {
		t.Fatalf("unlocked home: GET: %v", err)
	}
}

// run runs a crow command against d's home with env changes: "K=V" sets,
// "-K" removes. Its stdin is empty and not a terminal.
func run(d *Daemon, env []string, args ...string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, crowBin, args...)
	e := d.env()
	for _, kv := range env {
		if k, ok := strings.CutPrefix(kv, "-"); ok {
			e = withoutEnv(e, k)
		} else {
			k, _, _ := strings.Cut(kv, "=")
			e = append(withoutEnv(e, k), kv)
		}
	}
	cmd.Env = e
	var o, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &se
	err = cmd.Run()
	return o.String(), se.String(), err
}

func writePass(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "passphrase")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// fileSnapshot is the content, mode and mtime of the named files of dir.
func fileSnapshot(t *testing.T, dir string, names ...string) string {
	t.Helper()
	var b strings.Builder
	for _, n := range names {
		st, err := os.Stat(filepath.Join(dir, n))
		data, _ := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			fmt.Fprintf(&b, "%s: %v\n", n, err)
			continue
		}
		fmt.Fprintf(&b, "%s %v %v %x\n", n, st.Mode(), st.ModTime().UnixNano(), data)
	}
	return b.String()
}
