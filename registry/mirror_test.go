package registry_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/crow-sync/crow/registry"
)

func TestMirror(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "home-1", registry.RoleHome)
	_, url := peer(t, ourSeed, "sat-1", registry.RoleSatellite)
	if _, err := e.reg.Register(ctx, url); err != nil {
		t.Fatal(err)
	}
	check := func(when string) registry.Mirror {
		t.Helper()
		m, err := registry.ReadMirror(e.mirror)
		if err != nil {
			t.Fatalf("%s: ReadMirror: %v", when, err)
		}
		if m.Version != registry.MirrorVersion || m.Self != "home-1" || m.CrowID != ourSeed.CrowID() {
			t.Errorf("%s: mirror header = %+v", when, m)
		}
		got, _ := json.Marshal(m.Instances)
		want, _ := json.Marshal(e.reg.List())
		if string(got) != string(want) {
			t.Errorf("%s: mirror instances\n%s\nwant\n%s", when, got, want)
		}
		// Written atomically: the file is complete and no temp file is left.
		ents, err := os.ReadDir(filepath.Dir(e.mirror))
		if err != nil {
			t.Fatal(err)
		}
		if len(ents) != 1 || ents[0].Name() != "instances.json" {
			t.Errorf("%s: directory holds %v, want only instances.json", when, ents)
		}
		st, err := os.Stat(e.mirror)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mirror mode %v, want 0600", when, st.Mode().Perm())
		}
		return m
	}
	m := check("after register")
	if len(m.Instances) != 2 || m.Instances[1].Status != registry.StatusOnline {
		t.Errorf("mirror instances = %+v", m.Instances)
	}

	if _, err := e.reg.Revoke(ctx, "sat-1"); err != nil {
		t.Fatal(err)
	}
	m = check("after revoke")
	if m.Instances[1].Status != registry.StatusRevoked || m.Instances[1].RevokedAt == "" {
		t.Errorf("mirror after revoke = %+v", m.Instances[1])
	}

	// A replicated row (written by the apply loop, then Reload) reaches the mirror too.
	other := newEnv(t, "home-1", registry.RoleHome)
	_, url2 := peer(t, ourSeed, "sat-2", registry.RoleSatellite)
	if _, err := other.reg.Register(ctx, url2); err != nil {
		t.Fatal(err)
	}
	raw, _ := other.table.Get(ctx, "sat-2")
	e.table.Set("sat-2", raw)
	if err := e.reg.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	m = check("after reload")
	if len(m.Instances) != 3 {
		t.Errorf("mirror after reload has %d instances, want 3", len(m.Instances))
	}
}

func TestReadMirrorErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := registry.ReadMirror(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("ReadMirror of a missing file succeeded")
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"version":99,"instances":[]}`), 0o600)
	if _, err := registry.ReadMirror(bad); err == nil {
		t.Error("ReadMirror accepted an unknown version")
	}
}
