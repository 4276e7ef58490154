package e2e

import (
	"encoding/json"
	"fmt"
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

func TestConcurrentEditsConvergeWithOneConflictRecord(t *testing.T) {
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
	_, ops := conflictIDs(home)
	if ops[ids[0]] != "update" {
		t.Fatalf("conflict op = %q, want update", ops[ids[0]])
	}
	// The loser is kept: both texts are in the record.
	c := Must(home, app.ConflictsGet, app.ConflictID{ID: ids[0]})
	texts := []string{contentOf(t, c.WinningData), contentOf(t, c.LosingData)}
	for _, want := range []string{"laptop's edit", "vps's edit"} {
		if !slices.Contains(texts, want) {
			t.Fatalf("conflict record lacks %q: %+v", want, c)
		}
	}
	for _, d := range []*Daemon{home, a, b} {
		if n := Must(d, app.NotificationsList, app.PageIn{}); n.Unread != 1 {
			t.Fatalf("%s: %v unread notifications, want 1", d.Name, n.Unread)
		}
	}
	if out := a.MustCLI("conflicts", "list"); !strings.Contains(out, ids[0]) {
		t.Fatalf("crow conflicts list lacks %s:\n%s", ids[0], out)
	}
	if out := b.MustCLI("conflicts", "show", ids[0]); !strings.Contains(out, "overwritten") {
		t.Fatalf("crow conflicts show:\n%s", out)
	}
}

func TestDeleteVersusUpdateConflict(t *testing.T) {
	home, a, b, id := threeConverged(t)
	cut(a)
	cut(b)
	if res, err := Call(a, app.MemoryDelete, app.MemoryID{ID: id}); err != nil || !res.Deleted {
		t.Fatalf("delete: %+v %v", res, err)
	}
	if _, err := Call(b, app.MemoryUpdate, app.MemoryUpdateIn{ID: id, Importance: ptr(9)}); err != nil {
		t.Fatalf("patch: %v", err)
	}
	heal(a)
	heal(b)
	ids := sameEverywhere(t, id, 1, home, a, b)
	if _, ops := conflictIDs(b); ops[ids[0]] != "delete" {
		t.Fatalf("conflict op = %q, want delete", ops[ids[0]])
	}
}

func TestInsertCollisionOnGenericTable(t *testing.T) {
	home, sats := cluster(t, "laptop", "vps")
	a, b := sats[0], sats[1]
	Eventually(t, syncTimeout, "convergence", func() bool { return converged(home, a, b) })
	cut(a)
	cut(b)
	for d, text := range map[*Daemon]string{a: `"milk"`, b: `"eggs"`} {
		in := app.RowPutIn{Table: "notes", RowID: "groceries", Data: map[string]json.RawMessage{"text": json.RawMessage(text)}}
		if _, err := Call(d, app.TablesPut, in); err != nil {
			t.Fatalf("%s: put: %v", d.Name, err)
		}
	}
	heal(a)
	heal(b)
	var ids []string
	Eventually(t, syncTimeout, "the collision recorded everywhere", func() bool {
		ids, _ = conflictIDs(home)
		ia, _ := conflictIDs(a)
		ib, _ := conflictIDs(b)
		return len(ids) == 1 && reflect.DeepEqual(ids, ia) && reflect.DeepEqual(ids, ib)
	})
	if _, ops := conflictIDs(a); ops[ids[0]] != "insert" {
		t.Fatalf("conflict op = %q, want insert", ops[ids[0]])
	}
	ra := Must(a, app.TablesGet, app.RowIn{Table: "notes", RowID: "groceries"})
	rb := Must(b, app.TablesGet, app.RowIn{Table: "notes", RowID: "groceries"})
	if !sameJSON(t, ra.Data, rb.Data) {
		t.Fatalf("live rows differ: %s vs %s", ra.Data, rb.Data)
	}
}

func TestIdenticalAndCausalEditsMakeNoConflict(t *testing.T) {
	home, a, b, id := threeConverged(t)
	// Identical concurrent edits are noise.
	cut(a)
	cut(b)
	for _, d := range []*Daemon{a, b} {
		if _, err := Call(d, app.MemoryUpdate, app.MemoryUpdateIn{ID: id, Content: ptr("the same fix")}); err != nil {
			t.Fatalf("%s: %v", d.Name, err)
		}
	}
	heal(a)
	heal(b)
	sameEverywhere(t, id, 0, home, a, b)
	// Edits that saw each other, delivered by every route (directly and
	// re-delivered through home), are fast-forwards or stale skips.
	for i, d := range []*Daemon{a, b, home, a} {
		text := fmt.Sprintf("edit %d", i)
		if _, err := Call(d, app.MemoryUpdate, app.MemoryUpdateIn{ID: id, Content: &text}); err != nil {
			t.Fatalf("%s: %v", d.Name, err)
		}
		Eventually(t, syncTimeout, "edit to reach everyone", func() bool {
			for _, o := range []*Daemon{home, a, b} {
				if m := memoryOf(o, id); m == nil || m.Content != text {
					return false
				}
			}
			return true
		})
	}
	if ids := sameEverywhere(t, id, 0, home, a, b); len(ids) != 0 {
		t.Fatalf("causal edits made conflicts: %v", ids)
	}
}

func TestOneNotificationForManyConflicts(t *testing.T) {
	home, sats := cluster(t, "laptop")
	a := sats[0]
	var ids []string
	for i := 0; i < 5; i++ {
		ids = append(ids, Must(home, app.MemoryCreate, app.MemoryCreateIn{Content: fmt.Sprintf("memory %d", i)}).ID)
	}
	Eventually(t, syncTimeout, "memories on laptop", func() bool { return memoryOf(a, ids[4]) != nil })
	cut(a)
	for _, id := range ids {
		Must(home, app.MemoryUpdate, app.MemoryUpdateIn{ID: id, Content: ptr("home " + id)})
		Must(a, app.MemoryUpdate, app.MemoryUpdateIn{ID: id, Content: ptr("laptop " + id)})
	}
	heal(a)
	Eventually(t, syncTimeout, "five conflicts", func() bool {
		x, _ := conflictIDs(home)
		y, _ := conflictIDs(a)
		return len(x) == 5 && reflect.DeepEqual(x, y)
	})
	for _, d := range []*Daemon{home, a} {
		if n := Must(d, app.NotificationsList, app.PageIn{}); len(n.Notifications) != 1 || n.Unread != 1 {
			t.Fatalf("%s: notifications = %+v, want exactly one unread", d.Name, n)
		}
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

// The recovery view's actions on real daemons: a conflict restored on one
// instance (CLI) brings the overwritten text back on all three, and the
// record reads resolved (restore) everywhere; a second conflict kept through
// REST on another instance reads resolved (keep) everywhere; restore refuses
// a stale conflict with a 409 and changes nothing.
func TestRecoveryActionsReplicate(t *testing.T) {
	home, a, b, id := threeConverged(t)
	edit := func(d *Daemon, mid, text string) {
		t.Helper()
		if _, err := Call(d, app.MemoryUpdate, app.MemoryUpdateIn{ID: mid, Content: &text}); err != nil {
			t.Fatalf("%s: patch: %v", d.Name, err)
		}
	}
	cut(a)
	cut(b)
	edit(a, id, "laptop's edit")
	edit(b, id, "vps's edit")
	heal(a)
	heal(b)
	ids := sameEverywhere(t, id, 1, home, a, b)
	c := conflictOn(home, ids[0])
	lost := contentOf(t, c.LosingData)

	out := a.MustCLI("conflicts", "restore", ids[0])
	if !strings.Contains(out, "resolved") {
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

	// A second conflict, then the row changes again: restore is stale.
	cut(a)
	cut(b)
	edit(a, id, "laptop again")
	edit(b, id, "vps again")
	heal(a)
	heal(b)
	ids2 := sameEverywhere(t, id, 2, home, a, b)
	var second string
	for _, cid := range ids2 {
		if cid != ids[0] {
			second = cid
		}
	}
	edit(home, id, "home moved on")
	Eventually(t, syncTimeout, "home's edit everywhere", func() bool {
		ma, mb := memoryOf(a, id), memoryOf(b, id)
		return ma != nil && mb != nil && ma.Content == "home moved on" && mb.Content == "home moved on"
	})
	if _, err := Call(b, app.ConflictsRestore, app.ConflictID{ID: second}); client.StatusOf(err) != 409 || client.KindOf(err) != app.KindConflict || !strings.Contains(fmt.Sprint(err), "stale") {
		t.Fatalf("stale restore: %v (status %d)", err, client.StatusOf(err))
	}
	if m := memoryOf(b, id); m == nil || m.Content != "home moved on" {
		t.Fatalf("a refused restore changed the row: %+v", m)
	}
	// Keep it on b instead: resolved everywhere.
	if c, err := Call(b, app.ConflictsKeep, app.ConflictID{ID: second}); err != nil || c.Resolution != "keep" {
		t.Fatalf("keep = %+v %v", c, err)
	}
	Eventually(t, syncTimeout, "the keep on every instance", func() bool {
		for _, d := range []*Daemon{home, a} {
			if c := conflictOn(d, second); !c.Resolved || c.Resolution != "keep" {
				return false
			}
		}
		return true
	})
	for _, d := range []*Daemon{home, a, b} {
		if m := memoryOf(d, id); m == nil || m.Content != "home moved on" {
			t.Fatalf("%s: keep changed the row: %+v", d.Name, m)
		}
	}
}
