package e2e

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// cut pauses replication on d (disconnects and refuses every peer).
func cut(d *Daemon) {
	d.t.Helper()
	d.MustCLI("sync", "pause")
	Eventually(d.t, syncTimeout, d.Name+" to disconnect", func() bool {
		_, body := d.Do("GET", "/v1/sync/status", nil)
		for _, p := range body["peers"].([]any) {
			if p.(map[string]any)["connected"] == true {
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
	st, body := d.Do("GET", "/v1/sync/conflicts", nil)
	if st != 200 {
		d.t.Fatalf("%s: conflicts = %d %v", d.Name, st, body)
	}
	var ids []string
	ops := map[string]string{}
	for _, c := range body["conflicts"].([]any) {
		m := c.(map[string]any)
		ids = append(ids, m["id"].(string))
		ops[m["id"].(string)] = m["op"].(string)
	}
	sort.Strings(ids)
	return ids, ops
}

// rowOf returns what d serves for a memory (nil when absent or deleted).
func memoryOf(d *Daemon, id string) map[string]any {
	d.t.Helper()
	st, body := d.Do("GET", "/v1/memory/"+id, nil)
	if st == 404 {
		return nil
	}
	if st != 200 {
		d.t.Fatalf("%s: GET memory = %d %v", d.Name, st, body)
	}
	delete(body, "number") // home-assigned numbering is not part of the row
	delete(body, "event_hash")
	return body
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
				_, st := d.Do("GET", "/v1/sync/status", nil)
				t.Logf("%s: memory %v; conflicts %v %v; sync %v", d.Name, memoryOf(d, id), got, ops, st)
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
	st, m := home.Do("POST", "/v1/memory", map[string]any{"content": "the original text", "project": "crow"})
	if st != 201 {
		t.Fatalf("write: %d %v", st, m)
	}
	id := m["id"].(string)
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
		if st, body := e.d.Do("PATCH", "/v1/memory/"+id, map[string]any{"content": e.text}); st != 200 {
			t.Fatalf("%s: patch = %d %v", e.d.Name, st, body)
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
	_, c := home.Do("GET", "/v1/sync/conflicts/"+ids[0], nil)
	texts := fmt.Sprint(c["winning_data"], c["losing_data"])
	for _, want := range []string{"laptop's edit", "vps's edit"} {
		if !strings.Contains(texts, want) {
			t.Fatalf("conflict record lacks %q: %v", want, c)
		}
	}
	for _, d := range []*Daemon{home, a, b} {
		_, n := d.Do("GET", "/v1/notifications", nil)
		if n["unread"].(float64) != 1 {
			t.Fatalf("%s: %v unread notifications, want 1", d.Name, n["unread"])
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
	if st, body := a.Do("DELETE", "/v1/memory/"+id, nil); st != 200 {
		t.Fatalf("delete: %d %v", st, body)
	}
	if st, body := b.Do("PATCH", "/v1/memory/"+id, map[string]any{"importance": 9}); st != 200 {
		t.Fatalf("patch: %d %v", st, body)
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
	if st, body := a.Do("PUT", "/v1/tables/notes/rows/groceries", map[string]any{"text": "milk"}); st != 200 {
		t.Fatalf("put: %d %v", st, body)
	}
	if st, body := b.Do("PUT", "/v1/tables/notes/rows/groceries", map[string]any{"text": "eggs"}); st != 200 {
		t.Fatalf("put: %d %v", st, body)
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
	_, ra := a.Do("GET", "/v1/tables/notes/rows/groceries", nil)
	_, rb := b.Do("GET", "/v1/tables/notes/rows/groceries", nil)
	if !reflect.DeepEqual(ra["data"], rb["data"]) {
		t.Fatalf("live rows differ: %v vs %v", ra["data"], rb["data"])
	}
}

func TestIdenticalAndCausalEditsMakeNoConflict(t *testing.T) {
	home, a, b, id := threeConverged(t)
	// Identical concurrent edits are noise.
	cut(a)
	cut(b)
	for _, d := range []*Daemon{a, b} {
		if st, body := d.Do("PATCH", "/v1/memory/"+id, map[string]any{"content": "the same fix"}); st != 200 {
			t.Fatalf("%s: %d %v", d.Name, st, body)
		}
	}
	heal(a)
	heal(b)
	sameEverywhere(t, id, 0, home, a, b)
	// Edits that saw each other, delivered by every route (directly and
	// re-delivered through home), are fast-forwards or stale skips.
	for i, d := range []*Daemon{a, b, home, a} {
		text := fmt.Sprintf("edit %d", i)
		if st, body := d.Do("PATCH", "/v1/memory/"+id, map[string]any{"content": text}); st != 200 {
			t.Fatalf("%s: %d %v", d.Name, st, body)
		}
		Eventually(t, syncTimeout, "edit to reach everyone", func() bool {
			for _, o := range []*Daemon{home, a, b} {
				if m := memoryOf(o, id); m == nil || m["content"] != text {
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
		_, m := home.Do("POST", "/v1/memory", map[string]any{"content": fmt.Sprintf("memory %d", i)})
		ids = append(ids, m["id"].(string))
	}
	Eventually(t, syncTimeout, "memories on laptop", func() bool { return memoryOf(a, ids[4]) != nil })
	cut(a)
	for _, id := range ids {
		home.Do("PATCH", "/v1/memory/"+id, map[string]any{"content": "home " + id})
		a.Do("PATCH", "/v1/memory/"+id, map[string]any{"content": "laptop " + id})
	}
	heal(a)
	Eventually(t, syncTimeout, "five conflicts", func() bool {
		x, _ := conflictIDs(home)
		y, _ := conflictIDs(a)
		return len(x) == 5 && reflect.DeepEqual(x, y)
	})
	for _, d := range []*Daemon{home, a} {
		_, n := d.Do("GET", "/v1/notifications", nil)
		if list := n["notifications"].([]any); len(list) != 1 || n["unread"].(float64) != 1 {
			t.Fatalf("%s: notifications = %v, want exactly one unread", d.Name, n)
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
		_, body := a.Do("GET", "/v1/memories/list?limit=1", nil)
		return len(body["memories"].([]any)) > 0
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
		_, body := d.Do("GET", "/v1/memories/list?limit=1000&cursor="+cursor, nil)
		total += len(body["memories"].([]any))
		cursor, _ = body["next_cursor"].(string)
		if cursor == "" {
			return total
		}
	}
}

// conflictOn reads one conflict record from d.
func conflictOn(d *Daemon, id string) map[string]any {
	d.t.Helper()
	st, c := d.Do("GET", "/v1/sync/conflicts/"+id, nil)
	if st != 200 {
		d.t.Fatalf("%s: conflict %s = %d %v", d.Name, id, st, c)
	}
	return c
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
		if st, body := d.Do("PATCH", "/v1/memory/"+mid, map[string]any{"content": text}); st != 200 {
			t.Fatalf("%s: patch = %d %v", d.Name, st, body)
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
	lost := c["losing_data"].(map[string]any)["content"].(string)

	out := a.MustCLI("conflicts", "restore", ids[0])
	if !strings.Contains(out, "resolved") {
		t.Fatalf("crow conflicts restore printed %q", out)
	}
	Eventually(t, syncTimeout, "the restored text and the resolution on every instance", func() bool {
		for _, d := range []*Daemon{home, a, b} {
			m := memoryOf(d, id)
			c := conflictOn(d, ids[0])
			if m == nil || m["content"] != lost || c["resolved"] != true || c["resolution"] != "restore" {
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
		return memoryOf(a, id)["content"] == "home moved on" && memoryOf(b, id)["content"] == "home moved on"
	})
	st, body := b.Do("POST", "/v1/sync/conflicts/"+second+"/restore", nil)
	if st != 409 || !strings.Contains(fmt.Sprint(body["error"]), "stale") {
		t.Fatalf("stale restore = %d %v", st, body)
	}
	if m := memoryOf(b, id); m["content"] != "home moved on" {
		t.Fatalf("a refused restore changed the row: %v", m)
	}
	// Keep it on b instead: resolved everywhere.
	if st, body := b.Do("POST", "/v1/sync/conflicts/"+second+"/keep", nil); st != 200 || body["resolution"] != "keep" {
		t.Fatalf("keep = %d %v", st, body)
	}
	Eventually(t, syncTimeout, "the keep on every instance", func() bool {
		for _, d := range []*Daemon{home, a} {
			if c := conflictOn(d, second); c["resolved"] != true || c["resolution"] != "keep" {
				return false
			}
		}
		return true
	})
	for _, d := range []*Daemon{home, a, b} {
		if m := memoryOf(d, id); m["content"] != "home moved on" {
			t.Fatalf("%s: keep changed the row: %v", d.Name, m)
		}
	}
}
