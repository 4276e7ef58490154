package home

import (
	"errors"
	"path/filepath"
	"testing"
	"time"
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

// ReenrollSeed gives a seed-holding satellite a new id whose key the seed
// derives and whose certificate the root key issues; Load reads it back
// (locked or not), with the enrollment for the next start. Home itself and
// an invited satellite are refused.
func TestReenrollSeed(t *testing.T) {
	for _, locked := range []bool{false, true} {
		seed := newSeed(t)
		dir := filepath.Join(t.TempDir(), "spare")
		if _, err := Init(dir, "spare", seed, RoleSatellite); err != nil {
			t.Fatal(err)
		}
		if locked {
			if err := LockIdentity(dir, []byte("pw")); err != nil {
				t.Fatal(err)
			}
		}
		h, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		if locked {
			if err := h.Decrypt([]byte("pw")); err != nil {
				t.Fatal(err)
			}
		}
		oldID, apiKey := h.InstanceID, h.APIKey()
		newID, err := NewInstanceID()
		if err != nil {
			t.Fatal(err)
		}
		if err := h.ReenrollSeed(newID, Enrollment{}, time.Now()); err == nil {
			t.Fatal("reenrolled without knowing home's URL")
		}
		if err := h.ReenrollSeed(newID, Enrollment{HomeURL: "http://127.0.0.1:1", HomeID: "h"}, time.Now()); err != nil {
			t.Fatal(err)
		}
		h2, err := Load(dir)
		if err != nil {
			t.Fatalf("locked=%v: %v", locked, err)
		}
		if locked {
			if err := h2.Decrypt([]byte("pw")); err != nil {
				t.Fatal(err)
			}
		}
		if h2.InstanceID != newID || h2.InstanceID == oldID || h2.APIKey() != apiKey || !h2.HasSeed() {
			t.Fatalf("locked=%v after reenroll: id %s (old %s)", locked, h2.InstanceID, oldID)
		}
		if !h2.InstanceKey().Equal(seed.InstanceKey(newID)) {
			t.Fatalf("locked=%v: the key is not the seed's for the new id", locked)
		}
		if c, ok := h2.Certificate(); !ok || c.InstanceID != newID || !c.PublicKey.Equal(seed.InstancePublicKey(newID)) {
			t.Fatalf("locked=%v: certificate after reenroll: %+v %v", locked, c, ok)
		}
		if e, ok := h2.PendingJoin(); !ok || e.HomeURL != "http://127.0.0.1:1" {
			t.Fatalf("locked=%v: pending join after reenroll: %+v %v", locked, e, ok)
		}
	}
	seed := newSeed(t)
	homeDir := filepath.Join(t.TempDir(), "home")
	if _, err := Init(homeDir, "home", seed, RoleHome); err != nil {
		t.Fatal(err)
	}
	hh, err := Load(homeDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := hh.ReenrollSeed("x", Enrollment{HomeURL: "http://127.0.0.1:1"}, time.Now()); !errors.Is(err, ErrReenrollHome) {
		t.Fatalf("reenroll of home: %v", err)
	}
	jd := filepath.Join(t.TempDir(), "laptop")
	if _, err := InitJoined(jd, newJoined(t, seed, "laptop")); err != nil {
		t.Fatal(err)
	}
	hj, err := Load(jd)
	if err != nil {
		t.Fatal(err)
	}
	if err := hj.ReenrollSeed("x", Enrollment{HomeURL: "http://127.0.0.1:1"}, time.Now()); !errors.Is(err, ErrNoSeed) {
		t.Fatalf("seed reenroll of an invited satellite: %v", err)
	}
}
