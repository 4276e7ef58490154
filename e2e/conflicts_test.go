// Conflicts on real daemon processes: what only real processes show (the
// CLI, a kill -9). The conflict rules themselves are scenario tests on an
// in-process cluster, daemon/cluster/testdata/*.txt (run by
// daemon/cluster/scenario_test.go). Moved there:
//
//	TestConcurrentEditsConvergeWithOneConflictRecord   concurrent_edits.txt (the CLI part stays below)
//	TestDeleteVersusUpdateConflict                     delete_vs_update.txt
//	TestInsertCollisionOnGenericTable                  insert_collision.txt
//	TestIdenticalAndCausalEditsMakeNoConflict          no_conflict.txt
//	TestOneNotificationForManyConflicts                notification_burst.txt
//	TestRecoveryActionsReplicate, restore              restore.txt (the CLI part stays below)
//	TestRecoveryActionsReplicate, stale restore, keep  stale_restore_keep.txt
//
// (three_way.txt is new: three versions of one row, one record per pair.)

package e2e

import (
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/client"
	"github.com/crow-sync/crow/conflicts"
	"github.com/crow-sync/crow/memory"
)

// cut pauses replication on d (disconnects and refuses every peer).
func cut(d *Daemon) {
	d.t.Helper()
	d.MustCLI("sync", "pause")
	Eventually(d.t, syncTimeout, d.Name+" to disconnect", func() bool {
		for _, p := range Must(d, app.SyncStatusOp, app.NoInput{}).Peers {
			if p.Connected {
				return false
			}
		}
		return true
	})
}

func heal(d *Daemon) { d.t.Helper(); d.MustCLI("sync", "resume") }

// conflictIDs lists d's conflict ids (sorted) and their ops.
func conflictIDs(d *Daemon) ([]string, map[string]string) {
	d.t.Helper()
	list := Must(d, app.ConflictsList, app.ConflictListIn{})
	var ids []string
	ops := map[string]string{}
	for _, c := range list.Conflicts {
		ids = append(ids, c.ID)
		ops[c.ID] = string(c.Op)
	}
	sort.Strings(ids)
	return ids, ops
}

// memoryOf returns what d serves for a memory (nil when absent or deleted).
func memoryOf(d *Daemon, id string) *memory.Memory {
	d.t.Helper()
	m, err := Call(d, app.MemoryGet, app.MemoryID{ID: id})
	if client.StatusOf(err) == 404 {
		return nil
	}
	if err != nil {
		d.t.Fatalf("%s: GET memory: %v", d.Name, err)
	}
	m.Number = nil // home-assigned numbering is not part of the row
	m.EventHash = nil
	return &m
}

// contentOf is the content of a memory row's data in a conflict record.
func contentOf(t testing.TB, data json.RawMessage) string {
	t.Helper()
	var m memory.Memory
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("a memory row's data %s: %v", data, err)
	}
	return m.Content
}

// sameEverywhere waits until every daemon serves the same memory and the
// same conflict records, and returns the conflict ids.
func sameEverywhere(t *testing.T, id string, wantConflicts int, ds ...*Daemon) []string {
	t.Helper()
	var ids []string
	defer func() {
		if t.Failed() {
			for _, d := range ds {
				got, ops := conflictIDs(d)
				st, _ := Call(d, app.SyncStatusOp, app.NoInput{})
				t.Logf("%s: memory %+v; conflicts %v %v; sync %+v", d.Name, memoryOf(d, id), got, ops, st)
			}
		}
	}()
	Eventually(t, syncTimeout, "rows and conflict records to converge", func() bool {
		first := memoryOf(ds[0], id)
		ids, _ = conflictIDs(ds[0])
		if len(ids) != wantConflicts {
			return false
		}
		for _, d := range ds[1:] {
			other, _ := conflictIDs(d)
			if !reflect.DeepEqual(memoryOf(d, id), first) || !reflect.DeepEqual(other, ids) {
				return false
			}
		}
		return true
	})
	return ids
}

func threeConverged(t *testing.T) (*Daemon, *Daemon, *Daemon, string) {
	home, sats := cluster(t, "laptop", "vps")
	a, b := sats[0], sats[1]
	id := Must(home, app.MemoryCreate, app.MemoryCreateIn{Content: "the original text", Project: "crow"}).ID
	Eventually(t, syncTimeout, "memory on every instance", func() bool { return memoryOf(a, id) != nil && memoryOf(b, id) != nil })
	return home, a, b, id
}

