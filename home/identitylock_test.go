package home

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crow-sync/crow/identity"
)

func initLockable(t *testing.T) (string, identity.Seed, Info) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "crow")
	seed := newSeed(t)
	info, err := Init(dir, "home", seed, RoleHome)
	if err != nil {
		t.Fatal(err)
	}
	return dir, seed, info
}

var lockPass = []byte("correct horse battery staple")

func TestLockUnlockIdentity(t *testing.T) {
	dir, seed, info := initLockable(t)
	clearText, _ := os.ReadFile(filepath.Join(dir, IdentityName))
	before, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if before.Locked() {
		t.Fatal("a fresh home is locked")
	}
	if _, err := os.Stat(filepath.Join(dir, PublicName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an unlocked home has %s: %v", PublicName, err)
	}

	if err := LockIdentity(dir, lockPass); err != nil {
		t.Fatal(err)
	}
	text, _ := os.ReadFile(filepath.Join(dir, IdentityName))
	if !strings.HasPrefix(string(text), identity.BlobPrefix) || !strings.HasSuffix(string(text), "\n") {
		t.Fatalf("locked identity = %q, want an export blob", text)
	}
	if strings.Contains(string(text), hex.EncodeToString(seed[:])) {
		t.Fatal("the locked identity file holds the seed in clear")
	}
	// The file is exactly an export blob: init --import reads it.
	if got, err := identity.Import(string(text), lockPass); err != nil || got != seed {
		t.Fatalf("Import(locked identity) = %v", err)
	}
	for _, name := range []string{IdentityName, PublicName} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, %v; want 0600", name, st.Mode().Perm(), err)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temp file left: %s", e.Name())
		}
	}
	pubText, _ := os.ReadFile(filepath.Join(dir, PublicName))
	if strings.Contains(string(pubText), hex.EncodeToString(seed[:])) {
		t.Fatal("identity.pub holds the seed")
	}

	h, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !h.Locked() {
		t.Fatal("Load of a locked home: Locked() = false")
	}
	if h.InstanceID != before.InstanceID || h.Name != before.Name || h.Role != before.Role || h.CrowID != before.CrowID ||
		!h.PublicKey.Equal(before.PublicKey) || h.Public() != before.Public() {
		t.Errorf("locked Load: %+v %+v, want %+v %+v", h.Info, h.Public(), before.Info, before.Public())
	}
	if h.CrowID != info.CrowID || !h.PublicKey.Equal(seed.InstancePublicKey(info.InstanceID)) {
		t.Error("public data of the locked home does not match the seed")
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Seed() of a locked home did not panic")
			}
		}()
		h.Seed()
	}()

	if err := LockIdentity(dir, lockPass); !errors.Is(err, ErrLocked) {
		t.Errorf("lock twice: %v, want ErrLocked", err)
	}
	// What needs no seed works on a locked home.
	if _, err := h.RotateAPIKey(); err != nil {
		t.Errorf("RotateAPIKey on a locked home: %v", err)
	}

	// A wrong passphrase changes nothing, in memory or on disk.
	snap := snapshot(t, dir)
	if err := h.Decrypt([]byte("wrong")); !errors.Is(err, identity.ErrBadPassphrase) {
		t.Errorf("Decrypt(wrong) = %v", err)
	}
	if !h.Locked() {
		t.Error("a wrong passphrase unlocked the Home")
	}
	if err := UnlockIdentity(dir, []byte("wrong")); !errors.Is(err, identity.ErrBadPassphrase) {
		t.Errorf("UnlockIdentity(wrong) = %v", err)
	}
	delete(snap, LockName) // serve.lock is created by the first Lock
	after := snapshot(t, dir)
	delete(after, LockName)
	sameSnapshot(t, snap, after)

	if err := h.Decrypt(lockPass); err != nil {
		t.Fatal(err)
	}
	if h.Locked() || h.Seed() != seed || !h.PublicKey.Equal(h.InstanceKey().Public()) {
		t.Error("Decrypt did not restore the seed")
	}
	if err := h.Decrypt(lockPass); !errors.Is(err, ErrNotLocked) {
		t.Errorf("Decrypt twice = %v", err)
	}

	if err := UnlockIdentity(dir, lockPass); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, IdentityName)); string(got) != string(clearText) {
		t.Errorf("unlocked identity = %q, want %q", got, clearText)
	}
	if _, err := os.Stat(filepath.Join(dir, PublicName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("identity.pub left after unlock: %v", err)
	}
	if err := UnlockIdentity(dir, lockPass); !errors.Is(err, ErrNotLocked) {
		t.Errorf("unlock twice = %v", err)
	}
	h, err = Load(dir)
	if err != nil || h.Locked() || h.Seed() != seed {
		t.Fatalf("Load after unlock: %v", err)
	}
}

