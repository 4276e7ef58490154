package home

import (
	"errors"
	"path/filepath"
	"testing"
)

// Reenroll rewrites a joined satellite's directory for a new identity that
// Load then reads back (keeping the API key and the name); it refuses a
// certificate of another crow or name, and a directory holding the seed.
func TestReenroll(t *testing.T) {
	seed := newSeed(t)
	dir := filepath.Join(t.TempDir(), "crow")
	if _, err := InitJoined(dir, newJoined(t, seed, "laptop")); err != nil {
		t.Fatal(err)
	}
	h, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.ClearPendingJoin(); err != nil {
		t.Fatal(err)
	}
	apiKey := h.APIKey()
	if err := h.Reenroll(newJoined(t, newSeed(t), "laptop")); err == nil {
		t.Fatal("reenrolled with another crow's certificate")
	}
	if err := h.Reenroll(newJoined(t, seed, "desktop")); err == nil {
		t.Fatal("reenrolled under another name")
	}
	j := newJoined(t, seed, "laptop")
	if err := h.Reenroll(j); err != nil {
		t.Fatal(err)
	}
	h2, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if h2.InstanceID != j.InstanceID || !h2.InstanceKey().Equal(j.Key) || h2.Name != "laptop" || h2.APIKey() != apiKey {
		t.Fatalf("after reenroll: id %s name %s", h2.InstanceID, h2.Name)
	}
	if c, ok := h2.Certificate(); !ok || c.InstanceID != j.InstanceID {
		t.Fatalf("certificate after reenroll: %+v %v", c, ok)
	}
	if e, ok := h2.PendingJoin(); !ok || e.HomeURL != j.HomeURL {
		t.Fatalf("pending join after reenroll: %+v %v", e, ok)
	}

	seedDir := filepath.Join(t.TempDir(), "home")
	if _, err := Init(seedDir, "home", seed, RoleHome); err != nil {
		t.Fatal(err)
	}
	hs, err := Load(seedDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := hs.Reenroll(newJoined(t, seed, "home")); !errors.Is(err, ErrReenrollSeed) {
		t.Fatalf("reenroll of a seed holder: %v", err)
	}
}
