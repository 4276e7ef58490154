package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/crow-sync/crow/app"
)

// memoryIDs lists the ids of d's memories.
func memoryIDs(t *testing.T, d *Daemon) map[string]bool {
	t.Helper()
	page, err := Call(d, app.MemoryList, app.MemoryListIn{Limit: 1000})
	if err != nil {
		t.Fatalf("%s: listing memories: %v", d.Name, err)
	}
	out := map[string]bool{}
	for _, m := range page.Memories {
		out[m.ID] = true
	}
	return out
}

// holdsAll reports whether d lists every memory of want.
func holdsAll(d *Daemon, want map[string]bool) bool {
	page, err := Call(d, app.MemoryList, app.MemoryListIn{Limit: 1000})
	if err != nil {
		return false
	}
	have := map[string]bool{}
	for _, m := range page.Memories {
		have[m.ID] = true
	}
	for id := range want {
		if !have[id] {
			return false
		}
	}
	return true
}

// noFork fails the test if d was told of a fork or logged one.
func noFork(t *testing.T, d *Daemon) {
	t.Helper()
	for _, x := range Must(d, app.NotificationsList, app.PageIn{}).Notifications {
		if x.Kind == "feed_fork" {
			t.Errorf("%s: fork notification: %+v", d.Name, x)
		}
	}
	if strings.Contains(d.Log(), "fork of the own feed") {
		t.Errorf("%s logged a fork of its own feed", d.Name)
	}
}

// restoredDaemon is a new data directory filled by `crow restore` (run with
// args after the file).
func restoredDaemon(t *testing.T, name, archive string, args ...string) *Daemon {
	t.Helper()
	d := newDaemon(t, name)
	d.MustCLI(append([]string{"restore", archive}, args...)...)
	d.readKey()
	return d
}

// TestBackupRestoreSatelliteByInvite: a satellite is backed up while it
// takes writes, then destroyed; its backup restored by invitation is a new
// instance that holds every memory of the snapshot (checked with home
// stopped, so nothing came by sync), catches up with what home had, writes
// replicating to home, and no fork anywhere.
func TestBackupRestoreSatelliteByInvite(t *testing.T) {
	home, sats := cluster(t, "laptop")
	sat := sats[0]
	writeN(t, sat, 10, "laptop before")
	writeN(t, home, 5, "home before")
	Eventually(t, syncTimeout, "convergence", func() bool { return converged(home, sat) })
	before := memoryIDs(t, sat)
	oldID := sat.instanceID()

	// Writes go on while the backup is taken.
	var (
		stop    atomic.Bool
		wg      sync.WaitGroup
		written atomic.Int64
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			if _, err := Call(sat, app.MemoryCreate, app.MemoryCreateIn{Content: fmt.Sprintf("laptop during backup %d", i)}); err != nil {
				t.Errorf("write during the backup: %v", err)
				return
			}
			written.Add(1)
		}
	}()
	archive := filepath.Join(t.TempDir(), "laptop.crowbackup")
	Eventually(t, syncTimeout, "writes under way", func() bool { return written.Load() > 0 })
	out := sat.MustCLI("backup", "--out", archive)
	stop.Store(true)
	wg.Wait()
	if strings.TrimSpace(out) != archive {
		t.Fatalf("backup printed %q", out)
	}
	if written.Load() == 0 {
		t.Fatal("no write landed during the backup")
	}
	b, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "laptop before note 1") || strings.Contains(string(b), oldID) {
		t.Fatal("the archive holds plaintext")
	}
	Eventually(t, syncTimeout, "home to take every write of the laptop", func() bool { return converged(home, sat) })
	all := memoryIDs(t, sat)

	// The machine is lost.
	sat.Kill()
	if err := os.RemoveAll(sat.Home); err != nil {
		t.Fatal(err)
	}

	// A wrong passphrase and a non-empty target change nothing.
	fresh := newDaemon(t, "laptop")
	if _, errOut, err := run(fresh, []string{"CROW_PASSPHRASE=not-it"}, "restore", archive, "--join", Invite(home, "laptop")); err == nil ||
		!strings.Contains(errOut, "wrong passphrase") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Fatalf("restore with a wrong passphrase: %v, %q", err, errOut)
	}
	if _, err := os.Stat(fresh.Home); !os.IsNotExist(err) {
		t.Fatalf("a refused restore left %s behind (%v)", fresh.Home, err)
	}
	if _, errOut, err := run(home, nil, "restore", archive); err == nil || !strings.Contains(errOut, "not empty") {
		t.Fatalf("restore over home's directory: %v, %q", err, errOut)
	}

	r := restoredDaemon(t, "laptop", archive, "--join", Invite(home, "laptop"))
	home.Stop()
	r.Start()
	newID := r.instanceID()
	if newID == oldID {
		t.Fatal("the restored instance kept the old instance id")
	}
	if !holdsAll(r, before) {
		t.Fatalf("the restored instance lacks memories of the snapshot: has %d, the snapshot had at least %d", len(memoryIDs(t, r)), len(before))
	}
	home.Start()
	Enrolled(t, home, r)
	Eventually(t, syncTimeout, "the restored instance to hold every memory the laptop had", func() bool { return holdsAll(r, all) })

	writeN(t, r, 3, "restored laptop")
	after := memoryIDs(t, r)
	Eventually(t, syncTimeout, "the restored instance's writes on home", func() bool { return holdsAll(home, after) && converged(home, r) })
	if n := feedLengths(home)[newID]; n == 0 {
		t.Fatal("home holds no feed of the new instance")
	}
	noFork(t, home)
	noFork(t, r)
}

// TestBackupHomeRestoredAsSeedSatellite: home's backup restored with no
// invite is a satellite that holds the seed and certified its new key
// itself; on its first start it registers with home, has every memory, and
// its writes replicate.
func TestBackupHomeRestoredAsSeedSatellite(t *testing.T) {
	home := NewDaemon(t, "home", nil)
	home.Start()
	writeN(t, home, 8, "home")
	want := memoryIDs(t, home)
	archive := filepath.Join(t.TempDir(), "home.crowbackup")
	home.MustCLI("backup", "--out", archive)

	r := restoredDaemon(t, "home-copy", archive, "--name", "home-copy")
	ident := r.MustCLI("identity", "show")
	if !strings.Contains(ident, "satellite") || strings.Contains(ident, "seed:") {
		t.Fatalf("restored identity:\n%s", ident)
	}
	r.Start()
	Enrolled(t, home, r)
	if !holdsAll(r, want) {
		t.Fatal("the restored copy lacks home's memories")
	}
	writeN(t, r, 2, "copy")
	after := memoryIDs(t, r)
	Eventually(t, syncTimeout, "the copy's writes on home", func() bool { return holdsAll(home, after) && converged(home, r) })
	noFork(t, home)
	noFork(t, r)
}
