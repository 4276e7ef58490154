package records

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crow-sync/crow/clock"
	"github.com/crow-sync/crow/search"
	"github.com/crow-sync/crow/store"
	"github.com/crow-sync/crow/store/storetest"
)

func newService(t testing.TB) (*Service, *storetest.Env, *clock.Fake) {
	t.Helper()
	env := storetest.Start(t, t.TempDir())
	ix, err := search.Open(filepath.Join(t.TempDir(), "index"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- search.NewIndexer(env.DB, ix).Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		ix.Close()
	})
	clk := clock.NewFake(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	return NewService(env.DB, env.Writer, ix, Options{Clock: clk, SearchWait: time.Minute}), env, clk
}

// obj builds a row's data from key, JSON value pairs.
func obj(kv ...string) map[string]json.RawMessage {
	m := map[string]json.RawMessage{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = json.RawMessage(kv[i+1])
	}
	return m
}

func str(t *testing.T, r Record, k string) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(r.Data[k], &s); err != nil {
		t.Fatalf("%s of %s: %v (%s)", k, r.ID, err, r.Data[k])
	}
	return s
}

func field(err error) (string, bool) {
	var ve *ValidationError
	if !errors.As(err, &ve) {
		return "", false
	}
	return ve.Field, true
}

func TestValidationPerTable(t *testing.T) {
	s, _, _ := newService(t)
	ctx := context.Background()
	long := func(n int) string { return `"` + strings.Repeat("x", n) + `"` }
	cases := []struct {
		table string
		data  map[string]json.RawMessage
		field string // "" = accepted
	}{
		{"notes", obj("title", `"t"`, "content", `"c"`), ""},
		{"notes", obj("content", `"c"`), "title"},
		{"notes", obj("title", `"t"`), "content"},
		{"notes", obj("title", `"  "`, "content", `"c"`), "title"},
		{"notes", obj("title", `3`, "content", `"c"`), "title"},
		{"notes", obj("title", long(MaxTitle+1), "content", `"c"`), "title"},
		{"notes", obj("title", `"t"`, "content", `"c"`, "tags", `["a",""]`), "tags"},
		{"notes", obj("title", `"t"`, "content", `"c"`, "tags", `"a"`), "tags"},
		{"notes", obj("title", `"t"`, "content", `"c"`, "created_at", `"2020"`), "created_at"},
		{"notes", obj("title", `"t"`, "content", `"c"`, "mood", `{"any":["json"]}`), ""}, // extra fields kept
		{"sources", obj("url", `"https://example.org/a"`), ""},
		{"sources", obj("url", `"doi:10.1000/182"`), ""},
		{"sources", obj("url", `"example.org"`), "url"},
		{"sources", obj("url", `"https://exa mple.org"`), "url"},
		{"sources", obj("title", `"no url"`), "url"},
		{"contacts", obj("name", `"Ada"`), ""},
		{"contacts", obj("name", `"Ada"`, "email", `"ada@example.org"`), ""},
		{"contacts", obj("name", `"Ada"`, "email", `"Ada <ada@example.org>"`), "email"},
		{"contacts", obj("name", `"Ada"`, "email", `"ada@localhost"`), "email"},
		{"contacts", obj("email", `"ada@example.org"`), "name"},
		{"settings", obj("key", `"theme"`, "value", `{"dark":true}`), ""},
		{"settings", obj("key", `"theme"`), "value"},
		{"settings", obj("key", `"theme"`, "value", `null`), "value"},
		{"settings", obj("key", `" theme"`, "value", `1`), "key"},
		{"settings", obj("value", `1`), "key"},
		{"blog_posts", obj("title", `"Hello, World!"`, "body", `"b"`), ""},
		{"blog_posts", obj("title", `"t"`, "body", `"b"`, "slug", `"Not A Slug"`), "slug"},
		{"blog_posts", obj("title", `"t"`, "body", `"b"`, "status", `"archived"`), "status"},
		{"blog_posts", obj("title", `"t"`), "body"},
		{"blog_posts", obj("title", `"!!!"`, "body", `"b"`), "slug"}, // no slug can be made
	}
	for _, c := range cases {
		_, err := s.Create(ctx, c.table, c.data)
		if c.field == "" {
			if err != nil {
				t.Errorf("%s %v: %v", c.table, c.data, err)
			}
			continue
		}
		if f, ok := field(err); !ok || f != c.field {
			t.Errorf("%s %v: got %v, want a ValidationError on %s", c.table, c.data, err, c.field)
		}
	}
	if _, err := s.Create(ctx, "notes", obj("title", `"t"`, "content", `"c"`, "big", long(MaxExtra))); !isField(err, "") {
		t.Errorf("extra fields over MaxExtra: %v", err)
	}
	if _, err := s.Create(ctx, "projects", obj("name", `"x"`)); !errors.Is(err, ErrNoTable) {
		t.Errorf("projects: %v", err)
	}
}