// TestConcurrentEditAndRestoreOverCLI: concurrent edits on two
// satellites make one conflict record, the same on all three daemons, that
// the CLI lists and shows; restoring it with the CLI brings the overwritten
// text back everywhere and resolves the record everywhere, and a second
// restore (on another instance) is refused.
func TestConcurrentEditAndRestoreOverCLI(t *testing.T) {
	home, a, b, id := threeConverged(t)
	cut(a)
	cut(b)
	for _, e := range []struct {
		d    *Daemon
		text string
	}{{a, "laptop's edit"}, {b, "vps's edit"}} {
		if _, err := Call(e.d, app.MemoryUpdate, app.MemoryUpdateIn{ID: id, Content: &e.text}); err != nil {
			t.Fatalf("%s: patch: %v", e.d.Name, err)
		}
	}
	heal(a)
	heal(b)
	ids := sameEverywhere(t, id, 1, home, a, b)
	c := conflictOn(home, ids[0])
	texts := []string{contentOf(t, c.WinningData), contentOf(t, c.LosingData)}
	for _, want := range []string{"laptop's edit", "vps's edit"} {
		if !slices.Contains(texts, want) {
			t.Fatalf("conflict record lacks %q: %+v", want, c)
		}
	}
	if out := a.MustCLI("conflicts", "list"); !strings.Contains(out, ids[0]) {
		t.Fatalf("crow conflicts list lacks %s:\n%s", ids[0], out)
	}
	if out := b.MustCLI("conflicts", "show", ids[0]); !strings.Contains(out, "overwritten") {
		t.Fatalf("crow conflicts show:\n%s", out)
	}

	lost := contentOf(t, c.LosingData)
	if out := a.MustCLI("conflicts", "restore", ids[0]); !strings.Contains(out, "resolved") {
		t.Fatalf("crow conflicts restore printed %q", out)
	}
	Eventually(t, syncTimeout, "the restored text and the resolution on every instance", func() bool {
		for _, d := range []*Daemon{home, a, b} {
			m := memoryOf(d, id)
			c := conflictOn(d, ids[0])
			if m == nil || m.Content != lost || !c.Resolved || c.Resolution != "restore" {
				return false
			}
		}
		return true
	})
	if out := b.MustCLI("conflicts", "list", "--unresolved"); !strings.Contains(out, "(no conflicts)") {
		t.Fatalf("b still lists unresolved conflicts:\n%s", out)
	}
	// Restoring again is refused: it is resolved (on b, where it was not restored).
	if _, errOut, err := b.CLI("conflicts", "restore", ids[0]); err == nil || !strings.Contains(errOut, "already resolved") {
		t.Fatalf("second restore: err=%v stderr=%q", err, errOut)
	}
}

func TestKill9MidApplyNothingTwiceNothingSkipped(t *testing.T) {
	home, sats := cluster(t, "laptop")
	a := sats[0]
	a.Stop()
	const n = 300
	writeN(t, home, n, "bulk")
	a.Start()
	// Kill it as soon as it has started applying.
	Eventually(t, syncTimeout, "laptop to start applying", func() bool {
		return len(Must(a, app.MemoryList, app.MemoryListIn{Limit: 1}).Memories) > 0
	})
	a.Kill()
	a.Start()
	Eventually(t, syncTimeout, "laptop to hold every memory", func() bool { return countMemories(a) == n })
	if got := countMemories(home); got != n {
		t.Fatalf("home has %d memories", got)
	}
	if ids, _ := conflictIDs(a); len(ids) != 0 {
		t.Fatalf("re-applied entries made conflicts: %v", ids)
	}
}

func countMemories(d *Daemon) int {
	d.t.Helper()
	total, cursor := 0, ""
	for {
		page := Must(d, app.MemoryList, app.MemoryListIn{Limit: 1000, Cursor: cursor})
		total += len(page.Memories)
		cursor = page.NextCursor
		if cursor == "" {
			return total
		}
	}
}

// conflictOn reads one conflict record from d.
func conflictOn(d *Daemon, id string) conflicts.Conflict {
	d.t.Helper()
	return Must(d, app.ConflictsGet, app.ConflictID{ID: id})
}