func TestLockRefusedWhileServing(t *testing.T) {
	dir, _, _ := initLockable(t)
	unlock, err := PathsOf(dir).Lock()
	if err != nil {
		t.Fatal(err)
	}
	snap := snapshot(t, dir)
	if err := LockIdentity(dir, lockPass); !errors.Is(err, ErrRunning) {
		t.Errorf("LockIdentity while serving = %v, want ErrRunning", err)
	}
	sameSnapshot(t, snap, snapshot(t, dir))
	unlock()
	if err := LockIdentity(dir, lockPass); err != nil {
		t.Fatal(err)
	}
	if unlock, err = PathsOf(dir).Lock(); err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if err := UnlockIdentity(dir, lockPass); !errors.Is(err, ErrRunning) {
		t.Errorf("UnlockIdentity while serving = %v, want ErrRunning", err)
	}
}

func TestLockEmptyPassphrase(t *testing.T) {
	dir, _, _ := initLockable(t)
	snap := snapshot(t, dir)
	if err := LockIdentity(dir, nil); !errors.Is(err, identity.ErrEmptyPassphrase) {
		t.Errorf("LockIdentity(empty) = %v", err)
	}
	after := snapshot(t, dir)
	delete(after, LockName)
	sameSnapshot(t, snap, after)
}

func TestLoadLockedCorrupt(t *testing.T) {
	for name, damage := range map[string]func(t *testing.T, dir string){
		"no identity.pub": func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, PublicName)) },
		"bad identity.pub": func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, PublicName), []byte("{"), 0o600)
		},
		"identity.pub of another instance": func(t *testing.T, dir string) {
			editPublic(t, dir, func(p *publicFile) { p.InstanceID = "00000000-0000-4000-8000-000000000000" })
		},
		"unknown format": func(t *testing.T, dir string) {
			editPublic(t, dir, func(p *publicFile) { p.Format = "crow-identity-pub-v9" })
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir, _, _ := initLockable(t)
			if err := LockIdentity(dir, lockPass); err != nil {
				t.Fatal(err)
			}
			damage(t, dir)
			if _, err := Load(dir); !errors.Is(err, ErrCorrupt) {
				t.Errorf("Load = %v, want ErrCorrupt", err)
			}
		})
	}

	// identity.pub that lies about the keys loads (it is public data) but
	// does not decrypt into a Home.
	dir, _, _ := initLockable(t)
	if err := LockIdentity(dir, lockPass); err != nil {
		t.Fatal(err)
	}
	other := newSeed(t)
	editPublic(t, dir, func(p *publicFile) { p.CrowID = other.CrowID() })
	h, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Decrypt(lockPass); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Decrypt with a mismatched identity.pub = %v, want ErrCorrupt", err)
	}

	// A damaged blob is corrupt, not a wrong passphrase.
	dir, _, _ = initLockable(t)
	if err := LockIdentity(dir, lockPass); err != nil {
		t.Fatal(err)
	}
	text, _ := os.ReadFile(filepath.Join(dir, IdentityName))
	os.WriteFile(filepath.Join(dir, IdentityName), text[:len(text)-10], 0o600)
	if h, err = Load(dir); err != nil {
		t.Fatal(err)
	}
	if err := h.Decrypt(lockPass); !errors.Is(err, ErrCorrupt) || errors.Is(err, identity.ErrBadPassphrase) {
		t.Errorf("Decrypt of a truncated blob = %v, want ErrCorrupt", err)
	}
}

func editPublic(t *testing.T, dir string, f func(*publicFile)) {
	t.Helper()
	path := filepath.Join(dir, PublicName)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var p publicFile
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	f(&p)
	b, _ = json.Marshal(p)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestPublicFileFormat pins the shape of identity.pub (frozen).
func TestPublicFileFormat(t *testing.T) {
	dir, seed, info := initLockable(t)
	if err := LockIdentity(dir, lockPass); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, PublicName))
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"format":              "crow-identity-pub-v1",
		"crow_id":             seed.CrowID(),
		"root_public_key":     hex.EncodeToString(seed.RootPublicKey()),
		"anchor_address":      seed.AnchorAddress().Hex(),
		"instance_id":         info.InstanceID,
		"instance_public_key": hex.EncodeToString(seed.InstancePublicKey(info.InstanceID)),
	}
	if len(m) != len(want) {
		t.Errorf("identity.pub has keys %v, want %v", m, want)
	}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("identity.pub %s = %q, want %q", k, m[k], v)
		}
	}
}
