package home

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/crow-sync/crow/identity"
	"github.com/crow-sync/crow/identity/member"
)

// A seed-holding satellite made home (and back) keeps its role across a
// Load, and its next certificate is for the new role.
func TestSetRole(t *testing.T) {
	var seed identity.Seed
	seed[0] = 7
	dir := filepath.Join(t.TempDir(), "crow")
	if _, err := Init(dir, "laptop", seed, RoleSatellite); err != nil {
		t.Fatal(err)
	}
	h, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.SetRole("boss"); err == nil {
		t.Fatal("an unknown role was accepted")
	}
	if err := h.SetRole(RoleHome); err != nil {
		t.Fatal(err)
	}
	h, err = Load(dir)
	if err != nil || h.Role != RoleHome {
		t.Fatalf("after SetRole(home): %v %v", h, err)
	}
	c, err := h.EnsureCertificate(time.Now())
	if err != nil || c.Role != member.RoleHome {
		t.Fatalf("certificate after promotion: %v %v", c.Role, err)
	}
	if err := h.SetRole(RoleSatellite); err != nil {
		t.Fatal(err)
	}
	if h, err = Load(dir); err != nil || h.Role != RoleSatellite {
		t.Fatalf("after SetRole(satellite): %v", err)
	}
}
