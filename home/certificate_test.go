package home

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/crow-sync/crow/identity/member"
)

func TestInitWritesCertificate(t *testing.T) {
	for _, role := range []string{RoleHome, RoleSatellite} {
		dir := t.TempDir()
		seed := newSeed(t)
		info, err := Init(dir, "box", seed, role)
		if err != nil {
			t.Fatal(err)
		}
		h, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		c, ok := h.Certificate()
		if !ok {
			t.Fatalf("%s: no certificate after Init", role)
		}
		if err := member.Verify(c, seed.CrowID(), seed.RootPublicKey()); err != nil {
			t.Error(err)
		}
		if c.InstanceID != info.InstanceID || !c.PublicKey.Equal(seed.InstancePublicKey(info.InstanceID)) ||
			c.Name != "box" || string(c.Role) != role || c.CrowID != seed.CrowID() {
			t.Errorf("%s: certificate %+v does not match %+v", role, c.Fields, info)
		}
		if !h.HasSeed() || !h.RootPublicKey().Equal(seed.RootPublicKey()) {
			t.Error("HasSeed or RootPublicKey wrong on a seed home")
		}
		if b, _ := os.ReadFile(filepath.Join(dir, CertificateName)); string(b) != c.String()+"\n" {
			t.Errorf("certificate file = %q", b)
		}
		if _, ok := h.PendingJoin(); ok {
			t.Error("a home has a pending join")
		}
	}
}

// An old directory (no certificate file) gets one from EnsureCertificate,
// once; a renamed instance gets a new one.
func TestEnsureCertificate(t *testing.T) {
	dir := t.TempDir()
	seed := newSeed(t)
	info, err := Init(dir, "home", seed, RoleHome)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, CertificateName))
	h, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := h.Certificate(); ok {
		t.Fatal("Certificate without a certificate file")
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c, err := h.EnsureCertificate(now)
	if err != nil {
		t.Fatal(err)
	}
	if err := member.Verify(c, seed.CrowID(), seed.RootPublicKey()); err != nil {
		t.Error(err)
	}
	if c.InstanceID != info.InstanceID || !c.PublicKey.Equal(info.PublicKey) || c.Name != "home" ||
		c.Role != member.RoleHome || !c.IssuedAt.Equal(now) {
		t.Errorf("issued %+v", c.Fields)
	}
	if got, ok := h.Certificate(); !ok || got.String() != c.String() {
		t.Error("Certificate after EnsureCertificate")
	}
	path := filepath.Join(dir, CertificateName)
	first, _ := os.ReadFile(path)
	if string(first) != c.String()+"\n" {
		t.Errorf("certificate file = %q", first)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("certificate mode %v", st.Mode().Perm())
	}
	before := snapshot(t, dir)
	time.Sleep(10 * time.Millisecond)
	if again, err := h.EnsureCertificate(now.Add(time.Hour)); err != nil || again.String() != c.String() {
		t.Errorf("second EnsureCertificate = %v, changed %v", err, again.String() != c.String())
	}
	sameSnapshot(t, before, snapshot(t, dir))
	h2, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := h2.EnsureCertificate(now.Add(time.Hour)); err != nil || again.String() != c.String() {
		t.Errorf("EnsureCertificate after reload = %v", err)
	}
	sameSnapshot(t, before, snapshot(t, dir))

	// Renamed by hand: the old certificate loads but is stale; it is re-issued.
	os.WriteFile(filepath.Join(dir, InstanceName), []byte(`{"name":"renamed","role":"home"}`), 0o600)
	h3, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := h3.Certificate(); ok {
		t.Error("a stale certificate is returned")
	}
	c3, err := h3.EnsureCertificate(now)
	if err != nil || c3.Name != "renamed" {
		t.Errorf("re-issue: %v, name %q", err, c3.Name)
	}

	// A certificate that does not verify is corrupt, even with the seed.
	bad := c
	bad.Signature[5] ^= 1
	os.WriteFile(path, []byte(bad.String()+"\n"), 0o600)
	if _, err := Load(dir); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Load with a bad certificate = %v, want ErrCorrupt", err)
	}
}

func TestEnsureCertificateLocked(t *testing.T) {
	dir, seed, info := initLockable(t)
	if err := LockIdentity(dir, lockPass); err != nil {
		t.Fatal(err)
	}
	// The certificate works on a locked home without the passphrase.
	h, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := h.Certificate(); !ok || c.InstanceID != info.InstanceID {
		t.Error("locked home: no certificate")
	}
	if !h.HasSeed() || !h.RootPublicKey().Equal(seed.RootPublicKey()) {
		t.Error("locked home: HasSeed or RootPublicKey wrong")
	}

	os.Remove(filepath.Join(dir, CertificateName))
	if h, err = Load(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := h.EnsureCertificate(time.Now()); !errors.Is(err, ErrLocked) {
		t.Errorf("EnsureCertificate before Decrypt = %v, want ErrLocked", err)
	}
	if _, err := os.Stat(filepath.Join(dir, CertificateName)); !errors.Is(err, os.ErrNotExist) {
		t.Error("a certificate was written while locked")
	}
	if err := h.Decrypt(lockPass); err != nil {
		t.Fatal(err)
	}
	c, err := h.EnsureCertificate(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := member.Verify(c, seed.CrowID(), seed.RootPublicKey()); err != nil {
		t.Error(err)
	}
	if h, err = Load(dir); err != nil {
		t.Fatal(err)
	}
	if got, ok := h.Certificate(); !ok || got.String() != c.String() {
		t.Error("issued certificate not loaded")
	}
}

func TestEnsureCertificateJoinedStale(t *testing.T) {
	dir := t.TempDir()
	if _, err := InitJoined(dir, newJoined(t, newSeed(t), "laptop")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, InstanceName), []byte(`{"name":"renamed","role":"satellite"}`), 0o600)
	h, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	if _, err := h.EnsureCertificate(time.Now()); !errors.Is(err, ErrNoSeed) {
		t.Errorf("EnsureCertificate on a renamed joined satellite = %v, want ErrNoSeed", err)
	}
	sameSnapshot(t, before, snapshot(t, dir))
}
