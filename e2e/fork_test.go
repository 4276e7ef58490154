package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/registry"
)

// memoryCounts is how many live memories d holds of each content.
func memoryCounts(t *testing.T, d *Daemon) (map[string]int, bool) {
	t.Helper()
	counts := map[string]int{}
	in := app.MemoryListIn{Limit: 1000}
	for {
		page, err := Call(d, app.MemoryList, in)
		if err != nil {
			return nil, false
		}
		for _, m := range page.Memories {
			counts[m.Content]++
		}
		if page.NextCursor == "" {
			return counts, true
		}
		in.Cursor = page.NextCursor
	}
}

// holdsOnce reports whether d holds each of want exactly once and nothing
// else beyond them (total).
func holdsOnce(t *testing.T, d *Daemon, want []string, total int) bool {
	counts, ok := memoryCounts(t, d)
	if !ok {
		return false
	}
	n := 0
	for _, c := range counts {
		n += c
	}
	for _, w := range want {
		if counts[w] != 1 {
			return false
		}
	}
	return n == total
}

func addMemories(t *testing.T, d *Daemon, prefix string, n int) []string {
	t.Helper()
	var out []string
	for i := range n {
		c := fmt.Sprintf("%s %d", prefix, i)
		Must(d, app.MemoryCreate, app.MemoryCreateIn{Content: c, Project: "fork"})
		out = append(out, c)
	}
	return out
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.RemoveAll(to); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", from, to).CombinedOutput(); err != nil {
		t.Fatalf("copying %s: %v: %s", from, err, out)
	}
}

