package home

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crow-sync/crow/identity"
	"github.com/crow-sync/crow/identity/member"
)

var joinTime = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// newJoined returns what a satellite named name holds after joining seed's
// crow: a fresh key and instance id, and home's certificate for them.
func newJoined(t *testing.T, seed identity.Seed, name string) Joined {
	t.Helper()
	id, err := newUUID(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return Joined{
		Name:          name,
		InstanceID:    id,
		Key:           key,
		Certificate:   issueFor(t, seed, id, pub, name, member.RoleSatellite),
		RootPublicKey: seed.RootPublicKey(),
		HomeURL:       "http://127.0.0.1:3001",
		HomeID:        "11111111-2222-4333-8444-555555555555",
	}
}

func issueFor(t *testing.T, seed identity.Seed, id string, pub ed25519.PublicKey, name string, role member.Role) member.Certificate {
	t.Helper()
	c, err := member.Issue(seed.RootKey(), member.Fields{
		CrowID: seed.CrowID(), InstanceID: id, PublicKey: pub, Role: role, Name: name, IssuedAt: joinTime,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// joinedFiles are the files InitJoined writes, in its order.
var joinedFiles = []string{InstanceIDName, InstanceKeyName, CertificateName, PublicName, InstanceName, APIKeyHashName, APIKeyName, JoinName}

func TestInitJoinedAndLoad(t *testing.T) {
	seed := newSeed(t)
	j := newJoined(t, seed, "laptop")
	dir := filepath.Join(t.TempDir(), "crow")
	info, err := InitJoined(dir, j)
	if err != nil {
		t.Fatal(err)
	}
	want := Info{InstanceID: j.InstanceID, Name: "laptop", Role: RoleSatellite, CrowID: seed.CrowID(), PublicKey: j.Key.Public().(ed25519.PublicKey)}
	if info.InstanceID != want.InstanceID || info.Name != want.Name || info.Role != want.Role || info.CrowID != want.CrowID || !info.PublicKey.Equal(want.PublicKey) {
		t.Errorf("InitJoined = %+v, want %+v", info, want)
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("dir: %v, %v; want 0700", st.Mode().Perm(), err)
	}
	for _, name := range joinedFiles {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s mode = %v, want 0600", name, st.Mode().Perm())
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != len(joinedFiles) {
		t.Errorf("dir has %d entries, want %d: %v", len(entries), len(joinedFiles), entries)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, InstanceKeyName)); string(b) != hex.EncodeToString(j.Key.Seed())+"\n" {
		t.Errorf("instance.key = %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, CertificateName)); string(b) != j.Certificate.String()+"\n" {
		t.Errorf("certificate = %q", b)
	}
	var pub map[string]string
	if b, _ := os.ReadFile(filepath.Join(dir, PublicName)); json.Unmarshal(b, &pub) != nil {
		t.Fatalf("identity.pub = %q", b)
	}
	wantPub := map[string]string{
		"format":              "crow-identity-pub-v1",
		"crow_id":             seed.CrowID(),
		"root_public_key":     hex.EncodeToString(seed.RootPublicKey()),
		"instance_id":         j.InstanceID,
		"instance_public_key": hex.EncodeToString(want.PublicKey),
	}
	if len(pub) != len(wantPub) {
		t.Errorf("identity.pub keys %v, want %v", pub, wantPub)
	}
	for k, v := range wantPub {
		if pub[k] != v {
			t.Errorf("identity.pub %s = %q, want %q", k, pub[k], v)
		}
	}
	var join map[string]string
	if b, _ := os.ReadFile(filepath.Join(dir, JoinName)); json.Unmarshal(b, &join) != nil ||
		len(join) != 2 || join["home_url"] != j.HomeURL || join["home_id"] != j.HomeID {
		t.Errorf("join.json = %v", join)
	}

	h, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if h.InstanceID != want.InstanceID || h.Name != want.Name || h.Role != RoleSatellite || h.CrowID != want.CrowID || !h.PublicKey.Equal(want.PublicKey) {
		t.Errorf("Load = %+v, want %+v", h.Info, want)
	}
	if h.HasSeed() || h.Locked() {
		t.Error("a joined satellite has a seed or is locked")
	}
	if !h.InstanceKey().Equal(j.Key) {
		t.Error("InstanceKey is not the joiner's key")
	}
	if !h.RootPublicKey().Equal(seed.RootPublicKey()) {
		t.Error("RootPublicKey is not the crow's")
	}
	if p := h.Public(); p.AnchorAddress != "" || p.CrowID != seed.CrowID() {
		t.Errorf("Public = %+v", p)
	}
	if c, ok := h.Certificate(); !ok || c.String() != j.Certificate.String() {
		t.Error("Certificate is not the one home issued")
	}
	if e, ok := h.PendingJoin(); !ok || e != (Enrollment{HomeURL: j.HomeURL, HomeID: j.HomeID}) {
		t.Errorf("PendingJoin = %+v, %v", e, ok)
	}
	if h.APIKey() == "" {
		t.Error("no API key")
	}
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(r.(string), "joined by invitation") {
				t.Errorf("Seed() of a joined satellite: recover = %v", r)
			}
		}()
		h.Seed()
	}()
	if err := h.Decrypt(lockPass); !errors.Is(err, ErrNoSeed) || !errors.Is(err, ErrNotLocked) {
		t.Errorf("Decrypt = %v, want ErrNoSeed and ErrNotLocked", err)
	}

	// EnsureCertificate has nothing to do.
	before := snapshot(t, dir)
	if c, err := h.EnsureCertificate(joinTime.Add(time.Hour)); err != nil || c.String() != j.Certificate.String() {
		t.Errorf("EnsureCertificate = %v", err)
	}
	sameSnapshot(t, before, snapshot(t, dir))

	if err := h.ClearPendingJoin(); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.PendingJoin(); ok {
		t.Error("PendingJoin after Clear")
	}
	if err := h.ClearPendingJoin(); err != nil {
		t.Errorf("second Clear = %v", err)
	}
	if h, err = Load(dir); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.PendingJoin(); ok {
		t.Error("join.json survived ClearPendingJoin")
	}
}

// TestInitJoinedHoldsNoSeed: no file of a joined satellite holds the seed or
// any secret derived from it.
func TestInitJoinedHoldsNoSeed(t *testing.T) {
	seed := newSeed(t)
	j := newJoined(t, seed, "laptop")
	dir := t.TempDir()
	if _, err := InitJoined(dir, j); err != nil {
		t.Fatal(err)
	}
	root := seed.RootKey()
	anchor := seed.AnchorKey().D.Bytes()
	mem, pid := seed.MemoryEncryptionKey(), seed.ProjectIDKey()
	secrets := map[string][]byte{
		"seed": seed[:], "root key": root, "root key seed": root.Seed(), "anchor key": anchor,
		"memory key": mem[:], "project id key": pid[:],
		"own key of another id": seed.InstanceKey(j.InstanceID).Seed(),
	}
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		lower := bytes.ToLower(b)
		for what, s := range secrets {
			if bytes.Contains(b, s) || bytes.Contains(lower, []byte(hex.EncodeToString(s))) {
				t.Errorf("%s holds the %s", d.Name(), what)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != len(joinedFiles) {
		t.Errorf("walked %d files, want %d", n, len(joinedFiles))
	}
}

func TestInitJoinedRollsBack(t *testing.T) {
	seed := newSeed(t)
	defer func() { testFailWrite = nil }()
	for _, failAt := range joinedFiles {
		testFailWrite = func(path string) error {
			if filepath.Base(path) == failAt {
				return errors.New("injected")
			}
			return nil
		}
		dir := filepath.Join(t.TempDir(), "h")
		if _, err := InitJoined(dir, newJoined(t, seed, "n")); err == nil {
			t.Fatalf("fail at %s: InitJoined succeeded", failAt)
		}
		if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("fail at %s: new directory left behind", failAt)
		}
		existing := t.TempDir()
		os.WriteFile(filepath.Join(existing, "unrelated"), []byte("keep"), 0o644)
		before := snapshot(t, existing)
		if _, err := InitJoined(existing, newJoined(t, seed, "n")); err == nil {
			t.Fatalf("fail at %s: InitJoined succeeded", failAt)
		}
		after := snapshot(t, existing)
		if before["."].mode != after["."].mode {
			t.Errorf("fail at %s: directory mode changed", failAt)
		}
		delete(before, ".")
		delete(after, ".")
		sameSnapshot(t, before, after)
	}
}

func TestInitJoinedRefuses(t *testing.T) {
	seed, other := newSeed(t), newSeed(t)
	for name, spoil := range map[string]func(j *Joined){
		"cert for another key": func(j *Joined) {
			pub, _, _ := ed25519.GenerateKey(rand.Reader)
			j.Certificate = issueFor(t, seed, j.InstanceID, pub, j.Name, member.RoleSatellite)
		},
		"cert for another id": func(j *Joined) {
			j.Certificate = issueFor(t, seed, "00000000-0000-4000-8000-000000000000", j.Key.Public().(ed25519.PublicKey), j.Name, member.RoleSatellite)
		},
		"cert for another name": func(j *Joined) { j.Name = "desktop" },
		"cert for a home": func(j *Joined) {
			j.Certificate = issueFor(t, seed, j.InstanceID, j.Key.Public().(ed25519.PublicKey), j.Name, member.RoleHome)
		},
		"wrong root": func(j *Joined) { j.RootPublicKey = other.RootPublicKey() },
		"cert of another crow": func(j *Joined) {
			j.Certificate = issueFor(t, other, j.InstanceID, j.Key.Public().(ed25519.PublicKey), j.Name, member.RoleSatellite)
		},
		"bad signature": func(j *Joined) { j.Certificate.Signature[0] ^= 1 },
		"bad name":      func(j *Joined) { j.Name = " laptop" },
		"bad id":        func(j *Joined) { j.InstanceID = strings.ToUpper(j.InstanceID) },
		"short key":     func(j *Joined) { j.Key = j.Key[:32] },
		"short root":    func(j *Joined) { j.RootPublicKey = j.RootPublicKey[:31] },
		"bad home url":  func(j *Joined) { j.HomeURL = "ftp://x" },
		"bad home id":   func(j *Joined) { j.HomeID = "home" },
	} {
		j := newJoined(t, seed, "laptop")
		spoil(&j)
		dir := filepath.Join(t.TempDir(), "h")
		if _, err := InitJoined(dir, j); err == nil {
			t.Errorf("%s: InitJoined succeeded", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
		if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: directory created", name)
		}
		existing := t.TempDir()
		before := snapshot(t, existing)
		if _, err := InitJoined(existing, j); err == nil {
			t.Errorf("%s: InitJoined succeeded", name)
		}
		sameSnapshot(t, before, snapshot(t, existing))
	}
	// An unknown home id is fine.
	j := newJoined(t, seed, "laptop")
	j.HomeID = ""
	if _, err := InitJoined(t.TempDir(), j); err != nil {
		t.Errorf("empty home id: %v", err)
	}
}

func TestInitJoinedTwiceAndCheckInitable(t *testing.T) {
	seed := newSeed(t)
	missing := filepath.Join(t.TempDir(), "a", "b")
	if err := CheckInitable(missing); err != nil {
		t.Errorf("CheckInitable(missing dir) = %v", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Error("CheckInitable created the directory")
	}
	empty := t.TempDir()
	if err := CheckInitable(empty); err != nil {
		t.Errorf("CheckInitable(empty) = %v", err)
	}
	f := filepath.Join(t.TempDir(), "file")
	os.WriteFile(f, nil, 0o600)
	if err := CheckInitable(f); err == nil {
		t.Error("CheckInitable(regular file) succeeded")
	}
	if err := CheckInitable(filepath.Join(f, "sub")); err == nil {
		t.Error("CheckInitable(under a regular file) succeeded")
	}
	if os.Geteuid() != 0 {
		ro := t.TempDir()
		os.Chmod(ro, 0o500)
		defer os.Chmod(ro, 0o700)
		if err := CheckInitable(ro); err == nil {
			t.Error("CheckInitable(read-only dir) succeeded")
		}
		if err := CheckInitable(filepath.Join(ro, "new")); err == nil {
			t.Error("CheckInitable(under a read-only dir) succeeded")
		}
	}

	homeDir, joinedDir := t.TempDir(), t.TempDir()
	if _, err := Init(homeDir, "home", seed, RoleHome); err != nil {
		t.Fatal(err)
	}
	if _, err := InitJoined(joinedDir, newJoined(t, seed, "laptop")); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{homeDir, joinedDir} {
		before := snapshot(t, dir)
		time.Sleep(10 * time.Millisecond)
		if err := CheckInitable(dir); !errors.Is(err, ErrAlreadyInitialized) {
			t.Errorf("CheckInitable(initialised) = %v", err)
		}
		if _, err := InitJoined(dir, newJoined(t, seed, "again")); !errors.Is(err, ErrAlreadyInitialized) {
			t.Errorf("InitJoined over an instance = %v", err)
		}
		if _, err := Init(dir, "again", seed, RoleSatellite); !errors.Is(err, ErrAlreadyInitialized) {
			t.Errorf("Init over an instance = %v", err)
		}
		sameSnapshot(t, before, snapshot(t, dir))
	}
	for _, name := range initFiles {
		d := t.TempDir()
		os.WriteFile(filepath.Join(d, name), []byte("x"), 0o600)
		before := snapshot(t, d)
		if err := CheckInitable(d); !errors.Is(err, ErrAlreadyInitialized) {
			t.Errorf("CheckInitable with %s = %v", name, err)
		}
		if _, err := InitJoined(d, newJoined(t, seed, "n")); !errors.Is(err, ErrAlreadyInitialized) {
			t.Errorf("InitJoined with %s = %v", name, err)
		}
		sameSnapshot(t, before, snapshot(t, d))
	}
}

func TestLoadJoinedCorrupt(t *testing.T) {
	seed, other := newSeed(t), newSeed(t)
	write := func(name, data string) func(t *testing.T, dir string, j Joined) {
		return func(t *testing.T, dir string, j Joined) {
			os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600)
		}
	}
	for name, damage := range map[string]func(t *testing.T, dir string, j Joined){
		"tampered certificate": func(t *testing.T, dir string, j Joined) {
			c := j.Certificate
			c.Name = "evil"
			write(CertificateName, c.String()+"\n")(t, dir, j)
		},
		"certificate of another crow": func(t *testing.T, dir string, j Joined) {
			c := issueFor(t, other, j.InstanceID, j.Key.Public().(ed25519.PublicKey), j.Name, member.RoleSatellite)
			write(CertificateName, c.String()+"\n")(t, dir, j)
		},
		"certificate for another key": func(t *testing.T, dir string, j Joined) {
			pub, _, _ := ed25519.GenerateKey(rand.Reader)
			c := issueFor(t, seed, j.InstanceID, pub, j.Name, member.RoleSatellite)
			write(CertificateName, c.String()+"\n")(t, dir, j)
		},
		"malformed certificate": write(CertificateName, "crowcert1.xx\n"),
		"no certificate":        func(t *testing.T, dir string, j Joined) { os.Remove(filepath.Join(dir, CertificateName)) },
		"no identity.pub":       func(t *testing.T, dir string, j Joined) { os.Remove(filepath.Join(dir, PublicName)) },
		"identity.pub of another crow": func(t *testing.T, dir string, j Joined) {
			editPublic(t, dir, func(p *publicFile) {
				p.CrowID, p.RootPublicKey = other.CrowID(), hex.EncodeToString(other.RootPublicKey())
			})
		},
		"identity.pub with a crow id not its root's": func(t *testing.T, dir string, j Joined) {
			editPublic(t, dir, func(p *publicFile) { p.CrowID = other.CrowID() })
		},
		"identity.pub of another key": func(t *testing.T, dir string, j Joined) {
			pub, _, _ := ed25519.GenerateKey(rand.Reader)
			editPublic(t, dir, func(p *publicFile) { p.InstancePublicKey = hex.EncodeToString(pub) })
		},
		"bad instance.key":     write(InstanceKeyName, "abcd\n"),
		"another instance.key": write(InstanceKeyName, strings.Repeat("ab", 32)+"\n"),
		"role home":            write(InstanceName, `{"name":"laptop","role":"home"}`),
		"bad join.json":        write(JoinName, `{"home_url": ""}`),
		"also a seed":          write(IdentityName, hex.EncodeToString(seed[:])+"\n"),
		"no instance-id":       func(t *testing.T, dir string, j Joined) { os.Remove(filepath.Join(dir, InstanceIDName)) },
	} {
		t.Run(name, func(t *testing.T) {
			j := newJoined(t, seed, "laptop")
			dir := t.TempDir()
			if _, err := InitJoined(dir, j); err != nil {
				t.Fatal(err)
			}
			damage(t, dir, j)
			if _, err := Load(dir); !errors.Is(err, ErrCorrupt) {
				t.Errorf("Load = %v, want ErrCorrupt", err)
			} else {
				t.Log(err)
			}
		})
	}

	dir := t.TempDir()
	if _, err := InitJoined(dir, newJoined(t, seed, "laptop")); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(dir, InstanceKeyName), 0o644)
	if _, err := Load(dir); !errors.Is(err, ErrInsecurePermissions) {
		t.Errorf("instance.key 0644: Load = %v, want ErrInsecurePermissions", err)
	}
}

func TestLockJoinedRefused(t *testing.T) {
	dir := t.TempDir()
	if _, err := InitJoined(dir, newJoined(t, newSeed(t), "laptop")); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	if err := LockIdentity(dir, lockPass); !errors.Is(err, ErrNoSeed) {
		t.Errorf("LockIdentity = %v, want ErrNoSeed", err)
	}
	if err := UnlockIdentity(dir, lockPass); !errors.Is(err, ErrNoSeed) {
		t.Errorf("UnlockIdentity = %v, want ErrNoSeed", err)
	}
	after := snapshot(t, dir)
	delete(after, LockName) // serve.lock, created by the first Lock, moves the dir's mtime
	delete(after, ".")
	delete(before, ".")
	sameSnapshot(t, before, after)
}
