package daemon

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/crow-sync/crow/home"
)

func TestPauseSwitchPersistsAndReloads(t *testing.T) {
	paths := home.PathsOf(t.TempDir())
	sig := newSignal()
	p, err := newPauseSwitch(paths, sig)
	if err != nil {
		t.Fatal(err)
	}
	if p.Paused() || p.PeerPaused("a") {
		t.Fatal("a fresh data directory starts paused")
	}
	for _, id := range []string{"b", "a", "a"} {
		if err := p.Set(id, true); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-sig.c:
	default:
		t.Fatal("Set did not raise the peer signal")
	}
	again, err := newPauseSwitch(paths, newSignal())
	if err != nil {
		t.Fatal(err)
	}
	if s := again.Saved(); s.All || !slices.Equal(s.Peers, []string{"a", "b"}) {
		t.Fatalf("reloaded %+v, want peers a, b", s)
	}
	if !again.PeerPaused("a") || again.PeerPaused("c") {
		t.Fatal("reloaded switch pauses the wrong peers")
	}
	if err := again.Set("a", false); err != nil {
		t.Fatal(err)
	}
	if err := again.Set("", true); err != nil {
		t.Fatal(err)
	}
	if !again.PeerPaused("c") || !again.Paused() {
		t.Fatal("pausing every peer does not pause c")
	}
	if err := again.Set("", false); err != nil {
		t.Fatal(err)
	}
	if s := again.Saved(); s.All || len(s.Peers) != 0 {
		t.Fatalf("resuming every peer left %+v", s)
	}
}

func TestPauseSwitchRefusesABrokenFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, home.SyncPausedName), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := newPauseSwitch(home.PathsOf(dir), newSignal()); err == nil {
		t.Fatal("a corrupt sync-paused.json was taken as no pause")
	}
}

func TestPauseSwitchUnchangedWhenTheFileCannotBeWritten(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gone")
	p := &pauseSwitch{paths: home.PathsOf(dir), peers: newSignal()}
	p.install(home.SyncPaused{})
	if err := p.Set("a", true); err == nil {
		t.Fatal("Set into a missing directory succeeded")
	}
	if p.PeerPaused("a") {
		t.Fatal("a failed Set changed the state")
	}
}
