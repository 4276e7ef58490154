package daemon_test

import (
	"errors"
	"testing"

	"github.com/crow-sync/crow/home"
	"github.com/crow-sync/crow/sync/transport"
)

// TestNewRefusesALockedHome: a locked identity must be decrypted before the
// daemon is built; once it is, the daemon starts.
func TestNewRefusesALockedHome(t *testing.T) {
	h := newHome(t)
	pass := []byte("daemon test passphrase")
	if err := home.LockIdentity(h.Root, pass); err != nil {
		t.Fatal(err)
	}
	locked, err := home.Load(h.Root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := build(t, locked, transport.NewMemNetwork()); !errors.Is(err, home.ErrLocked) {
		t.Fatalf("New(locked home) = %v, want ErrLocked", err)
	}
	if err := locked.Decrypt(pass); err != nil {
		t.Fatal(err)
	}
	d, err := build(t, locked, transport.NewMemNetwork())
	if err != nil {
		t.Fatalf("New(decrypted home) = %v", err)
	}
	d.Close()
}
