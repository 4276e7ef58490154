package registry_test

import (
	"context"
	"testing"

	"github.com/crow-sync/crow/registry"
)

// An instance not registered here yet is refused quietly for
// BootstrapGrace after its first refusal, then as a security event; a
// revoked key or a registered id never counts as the start-up race.
func TestExpectedRefusalGrace(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "home-1", registry.RoleHome)
	stranger := ourSeed.InstancePublicKey("not-yet")
	if !e.reg.ExpectedKeyRefusal(stranger) || !e.reg.ExpectedIDRefusal("not-yet") {
		t.Fatal("first refusal of an unknown instance is not expected")
	}
	e.clock.Advance(registry.BootstrapGrace - 1)
	if !e.reg.ExpectedKeyRefusal(stranger) || !e.reg.ExpectedIDRefusal("not-yet") {
		t.Fatal("refusal within the grace is not expected")
	}
	// A subject first refused later gets its own grace.
	late := ourSeed.InstancePublicKey("late")
	if !e.reg.ExpectedKeyRefusal(late) {
		t.Fatal("a later stranger's first refusal is not expected")
	}
	e.clock.Advance(1)
	if e.reg.ExpectedKeyRefusal(stranger) || e.reg.ExpectedIDRefusal("not-yet") {
		t.Fatal("an instance still unknown after the grace is still expected")
	}
	if !e.reg.ExpectedKeyRefusal(late) {
		t.Fatal("the later stranger lost its grace with the first one's")
	}

	// Registered, then revoked: never the race.
	_, url := peer(t, ourSeed, "sat-1", registry.RoleSatellite)
	if _, err := e.reg.Register(ctx, url); err != nil {
		t.Fatal(err)
	}
	if e.reg.ExpectedIDRefusal("sat-1") {
		t.Error("a registered id's refusal counted as expected")
	}
	if _, err := e.reg.Revoke(ctx, "sat-1"); err != nil {
		t.Fatal(err)
	}
	if e.reg.ExpectedKeyRefusal(ourSeed.InstancePublicKey("sat-1")) || e.reg.ExpectedIDRefusal("sat-1") {
		t.Error("a revoked instance's refusal counted as expected")
	}
}