// A satellite restored from an old copy of its $CROW_HOME forks its feed:
// once it meets home it refuses writes (409, the cause and the fix) and
// shows forked; `crow instance reenroll --join INVITE` gives it a new
// identity, and then home holds every write of both branches exactly once,
// and new writes on the reenrolled copy replicate.
func TestRestoredCopyForksThenReenrolls(t *testing.T) {
	home := NewDaemon(t, "home", nil)
	home.Start()
	s := NewDaemon(t, "sat", home)
	s.Start()
	Enrolled(t, home, s)
	oldID := s.instanceID()

	common := addMemories(t, s, "common", 2)
	Eventually(t, syncTimeout, "home to hold the common writes", func() bool { return holdsOnce(t, home, common, 2) })

	// The backup: a copy of S's directory while S is stopped.
	s.Stop()
	backup := filepath.Join(t.TempDir(), "backup")
	copyDir(t, s.Home, backup)
	s.Start()
	genuine := addMemories(t, s, "genuine", 3)
	all := append(append([]string{}, common...), genuine...)
	Eventually(t, syncTimeout, "home to hold the genuine writes", func() bool { return holdsOnce(t, home, all, 5) })
	s.Stop()

	// Restore the old copy into S's place and write on it while it has not
	// met home yet: the fork branch.
	home.Stop()
	copyDir(t, backup, s.Home)
	s.Start()
	forkWrites := addMemories(t, s, "fork branch", 3)
	home.Start()
	met := time.Now()

	// Once it meets home it knows: writes are refused with the cause and
	// the fix, over REST and the CLI; reads go on.
	Eventually(t, syncTimeout, "the restored copy to know its feed forked", func() bool {
		st, err := Call(s, app.SyncStatusOp, app.NoInput{})
		return err == nil && st.Forked != nil
	})
	t.Logf("figure: the fork was known %v after home started", time.Since(met).Round(time.Millisecond))
	code, e := s.RawJSON(s.Key, "POST", "/v1/memory", `{"content":"after the fork"}`)
	if code != 409 || e == nil || !strings.Contains(e.Msg, "forked") || !strings.Contains(e.Msg, oldID) ||
		!strings.Contains(e.Msg, "crow instance reenroll") {
		t.Fatalf("write on the forked copy: %d %+v", code, e)
	}
	if _, stderr, err := s.CLI("memory", "add", "after the fork, by the CLI"); err == nil ||
		!strings.Contains(stderr, "crow instance reenroll") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Fatalf("CLI write on the forked copy: err=%v stderr=%q", err, stderr)
	}
	if _, errText := callTool[memory.Memory](t, mcpClient(t, s, "/mcp"), "crow_store_memory",
		app.MemoryCreateIn{Content: "after the fork, by MCP"}); !strings.Contains(errText, "crow instance reenroll") {
		t.Fatalf("MCP write on the forked copy: %q", errText)
	}
	if _, ok := memoryCounts(t, s); !ok {
		t.Fatal("reads refused on the forked copy")
	}
	st := Must(s, app.SyncStatusOp, app.NoInput{})
	if st.Forked == nil || st.Forked.PeerLength <= st.Forked.Length-3 {
		t.Fatalf("sync status of the forked copy: %+v", st.Forked)
	}
	if out := s.MustCLI("sync", "status"); !strings.Contains(out, "FORKED") {
		t.Fatalf("crow sync status on the forked copy:\n%s", out)
	}
	list := Must(s, app.InstancesList, app.NoInput{})
	for _, in := range list.Instances {
		if in.ID == oldID && in.Status != registry.StatusForked {
			t.Fatalf("the forked copy shows itself %q", in.Status)
		}
	}

	// One command: a new identity by invite; the daemon restarts under it.
	invite := Invite(home, "sat")
	reenrolled := time.Now()
	out := s.MustCLI("instance", "reenroll", "--join", invite)
	if !strings.Contains(out, "reenrolled") {
		t.Fatalf("reenroll: %s", out)
	}
	var newID string
	Eventually(t, syncTimeout, "the copy to restart under a new id", func() bool {
		h, err := Call(s, app.InstanceHealth, app.HealthIn{})
		newID = h.InstanceID
		return err == nil && h.InstanceID != "" && h.InstanceID != oldID
	})
	Enrolled(t, home, s)

	// Home: every write of both branches exactly once; the copy too (it
	// now replicates the genuine branch of its old feed).
	want := append(append([]string{}, all...), forkWrites...)
	Eventually(t, syncTimeout, "home to hold both branches once", func() bool { return holdsOnce(t, home, want, 8) })
	t.Logf("figure: home held both branches once %v after the reenroll command", time.Since(reenrolled).Round(time.Millisecond))
	Eventually(t, syncTimeout, "the copy to hold both branches once", func() bool { return holdsOnce(t, s, want, 8) })
	Eventually(t, syncTimeout, "the replay to be recorded", func() bool {
		st, err := Call(s, app.SyncStatusOp, app.NoInput{})
		return err == nil && st.Forked == nil && st.Reenroll != nil && st.Reenroll.Phase == "done"
	})
	st = Must(s, app.SyncStatusOp, app.NoInput{})
	if r := st.Reenroll; r.OldInstanceID != oldID || r.NewInstanceID != newID || r.Replayed != 3 {
		t.Fatalf("reenroll record %+v", r)
	}
	t.Logf("figure: reenroll record: common prefix %d, fork-branch entries %d of %d, rows replayed %d, skipped %d",
		*st.Reenroll.CommonPrefix, st.Reenroll.ForkEntries, st.Reenroll.ForkLength, st.Reenroll.Replayed, st.Reenroll.Skipped)

	// Writes are accepted again and replicate.
	after := addMemories(t, s, "after reenroll", 1)
	want = append(want, after...)
	Eventually(t, syncTimeout, "home to hold the new write", func() bool { return holdsOnce(t, home, want, 9) })
}

// memoryContent is d's live content of memory id ("" if unreadable).
func memoryContent(d *Daemon, id string) string {
	m, err := Call(d, app.MemoryGet, app.MemoryID{ID: id})
	if err != nil {
		return ""
	}
	return m.Content
}

// rowConflicts is d's conflict records of memory id.
func rowConflicts(d *Daemon, id string) []string {
	page, err := Call(d, app.ConflictsList, app.ConflictListIn{Table: "memories", RowID: id})
	if err != nil {
		return nil
	}
	var out []string
	for _, c := range page.Conflicts {
		var w, l memory.Memory
		_ = json.Unmarshal(c.WinningData, &w)
		_ = json.Unmarshal(c.LosingData, &l)
		out = append(out, c.ID+" "+w.Content+" > "+l.Content)
	}
	return out
}

