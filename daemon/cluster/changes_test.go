package cluster_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/changes"
	"github.com/crow-sync/crow/daemon/cluster"
)

// changesOf calls GET /v1/changes on n with query q.
func changesOf(t *testing.T, n *cluster.Node, q url.Values) app.ChangesOut {
	t.Helper()
	var out app.ChangesOut
	n.MustDo(200, "GET", "/v1/changes?"+q.Encode(), nil, &out)
	return out
}

// projectOf returns the changes of project p in out.
func projectOf(out app.ChangesOut, p string) changes.ProjectChanges {
	for _, pc := range out.Projects {
		if pc.Project == p {
			return pc
		}
	}
	return changes.ProjectChanges{}
}

// itemOf returns the item of memory id in out.
func itemOf(out app.ChangesOut, id string) (changes.Item, bool) {
	for _, pc := range out.Projects {
		for _, it := range pc.Items {
			if it.ID == id {
				return it, true
			}
		}
	}
	return changes.Item{}, false
}

// TestChangesSince: home B, satellites A and C; a client of A keeps a cursor.
// After it, B adds a memory and deletes one, C forgets one and edits one, A
// writes one of its own, B consolidates a state version, and B and C edit the
// same memory while partitioned (a conflict). A's changes since the cursor
// list exactly those of B and C, per project, with instance names, a forget
// and a delete as such; the state version and the open conflict appear. The
// same client calling again without a cursor gets exactly that (its last
// cursor was remembered), then nothing new; the returned cursor also lists
// nothing new; a bad cursor is a 400.
func TestChangesSince(t *testing.T) {
	c := cluster.New(t, 3, cluster.Options{Names: []string{"B", "A", "C"}, Timeout: 60 * time.Second})
	b, a, cc := c.Node("B"), c.Node("A"), c.Node("C")

	var del, forg, conf, edit memory
	b.MustDo(201, "POST", "/v1/memory", map[string]any{"content": "to be deleted by B", "project": "p"}, &del)
	cc.MustDo(201, "POST", "/v1/memory", map[string]any{"content": "to be forgotten by C", "project": "p"}, &forg)
	b.MustDo(201, "POST", "/v1/memory", map[string]any{"content": "edited on both sides", "project": "p"}, &conf)
	cc.MustDo(201, "POST", "/v1/memory", map[string]any{"content": "to be edited by C", "project": "q"}, &edit)
	c.Eventually("the first memories numbered on A", func() bool {
		for _, id := range []string{del.ID, forg.ID, conf.ID, edit.ID} {
			var v numbered
			if st, _ := a.Do("GET", "/v1/memory/"+id, nil, &v); st != 200 || v.Number == nil {
				return false
			}
		}
		return true
	})
	first := changesOf(t, a, url.Values{"client": {"t"}})
	if first.Since != "" || first.Cursor == "" || first.Client != "t" {
		t.Fatalf("first call: since %q cursor %q client %q", first.Since, first.Cursor, first.Client)
	}
	if p := projectOf(first, "p"); p.Added != 3 {
		t.Fatalf("first call, project p: %+v", p)
	}
	cursor := first.Cursor

	var own, added memory
	a.MustDo(201, "POST", "/v1/memory", map[string]any{"content": "A's own write", "project": "p"}, &own)
	b.MustDo(201, "POST", "/v1/memory", map[string]any{"content": "added on B after the cursor", "project": "p"}, &added)
	b.MustDo(200, "DELETE", "/v1/memory/"+del.ID, nil, nil)
	cc.MustDo(200, "POST", "/v1/memory/"+forg.ID+"/forget", nil, nil)
	cc.MustDo(200, "PATCH", "/v1/memory/"+edit.ID, map[string]any{"content": "edited by C"}, nil)
	b.MustDo(200, "POST", "/v1/project/p/state/ops", map[string]any{"ops": []any{map[string]any{"op": "set_focus", "focus": "changes since"}}}, nil)
	c.Eventually("A to have B's and C's writes", func() bool {
		out := changesOf(t, a, url.Values{"since": {cursor}, "client": {"poll"}})
		it, ok := itemOf(out, added.ID)
		p, q := projectOf(out, "p"), projectOf(out, "q")
		return ok && it.Number != nil && p.Added == 1 && p.Deleted == 1 && p.Forgotten == 1 && q.Changed == 1 && len(out.StateVersions) == 1
	})
	c.Partition([]string{"B", "A"}, []string{"C"})
	b.MustDo(200, "PATCH", "/v1/memory/"+conf.ID, map[string]any{"content": "B's edit"}, nil)
	cc.MustDo(200, "PATCH", "/v1/memory/"+conf.ID, map[string]any{"content": "C's edit"}, nil)
	c.Heal()
	var want app.ChangesOut
	c.Eventually("A to record the conflict", func() bool {
		want = changesOf(t, a, url.Values{"since": {cursor}, "client": {"poll"}})
		return want.Conflicts.Open == 1 && projectOf(want, "p").Changed == 1
	})

	// What the client of A gets without a cursor: since its last call.
	got := changesOf(t, a, url.Values{"client": {"t"}})
	if got.Since != cursor {
		t.Errorf("since = %q, want the remembered %q", got.Since, cursor)
	}
	if got.Total != 5 || got.More {
		t.Errorf("total %d more %v, want 5 rows: %+v", got.Total, got.More, got.Projects)
	}
	p, q := projectOf(got, "p"), projectOf(got, "q")
	if p.Counts != (changes.Counts{Added: 1, Changed: 1, Deleted: 1, Forgotten: 1}) || q.Counts != (changes.Counts{Changed: 1}) || len(got.Projects) != 2 {
		t.Errorf("counts: p %+v, q %+v, projects %d", p.Counts, q.Counts, len(got.Projects))
	}
	if _, listed := itemOf(got, own.ID); listed {
		t.Error("A's own write is listed")
	}
	check := func(id, change, instance, content string) {
		t.Helper()
		it, ok := itemOf(got, id)
		switch {
		case !ok:
			t.Errorf("%s (%s) not listed", id, change)
		case it.Change != change || (instance != "" && it.Instance != instance) || it.Content != content || it.Number == nil:
			t.Errorf("%s: %+v, want %s by %s with content %q and a number", id, it, change, instance, content)
		}
	}
	check(added.ID, changes.Added, "B", "added on B after the cursor")
	check(del.ID, changes.Deleted, "B", "to be deleted by B")
	check(forg.ID, changes.Forgotten, "C", "")
	check(edit.ID, changes.Changed, "C", "edited by C")
	if it, _ := itemOf(got, conf.ID); it.Change != changes.Changed || (it.Instance != "B" && it.Instance != "C") {
		t.Errorf("the conflicting memory: %+v", it)
	}
	if it, _ := itemOf(got, forg.ID); it.Project != "p" {
		t.Errorf("the forgotten memory's project: %+v", it)
	}
	if len(got.StateVersions) != 1 || got.StateVersions[0].Project != "p" || got.StateVersions[0].Version != 1 || got.StateVersions[0].Instance != "B" {
		t.Errorf("state versions: %+v", got.StateVersions)
	}
	if len(got.Conflicts.Items) != 1 || got.Conflicts.Items[0].RowID != conf.ID ||
		!(got.Conflicts.Items[0].WinningInstance == "B" && got.Conflicts.Items[0].LosingInstance == "C" ||
			got.Conflicts.Items[0].WinningInstance == "C" && got.Conflicts.Items[0].LosingInstance == "B") {
		t.Errorf("conflicts: %+v", got.Conflicts)
	}

	// Nothing new since: by the remembered cursor, and by the returned one
	// (the cursor itself may move on: home's numbering and anchoring records
	// are not listed).
	again := changesOf(t, a, url.Values{"client": {"t"}})
	if again.Since != got.Cursor || again.Total != 0 || len(again.Projects) != 0 || len(again.StateVersions) != 0 {
		t.Errorf("second call: %+v", again)
	}
	if byCursor := changesOf(t, a, url.Values{"since": {got.Cursor}}); byCursor.Total != 0 || len(byCursor.StateVersions) != 0 {
		t.Errorf("by the returned cursor: %+v", byCursor)
	}
	// limit bounds the items, not the counts.
	if one := changesOf(t, a, url.Values{"since": {cursor}, "limit": {"1"}, "client": {"poll"}}); !one.More || one.Total != 5 {
		t.Errorf("limit 1: total %d more %v", one.Total, one.More)
	}
	var bad struct {
		Error string `json:"error"`
	}
	if st, err := a.Do("GET", "/v1/changes?since=not-a-cursor", nil, &bad); st != 400 || err != nil || !strings.Contains(bad.Error, "cursor") {
		t.Errorf("a bad cursor: %d %v %q", st, err, bad.Error)
	}
}