func TestCreateGetUpdateDeleteList(t *testing.T) {
	s, env, clk := newService(t)
	ctx := context.Background()
	n, err := s.Create(ctx, "notes", obj("title", `"Badger"`, "content", `"value log GC"`, "tags", `["db","db","ops"]`, "mood", `"calm"`))
	if err != nil {
		t.Fatal(err)
	}
	if len(n.ID) != 26 || n.Table != "notes" || n.InstanceID != "inst-test" || str(t, n, "created_at") != "2026-12-01T10:00:00Z" {
		t.Fatalf("created %+v", n)
	}
	if string(n.Data["tags"]) != `["db","ops"]` || str(t, n, "mood") != "calm" {
		t.Fatalf("tags deduplicated, extra kept: %s", mustJSON(n.Data))
	}
	got, err := s.Get(ctx, "notes", n.ID)
	if err != nil || str(t, got, "content") != "value log GC" {
		t.Fatalf("get: %+v %v", got, err)
	}
	clk.Advance(time.Minute)
	up, err := s.Update(ctx, "notes", n.ID, obj("content", `"compaction"`, "mood", `null`))
	if err != nil {
		t.Fatal(err)
	}
	if str(t, up, "content") != "compaction" || str(t, up, "title") != "Badger" || up.Data["mood"] != nil ||
		str(t, up, "created_at") != "2026-12-01T10:00:00Z" || str(t, up, "updated_at") != "2026-12-01T10:01:00Z" {
		t.Fatalf("updated %s", mustJSON(up.Data))
	}
	if _, err := s.Update(ctx, "notes", n.ID, obj("title", `null`)); !isField(err, "title") {
		t.Errorf("removing a required field: %v", err)
	}
	if _, err := s.Update(ctx, "notes", n.ID, obj()); !isField(err, "") {
		t.Errorf("empty patch: %v", err)
	}
	if _, err := s.Update(ctx, "notes", "nope", obj("title", `"x"`)); !errors.Is(err, ErrNotFound) {
		t.Errorf("update of a missing note: %v", err)
	}
	// The stored row is what Get answers (nothing half-written by the refused patches).
	if got, _ := s.Get(ctx, "notes", n.ID); str(t, got, "title") != "Badger" {
		t.Errorf("after refused patches: %s", mustJSON(got.Data))
	}

	// Concurrent patches of different fields all apply.
	var wg sync.WaitGroup
	for _, p := range []map[string]json.RawMessage{obj("project", `"crow"`), obj("tags", `["x"]`), obj("extra1", `1`)} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.Update(ctx, "notes", n.ID, p); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if got, _ := s.Get(ctx, "notes", n.ID); str(t, got, "project") != "crow" || string(got.Data["tags"]) != `["x"]` || string(got.Data["extra1"]) != "1" {
		t.Errorf("concurrent patches: %s", mustJSON(got.Data))
	}

	// List: newest first with Desc, paged.
	n2, _ := s.Create(ctx, "notes", obj("title", `"Second"`, "content", `"c"`))
	p, err := s.List(ctx, "notes", ListOptions{Desc: true, Limit: 1})
	if err != nil || len(p.Records) != 1 || p.Records[0].ID != n2.ID || p.NextCursor == "" {
		t.Fatalf("page 1: %+v %v", p, err)
	}
	p, _ = s.List(ctx, "notes", ListOptions{Desc: true, Limit: 1, Cursor: p.NextCursor})
	if len(p.Records) != 1 || p.Records[0].ID != n.ID {
		t.Fatalf("page 2: %+v", p)
	}

	if err := s.Delete(ctx, "notes", n.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "notes", n.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("get after delete: %v", err)
	}
	if err := s.Delete(ctx, "notes", n.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("second delete: %v", err)
	}
	if p, _ := s.List(ctx, "notes", ListOptions{}); len(p.Records) != 1 {
		t.Errorf("list after delete: %+v", p)
	}
	// The delete is a tombstone written through the Writer (it replicates).
	row, err := env.DB.Get("notes", n.ID)
	if err != nil || !row.Deleted {
		t.Errorf("tombstone: %+v %v", row, err)
	}

	// Settings: the key is the row id; setting again replaces, created_at kept.
	set, err := s.Create(ctx, "settings", obj("key", `"theme"`, "value", `"dark"`))
	if err != nil || set.ID != "theme" {
		t.Fatalf("setting: %+v %v", set, err)
	}
	clk.Advance(time.Minute)
	set2, err := s.Create(ctx, "settings", obj("key", `"theme"`, "value", `{"mode":"light"}`))
	if err != nil || string(set2.Data["value"]) != `{"mode":"light"}` || str(t, set2, "created_at") != str(t, set, "created_at") {
		t.Fatalf("setting again: %s %v", mustJSON(set2.Data), err)
	}
	if _, err := s.Update(ctx, "settings", "theme", obj("key", `"other"`)); !isField(err, "key") {
		t.Errorf("changing a setting's key: %v", err)
	}

	// Blog posts: slug from the title, status draft.
	b, err := s.Create(ctx, "blog_posts", obj("title", `"Hello, Wörld 2"`, "body", `"b"`))
	if err != nil || str(t, b, "slug") != "hello-w-rld-2" || str(t, b, "status") != "draft" {
		t.Fatalf("blog post defaults: %s %v", mustJSON(b.Data), err)
	}
}