// A restored copy of a satellite that holds the seed (init --import)
// reenrolls with no invite (it certifies its new id itself), and a memory
// edited on both branches is not lost: home and the copy hold the same live
// version and the same conflict record, whose loser is the other edit.
func TestSeedHolderCopyReenrollsKeepingBothEdits(t *testing.T) {
	home := NewDaemon(t, "home", nil)
	home.Start()
	s := ImportDaemon(t, "spare", home)
	s.Start()
	home.MustCLI("instance", "add", s.URL())
	Enrolled(t, home, s)
	oldID := s.instanceID()

	shared := Must(s, app.MemoryCreate, app.MemoryCreateIn{Content: "shared before the backup", Project: "fork"}).ID
	common := addMemories(t, s, "common", 1)
	Eventually(t, syncTimeout, "home to hold the common writes", func() bool {
		return memoryContent(home, shared) == "shared before the backup" && holdsOnce(t, home, common, 2)
	})
	s.Stop()
	backup := filepath.Join(t.TempDir(), "backup")
	copyDir(t, s.Home, backup)
	s.Start()
	genuineEdit := "shared, edited on the genuine branch"
	Must(s, app.MemoryUpdate, app.MemoryUpdateIn{ID: shared, Content: &genuineEdit})
	genuine := addMemories(t, s, "genuine", 2)
	Eventually(t, syncTimeout, "home to hold the genuine writes", func() bool {
		return memoryContent(home, shared) == genuineEdit && holdsOnce(t, home, append(common, genuine...), 4)
	})
	s.Stop()

	home.Stop()
	copyDir(t, backup, s.Home)
	s.Start()
	forkEdit := "shared, edited on the fork branch"
	Must(s, app.MemoryUpdate, app.MemoryUpdateIn{ID: shared, Content: &forkEdit})
	forkWrites := addMemories(t, s, "fork branch", 2)
	home.Start()
	Eventually(t, syncTimeout, "the restored copy to know its feed forked", func() bool {
		st, err := Call(s, app.SyncStatusOp, app.NoInput{})
		return err == nil && st.Forked != nil
	})

	// An invite is refused where the seed is: it certifies itself.
	if _, errOut, err := s.CLI("instance", "reenroll", "--join", Invite(home, "spare")); err == nil || !strings.Contains(errOut, "without an invite") {
		t.Fatalf("reenroll of a seed holder with an invite: %v %q", err, errOut)
	}
	if out := s.MustCLI("instance", "reenroll"); !strings.Contains(out, "reenrolled") {
		t.Fatalf("reenroll: %s", out)
	}
	Eventually(t, syncTimeout, "the copy to restart under a new id", func() bool {
		h, err := Call(s, app.InstanceHealth, app.HealthIn{})
		return err == nil && h.InstanceID != "" && h.InstanceID != oldID
	})
	Enrolled(t, home, s)

	others := append(append(append([]string{}, common...), genuine...), forkWrites...)
	for _, d := range []*Daemon{home, s} {
		Eventually(t, syncTimeout, d.Name+" to hold both branches once", func() bool { return holdsOnce(t, d, others, len(others)+1) })
	}
	// The same live version and the same record on both, holding both edits.
	var live string
	var recs []string
	Eventually(t, syncTimeout, "home and the copy to agree on the shared memory's conflict", func() bool {
		live = memoryContent(home, shared)
		recs = rowConflicts(home, shared)
		return live != "" && live == memoryContent(s, shared) && len(recs) == 1 &&
			strings.Join(recs, "|") == strings.Join(rowConflicts(s, shared), "|")
	})
	if want := forkEdit + " > " + genuineEdit; !strings.HasSuffix(recs[0], want) && !strings.HasSuffix(recs[0], genuineEdit+" > "+forkEdit) {
		t.Fatalf("the conflict record of the memory edited on both branches: %q (live %q)", recs[0], live)
	}
	if !strings.Contains(recs[0], live+" > ") {
		t.Fatalf("the record's winner is not the live version: %q (live %q)", recs[0], live)
	}
	t.Logf("figure: the memory edited on both branches: live %q; record %s", live, recs[0])
}
