package home

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crow-sync/crow/identity"
)

func newSeed(t *testing.T) identity.Seed {
	t.Helper()
	s, err := identity.NewSeed(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type fileState struct {
	data  []byte
	mode  fs.FileMode
	mtime time.Time
}

// snapshot records every entry of dir (and dir itself under "").
func snapshot(t *testing.T, dir string) map[string]fileState {
	t.Helper()
	out := map[string]fileState{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		st, err := os.Lstat(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		fsx := fileState{mode: st.Mode(), mtime: st.ModTime()}
		if !d.IsDir() {
			fsx.data, _ = os.ReadFile(path)
		}
		out[rel] = fsx
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameSnapshot(t *testing.T, before, after map[string]fileState) {
	t.Helper()
	if len(before) != len(after) {
		t.Errorf("entries: %d before, %d after", len(before), len(after))
	}
	for name, b := range before {
		a, ok := after[name]
		switch {
		case !ok:
			t.Errorf("%s disappeared", name)
		case !bytes.Equal(a.data, b.data):
			t.Errorf("%s content changed", name)
		case a.mode != b.mode:
			t.Errorf("%s mode changed %v → %v", name, b.mode, a.mode)
		case !a.mtime.Equal(b.mtime):
			t.Errorf("%s mtime changed", name)
		}
	}
}

func TestInitAndLoad(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "crow")
	seed := newSeed(t)
	info, err := Init(dir, "laptop", seed, RoleHome)
	if err != nil {
		t.Fatal(err)
	}
	if !validUUID(info.InstanceID) || info.InstanceID[14] != '4' {
		t.Errorf("instance id %q is not a UUIDv4", info.InstanceID)
	}
	if info.CrowID != seed.CrowID() || !info.PublicKey.Equal(seed.InstancePublicKey(info.InstanceID)) {
		t.Error("Info does not match the seed")
	}

	st, err := os.Stat(dir)
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("dir mode = %v, %v; want 0700", st.Mode().Perm(), err)
	}
	for _, name := range []string{IdentityName, InstanceIDName, CertificateName, InstanceName, APIKeyName, APIKeyHashName} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s mode = %v, want 0600", name, st.Mode().Perm())
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 6 {
		t.Errorf("dir has %d entries (temp files left?): %v", len(entries), entries)
	}

	key, _ := os.ReadFile(filepath.Join(dir, APIKeyName))
	if !strings.HasPrefix(string(key), "crow_") || len(key) != 5+43 {
		t.Errorf("api-key = %q", key)
	}
	hashText, _ := os.ReadFile(filepath.Join(dir, APIKeyHashName))
	sum := sha256.Sum256(key)
	if string(hashText) != hex.EncodeToString(sum[:])+"\n" {
		t.Errorf("api-key.sha256 = %q, want the key's hash", hashText)
	}
	seedText, _ := os.ReadFile(filepath.Join(dir, IdentityName))
	if string(seedText) != hex.EncodeToString(seed[:])+"\n" {
		t.Error("identity file is not the hex seed")
	}

	h, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if h.Seed() != seed || h.InstanceID != info.InstanceID || h.Name != "laptop" || h.Role != RoleHome ||
		h.CrowID != info.CrowID || !h.PublicKey.Equal(info.PublicKey) || h.Root != dir {
		t.Errorf("Load = %+v, want %+v", h.Info, info)
	}
	if h.APIKey() != string(key) || h.APIKeyHash() != sum {
		t.Error("Load API key mismatch")
	}
	if !info.PublicKey.Equal(h.InstanceKey().Public()) {
		t.Error("InstanceKey does not match PublicKey")
	}
}

// TestInitTwiceChangesNothing covers every file Init refuses on, including
// the import path (a satellite given an existing seed).
func TestInitTwiceChangesNothing(t *testing.T) {
	dir := t.TempDir()
	seed := newSeed(t)
	if _, err := Init(dir, "home", seed, RoleHome); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	time.Sleep(10 * time.Millisecond) // make a rewrite visible in mtimes
	for _, s := range []identity.Seed{seed, newSeed(t)} {
		for _, role := range []string{RoleHome, RoleSatellite} {
			if _, err := Init(dir, "again", s, role); !errors.Is(err, ErrAlreadyInitialized) {
				t.Fatalf("second Init = %v, want ErrAlreadyInitialized", err)
			}
		}
	}
	sameSnapshot(t, before, snapshot(t, dir))

	// Any single leftover file of any layout blocks Init, and is left alone.
	for _, name := range initFiles {
		d := t.TempDir()
		os.Chmod(d, 0o755)
		if err := os.WriteFile(filepath.Join(d, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		before := snapshot(t, d)
		if _, err := Init(d, "n", seed, RoleHome); !errors.Is(err, ErrAlreadyInitialized) {
			t.Errorf("Init with %s present = %v, want ErrAlreadyInitialized", name, err)
		}
		sameSnapshot(t, before, snapshot(t, d))
	}
}

func TestInitImport(t *testing.T) {
	seed := newSeed(t)
	home, sat := t.TempDir(), t.TempDir()
	hi, err := Init(home, "home", seed, RoleHome)
	if err != nil {
		t.Fatal(err)
	}
	// The satellite receives the seed through an export blob.
	blob, err := seed.Export([]byte("pw"), nil)
	if err != nil {
		t.Fatal(err)
	}
	imported, err := identity.Import(blob, []byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	si, err := Init(sat, "laptop", imported, RoleSatellite)
	if err != nil {
		t.Fatal(err)
	}
	if si.CrowID != hi.CrowID {
		t.Error("satellite has another crow id")
	}
	if si.InstanceID == hi.InstanceID {
		t.Error("satellite reuses the home's instance id")
	}
	hh, _ := Load(home)
	sh, err := Load(sat)
	if err != nil {
		t.Fatal(err)
	}
	if sh.Role != RoleSatellite || sh.APIKey() == hh.APIKey() {
		t.Error("satellite role or API key wrong")
	}
	// Each side can check the other's key from its own seed.
	if err := identity.VerifyInstanceKey(hh.Seed(), sh.InstanceID, sh.PublicKey); err != nil {
		t.Error(err)
	}
}

func TestInitRejectsBadInput(t *testing.T) {
	seed := newSeed(t)
	for _, tc := range []struct{ name, role string }{
		{"", RoleHome}, {" x", RoleHome}, {"a\nb", RoleHome}, {strings.Repeat("n", 65), RoleHome},
		{"ok", ""}, {"ok", "master"},
	} {
		dir := filepath.Join(t.TempDir(), "h")
		if _, err := Init(dir, tc.name, seed, tc.role); err == nil {
			t.Errorf("Init(%q, %q) succeeded", tc.name, tc.role)
		}
		if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Init(%q, %q) created the directory", tc.name, tc.role)
		}
	}
	f := filepath.Join(t.TempDir(), "file")
	os.WriteFile(f, nil, 0o600)
	if _, err := Init(f, "n", seed, RoleHome); err == nil {
		t.Error("Init over a regular file succeeded")
	}
}

// A failure midway removes what Init created.
func TestInitRollsBack(t *testing.T) {
	// Randomness fails: nothing is created.
	dir := filepath.Join(t.TempDir(), "h")
	if _, err := initHome(dir, "n", newSeed(t), RoleHome, bytes.NewReader(make([]byte, 20)), time.Now()); err == nil {
		t.Fatal("Init with exhausted randomness succeeded")
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Error("directory created despite failure")
	}

	// A write fails at each position in turn.
	defer func() { testFailWrite = nil }()
	for _, failAt := range []string{InstanceIDName, IdentityName, CertificateName, InstanceName, APIKeyHashName, APIKeyName} {
		testFailWrite = func(path string) error {
			if filepath.Base(path) == failAt {
				return errors.New("injected")
			}
			return nil
		}
		// Into a new directory: the directory goes too.
		dir := filepath.Join(t.TempDir(), "h")
		if _, err := Init(dir, "n", newSeed(t), RoleHome); err == nil {
			t.Fatalf("fail at %s: Init succeeded", failAt)
		}
		if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("fail at %s: new directory left behind", failAt)
		}
		// Into an existing directory: it is left as it was.
		existing := t.TempDir()
		os.WriteFile(filepath.Join(existing, "unrelated"), []byte("keep"), 0o644)
		before := snapshot(t, existing)
		if _, err := Init(existing, "n", newSeed(t), RoleHome); err == nil {
			t.Fatalf("fail at %s: Init succeeded", failAt)
		}
		after := snapshot(t, existing)
		// The directory's own mtime moves; its mode and entries must not.
		if before["."].mode != after["."].mode {
			t.Errorf("fail at %s: directory mode changed", failAt)
		}
		delete(before, ".")
		delete(after, ".")
		sameSnapshot(t, before, after)
	}
	testFailWrite = nil

	if os.Geteuid() != 0 {
		// A read-only existing directory: the first write fails, nothing stays.
		ro := t.TempDir()
		os.Chmod(ro, 0o500)
		defer os.Chmod(ro, 0o700)
		if _, err := Init(ro, "n", newSeed(t), RoleHome); err == nil {
			t.Fatal("Init in a read-only directory succeeded")
		}
		if entries, _ := os.ReadDir(ro); len(entries) != 0 {
			t.Errorf("left behind %v", entries)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	if _, err := Load(filepath.Join(t.TempDir(), "nope")); !errors.Is(err, ErrNotInitialized) {
		t.Errorf("Load(missing dir) = %v", err)
	}
	if _, err := Load(t.TempDir()); !errors.Is(err, ErrNotInitialized) {
		t.Errorf("Load(empty dir) = %v", err)
	}

	fresh := func() string {
		d := t.TempDir()
		if _, err := Init(d, "n", newSeed(t), RoleHome); err != nil {
			t.Fatal(err)
		}
		return d
	}
	for name, breakIt := range map[string]func(d string){
		"no instance-id":   func(d string) { os.Remove(filepath.Join(d, InstanceIDName)) },
		"no identity":      func(d string) { os.Remove(filepath.Join(d, IdentityName)) },
		"bad seed":         func(d string) { os.WriteFile(filepath.Join(d, IdentityName), []byte("zz\n"), 0o600) },
		"short seed":       func(d string) { os.WriteFile(filepath.Join(d, IdentityName), []byte("abcd\n"), 0o600) },
		"bad instance-id":  func(d string) { os.WriteFile(filepath.Join(d, InstanceIDName), []byte("x\n"), 0o600) },
		"no instance.json": func(d string) { os.Remove(filepath.Join(d, InstanceName)) },
		"bad role":         func(d string) { os.WriteFile(filepath.Join(d, InstanceName), []byte(`{"name":"n","role":"x"}`), 0o600) },
		"bad json":         func(d string) { os.WriteFile(filepath.Join(d, InstanceName), []byte(`{`), 0o600) },
		"no keys": func(d string) {
			os.Remove(filepath.Join(d, APIKeyName))
			os.Remove(filepath.Join(d, APIKeyHashName))
		},
		"bad hash": func(d string) {
			os.Remove(filepath.Join(d, APIKeyName))
			os.WriteFile(filepath.Join(d, APIKeyHashName), []byte("abc\n"), 0o600)
		},
	} {
		d := fresh()
		breakIt(d)
		if _, err := Load(d); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: Load = %v, want ErrCorrupt", name, err)
		}
	}

	for _, name := range []string{IdentityName, APIKeyName} {
		d := fresh()
		os.Chmod(filepath.Join(d, name), 0o644)
		if _, err := Load(d); !errors.Is(err, ErrInsecurePermissions) {
			t.Errorf("%s 0644: Load = %v, want ErrInsecurePermissions", name, err)
		}
	}
	if os.Geteuid() != 0 {
		d := fresh()
		os.Chmod(filepath.Join(d, IdentityName), 0o000)
		if _, err := Load(d); !errors.Is(err, fs.ErrPermission) {
			t.Errorf("unreadable identity: Load = %v, want fs.ErrPermission", err)
		}
	}
}

func TestAPIKeyWithoutPlaintext(t *testing.T) {
	d := t.TempDir()
	if _, err := Init(d, "n", newSeed(t), RoleHome); err != nil {
		t.Fatal(err)
	}
	key, _ := os.ReadFile(filepath.Join(d, APIKeyName))
	os.Remove(filepath.Join(d, APIKeyName))
	h, err := Load(d)
	if err != nil {
		t.Fatal(err)
	}
	if h.APIKey() != "" || h.APIKeyHash() != sha256.Sum256(key) {
		t.Error("hash-only home does not carry the stored hash")
	}
}

func TestRotateAPIKey(t *testing.T) {
	d := t.TempDir()
	if _, err := Init(d, "n", newSeed(t), RoleHome); err != nil {
		t.Fatal(err)
	}
	h, _ := Load(d)
	old := h.APIKey()
	key, err := h.RotateAPIKey()
	if err != nil {
		t.Fatal(err)
	}
	if key == old || h.APIKey() != key || h.APIKeyHash() != sha256.Sum256([]byte(key)) {
		t.Fatal("rotation did not take effect in memory")
	}
	h2, err := Load(d)
	if err != nil {
		t.Fatal(err)
	}
	if h2.APIKey() != key || h2.APIKeyHash() != sha256.Sum256([]byte(key)) {
		t.Error("rotation did not reach disk")
	}
	for _, name := range []string{APIKeyName, APIKeyHashName} {
		if st, _ := os.Stat(filepath.Join(d, name)); st.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v after rotation", name, st.Mode().Perm())
		}
	}
	// Interrupted rotation (new key written, old hash left): the key wins.
	newer := "crow_interrupted"
	os.WriteFile(filepath.Join(d, APIKeyName), []byte(newer), 0o600)
	h3, err := Load(d)
	if err != nil {
		t.Fatal(err)
	}
	if h3.APIKeyHash() != sha256.Sum256([]byte(newer)) {
		t.Error("interrupted rotation: hash does not follow the plaintext key")
	}
}

func TestAtomicWrite(t *testing.T) {
	d := t.TempDir()
	p := filepath.Join(d, "f")
	if err := AtomicWrite(p, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := AtomicWrite(p, []byte("two"), 0o640); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	st, _ := os.Stat(p)
	if string(b) != "two" || st.Mode().Perm() != 0o640 {
		t.Errorf("got %q mode %v", b, st.Mode().Perm())
	}
	if entries, _ := os.ReadDir(d); len(entries) != 1 {
		t.Errorf("temp files left: %v", entries)
	}
	if err := AtomicWrite(filepath.Join(d, "missing", "f"), nil, 0o600); err == nil {
		t.Error("write into a missing directory succeeded")
	}

	if err := writeExclusive(filepath.Join(d, "x"), []byte("1"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writeExclusive(filepath.Join(d, "x"), []byte("2"), 0o600); !errors.Is(err, fs.ErrExist) {
		t.Errorf("second exclusive write = %v, want fs.ErrExist", err)
	}
	if b, _ := os.ReadFile(filepath.Join(d, "x")); string(b) != "1" {
		t.Errorf("exclusive write overwrote: %q", b)
	}
	if entries, _ := os.ReadDir(d); len(entries) != 2 {
		t.Errorf("temp files left: %v", entries)
	}
}

func TestGatewayAddr(t *testing.T) {
	p := PathsOf(t.TempDir())
	if _, err := p.ReadGatewayAddr(); !errors.Is(err, ErrNoGateway) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadGatewayAddr before write = %v", err)
	}
	if err := p.WriteGatewayAddr("127.0.0.1:3001"); err != nil {
		t.Fatal(err)
	}
	if a, err := p.ReadGatewayAddr(); err != nil || a != "127.0.0.1:3001" {
		t.Errorf("ReadGatewayAddr = %q, %v", a, err)
	}
	if b, _ := os.ReadFile(p.GatewayAddrFile()); string(b) != "127.0.0.1:3001\n" {
		t.Errorf("gateway.addr = %q", b)
	}
	if err := p.WriteGatewayAddr("bad addr"); err == nil {
		t.Error("address with a space accepted")
	}
	if err := p.RemoveGatewayAddr(); err != nil {
		t.Fatal(err)
	}
	if err := p.RemoveGatewayAddr(); err != nil {
		t.Errorf("second remove = %v", err)
	}
	if _, err := p.ReadGatewayAddr(); !errors.Is(err, ErrNoGateway) {
		t.Errorf("after remove = %v", err)
	}
}

func TestResolve(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	userHome := func() (string, error) { return "/u", nil }
	noHome := func() (string, error) { return "", errors.New("no home") }
	if got := resolve("", getenv, userHome); got != "/u/.crow" {
		t.Errorf("default = %q", got)
	}
	if got := resolve("", getenv, noHome); got != ".crow" {
		t.Errorf("default without home = %q", got)
	}
	env["CROW_HOME"] = "/env/crow"
	if got := resolve("", getenv, userHome); got != "/env/crow" {
		t.Errorf("env = %q", got)
	}
	if got := resolve("/flag/crow/", getenv, userHome); got != "/flag/crow" {
		t.Errorf("flag = %q", got)
	}
	if got := resolve("~/x", getenv, userHome); got != "/u/x" {
		t.Errorf("tilde = %q", got)
	}
	t.Setenv("CROW_HOME", "/real/env")
	if got := Resolve(""); got != "/real/env" {
		t.Errorf("Resolve with CROW_HOME = %q", got)
	}
}

func TestLockIsExclusive(t *testing.T) {
	p := PathsOf(t.TempDir())
	unlock, err := p.Lock()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WriteGatewayAddr("127.0.0.1:4242"); err != nil {
		t.Fatal(err)
	}
	_, err = p.Lock()
	if !errors.Is(err, ErrRunning) || !strings.Contains(err.Error(), "127.0.0.1:4242") {
		t.Fatalf("second Lock = %v, want ErrRunning naming the gateway", err)
	}
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	unlock, err = p.Lock()
	if err != nil {
		t.Fatalf("Lock after unlock: %v", err)
	}
	unlock()
}