func isField(err error, want string) bool {
	f, ok := field(err)
	return ok && f == want
}

func TestContextCompositeKey(t *testing.T) {
	s, _, _ := newService(t)
	ctx := context.Background()
	k := ContextKey{Section: "style", Device: "laptop", Project: "crow"}
	if ContextRowID(k) != ContextRowID(ContextKey{Section: "style", Device: "laptop", Project: "crow"}) {
		t.Fatal("row id not deterministic")
	}
	distinct := map[string]ContextKey{}
	for _, c := range []ContextKey{k, {Section: "style"}, {Section: "style", Device: "laptop"}, {Section: "style", Project: "laptop"},
		{Section: "style\x00laptop"}, {Section: "stylelaptop"}} {
		id := ContextRowID(c)
		if o, dup := distinct[id]; dup {
			t.Fatalf("%+v and %+v share row %s", c, o, id)
		}
		distinct[id] = c
	}
	r, err := s.SetContext(ctx, k, "short answers")
	if err != nil || r.ID != ContextRowID(k) || str(t, r, "section") != "style" || str(t, r, "content") != "short answers" {
		t.Fatalf("set: %+v %v", r, err)
	}
	if _, err := s.SetContext(ctx, k, "longer answers"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetContext(ctx, ContextKey{Section: "style"}, "default style"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetContext(ctx, ContextKey{Section: "tools", Project: "crow"}, "go test"); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetContext(ctx, k)
	if err != nil || str(t, got, "content") != "longer answers" {
		t.Fatalf("get: %+v %v", got, err)
	}
	sections := func(f ContextFilter) []string {
		p, err := s.ListContext(ctx, f, ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range p.Records {
			out = append(out, str(t, r, "section")+"|"+str(t, r, "device")+"|"+str(t, r, "project"))
		}
		slices.Sort(out)
		return out
	}
	crow, empty, style := "crow", "", "style"
	if got := sections(ContextFilter{Project: &crow}); !slices.Equal(got, []string{"style|laptop|crow", "tools||crow"}) {
		t.Errorf("project crow: %v", got)
	}
	if got := sections(ContextFilter{Section: &style, Device: &empty}); !slices.Equal(got, []string{"style||"}) {
		t.Errorf("style, every device: %v", got)
	}
	if got := sections(ContextFilter{}); len(got) != 3 {
		t.Errorf("all: %v", got)
	}
	for _, bad := range []ContextKey{{}, {Section: " x"}, {Section: "x", Device: "a\nb"}, {Section: strings.Repeat("s", MaxContextPart+1)}} {
		if _, err := s.SetContext(ctx, bad, "c"); err == nil {
			t.Errorf("key %+v accepted", bad)
		}
	}
	if _, err := s.SetContext(ctx, k, " "); !isField(err, "content") {
		t.Errorf("blank content: %v", err)
	}
	if err := s.DeleteContext(ctx, k); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetContext(ctx, k); !errors.Is(err, ErrNotFound) {
		t.Errorf("after delete: %v", err)
	}
}

func TestSearchAcrossTables(t *testing.T) {
	s, env, _ := newService(t)
	ctx := context.Background()
	note, _ := s.Create(ctx, "notes", obj("title", `"Pelican migration"`, "content", `"`+strings.Repeat("filler words ", 40)+`the pelicans fly south in October"`))
	contact, _ := s.Create(ctx, "contacts", obj("name", `"Pelle Pelican"`, "email", `"pelle@example.org"`))
	s.Create(ctx, "settings", obj("key", `"bird"`, "value", `"pelican"`))
	s.SetContext(ctx, ContextKey{Section: "birds", Project: "zoo"}, "prefer pelican facts")
	// A memory row, as package memory writes it.
	if _, err := env.Writer.Write(ctx, store.Mutation{Table: store.TableMemories, RowID: "01JMEM", Op: store.OpInsert,
		Data: json.RawMessage(`{"id":"01JMEM","content":"Pelicans nest on islands\nsecond line","project":"zoo","importance":5}`)}); err != nil {
		t.Fatal(err)
	}

	hits, err := s.Search(ctx, SearchOptions{Query: "pelican"})
	if err != nil {
		t.Fatal(err)
	}
	byTable := map[string]Hit{}
	for _, h := range hits {
		byTable[h.Table] = h
	}
	if len(hits) != 5 || len(byTable) != 5 {
		t.Fatalf("hits %+v", hits)
	}
	if h := byTable["notes"]; h.ID != note.ID || h.Title != "Pelican migration" || !strings.HasPrefix(h.Snippet, "…") || !strings.Contains(h.Snippet, "pelicans fly south") || h.Score <= 0 {
		t.Errorf("note hit %+v", h)
	}
	if h := byTable["contacts"]; h.ID != contact.ID || h.Title != "Pelle Pelican" {
		t.Errorf("contact hit %+v", h)
	}
	if h := byTable["memories"]; h.ID != "01JMEM" || h.Title != "Pelicans nest on islands" {
		t.Errorf("memory hit %+v", h)
	}
	if h := byTable["settings"]; h.ID != "bird" || h.Snippet != `"pelican"` {
		t.Errorf("setting hit %+v", h)
	}
	if h := byTable["crow_context"]; h.Title != "birds · project zoo" {
		t.Errorf("context hit %+v", h)
	}
	hits, err = s.Search(ctx, SearchOptions{Query: "pelican", Tables: []string{"notes", "contacts"}})
	if err != nil || len(hits) != 2 {
		t.Fatalf("notes and contacts: %+v %v", hits, err)
	}
	if _, err := s.Search(ctx, SearchOptions{Query: "pelican", Tables: []string{"projects"}}); !isField(err, "tables") {
		t.Errorf("unsearchable table: %v", err)
	}
	if _, err := s.Search(ctx, SearchOptions{Query: " "}); !isField(err, "q") {
		t.Errorf("empty query: %v", err)
	}
	// Read-your-writes: a delete is seen by the next search.
	if err := s.Delete(ctx, "contacts", contact.ID); err != nil {
		t.Fatal(err)
	}
	hits, _ = s.Search(ctx, SearchOptions{Query: "pelle"})
	if len(hits) != 0 {
		t.Errorf("deleted contact found: %+v", hits)
	}
}

func TestSnippetAndCut(t *testing.T) {
	if got := snippet("a  b\n c", "b"); got != "a b c" {
		t.Errorf("short: %q", got)
	}
	long := strings.Repeat("é", 300) + " needle " + strings.Repeat("z", 300)
	got := snippet(long, "Needle")
	if !strings.HasPrefix(got, "…") || !strings.Contains(got, "needle") || len(got) > snippetLen+2*len("…") {
		t.Errorf("long: %q", got)
	}
	if got := cut("ééé", 3); got != "é…" {
		t.Errorf("cut at a rune: %q", got)
	}
}
