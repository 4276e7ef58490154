package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crow-sync/crow/search"
	"github.com/crow-sync/crow/store"
	"github.com/crow-sync/crow/store/storetest"
)

func ptr[T any](v T) *T { return &v }

func newService(t testing.TB) (*Service, *storetest.Env) {
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
	return NewService(env.DB, env.Writer, ix, Options{}), env
}

func TestValidation(t *testing.T) {
	long := strings.Repeat("x", MaxContentBytes+1)
	many := make([]string, MaxTags+1)
	for i := range many {
		many[i] = fmt.Sprint("t", i)
	}
	cases := []struct {
		in    CreateInput
		field string
	}{
		{CreateInput{}, "content"},
		{CreateInput{Content: "  \n"}, "content"},
		{CreateInput{Content: long}, "content"},
		{CreateInput{Content: "\xff"}, "content"},
		{CreateInput{Content: "ok", Importance: ptr(0)}, "importance"},
		{CreateInput{Content: "ok", Importance: ptr(11)}, "importance"},
		{CreateInput{Content: "ok", Source: "web"}, "source"},
		{CreateInput{Content: "ok", Tags: many}, "tags"},
		{CreateInput{Content: "ok", Tags: []string{strings.Repeat("t", MaxTagLen+1)}}, "tags[0]"},
		{CreateInput{Content: "ok", Tags: []string{"a", ""}}, "tags[1]"},
		{CreateInput{Content: "ok", Project: " p"}, "project"},
		{CreateInput{Content: "ok", Category: "a\tb"}, "category"},
	}
	for _, c := range cases {
		_, err := c.in.normalize()
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Field != c.field {
			t.Errorf("%+v: err %v, want validation error on %q", c.in.Importance, err, c.field)
		}
	}
	d, err := CreateInput{Content: "hello", Tags: []string{"a", "b", "a"}}.normalize()
	if err != nil {
		t.Fatal(err)
	}
	if d.Project != "default" || d.Category != "general" || d.Importance != 5 || d.Source != "api" ||
		!slices.Equal(d.Tags, []string{"a", "b"}) ||
		d.ContentHash != "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824" {
		t.Fatalf("defaults: %+v", d)
	}
	if err := (PatchInput{}).validate(); err == nil {
		t.Fatal("empty patch accepted")
	}
	if err := (PatchInput{Importance: ptr(12)}).validate(); err == nil {
		t.Fatal("bad patch importance accepted")
	}
}

func TestIDs(t *testing.T) {
	now := time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC)
	a, b := newID(now), newID(now.Add(time.Millisecond))
	if len(a) != 26 || a >= b || a[:10] != b[:9]+a[9:10] && a[:9] != b[:9] {
		t.Fatalf("ids %s %s", a, b)
	}
	if newID(now) == newID(now) {
		t.Fatal("ids collide")
	}
}

func TestCRUD(t *testing.T) {
	s, env := newService(t)
	ctx := context.Background()
	m, err := s.Add(ctx, CreateInput{Content: "remember the milk", Project: "home", Tags: []string{"todo"}, Source: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	if m.ID == "" || m.Number != nil || m.EventHash != nil || m.Origin != "inst-test" || m.ContentHash != ContentHash("remember the milk") {
		t.Fatalf("added %+v", m)
	}
	got, err := s.Get(ctx, m.ID)
	if err != nil || got.Content != m.Content || !got.CreatedAt.Equal(m.CreatedAt) || got.Source != "cli" {
		t.Fatalf("get %+v %v", got, err)
	}
	if _, err := s.Add(ctx, CreateInput{Content: ""}); err == nil {
		t.Fatal("empty content accepted")
	}

	up, err := s.Update(ctx, m.ID, PatchInput{Content: ptr("remember the oat milk"), Importance: ptr(9)})
	if err != nil || up.Content != "remember the oat milk" || up.Importance != 9 || up.ContentHash != ContentHash(up.Content) ||
		up.Project != "home" || !up.CreatedAt.Equal(m.CreatedAt) {
		t.Fatalf("update %+v %v", up, err)
	}
	if _, err := s.Update(ctx, "nope", PatchInput{Importance: ptr(2)}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("update missing: %v", err)
	}

	// Home numbers it later in its own table; Get joins it.
	nd, _ := json.Marshal(map[string]any{"number": 7, "event_hash": "abc"})
	if _, err := env.Writer.Write(ctx, store.Mutation{Table: store.TableMemoryNumbers, RowID: m.ID, Op: store.OpInsert, Data: nd}); err != nil {
		t.Fatal(err)
	}
	got, _ = s.Get(ctx, m.ID)
	if got.Number == nil || *got.Number != 7 || got.EventHash == nil || *got.EventHash != "abc" {
		t.Fatalf("numbered %+v", got)
	}

	if err := s.Delete(ctx, m.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, m.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get deleted: %v", err)
	}
	if err := s.Delete(ctx, m.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("delete twice: %v", err)
	}
	if _, err := s.Update(ctx, m.ID, PatchInput{Importance: ptr(2)}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("update deleted: %v", err)
	}
	res, err := s.Search(ctx, SearchOptions{Query: "milk"})
	if err != nil || len(res) != 0 {
		t.Fatalf("deleted memory searchable: %+v %v", res, err)
	}
}

func TestConcurrentPatchesBothApply(t *testing.T) {
	s, _ := newService(t)
	ctx := context.Background()
	m, err := s.Add(ctx, CreateInput{Content: "x"})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			var p PatchInput
			if i%2 == 0 {
				p.Importance = ptr(10 - i/2) // 10, 9, 8, 7: never the default 5
			} else {
				p.Tags = &[]string{fmt.Sprint("t", i)}
			}
			if _, err := s.Update(ctx, m.ID, p); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got, _ := s.Get(ctx, m.ID)
	if got.Importance == 5 || len(got.Tags) != 1 {
		t.Fatalf("a patch was lost: %+v", got)
	}
}

func TestListAndSearch(t *testing.T) {
	s, _ := newService(t)
	ctx := context.Background()
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.now = func() time.Time { clock = clock.Add(time.Second); return clock }
	inputs := []CreateInput{
		{Content: "badger stores rows as JSON envelopes", Project: "crow", Category: "decision", Importance: ptr(8), Tags: []string{"db"}},
		{Content: "bleve gives full text search", Project: "crow", Category: "note", Tags: []string{"search", "db"}},
		{Content: "water the plants", Project: "home", Category: "todo", Importance: ptr(2)},
		{Content: "group commit amortises fsync", Project: "crow", Category: "note", Importance: ptr(7), Tags: []string{"db"}},
	}
	var ids []string
	for _, in := range inputs {
		m, err := s.Add(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
		// Read-your-writes: found by a search issued right after the write.
		res, err := s.Search(ctx, SearchOptions{Query: in.Content})
		if err != nil || len(res) == 0 || res[0].ID != m.ID {
			t.Fatalf("search right after add: %+v %v", res, err)
		}
	}
	// Pages, newest first.
	var got []string
	cursor := ""
	for {
		p, err := s.List(ctx, ListOptions{Cursor: cursor, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range p.Memories {
			got = append(got, m.ID)
		}
		if cursor = p.NextCursor; cursor == "" {
			break
		}
	}
	want := slices.Clone(ids)
	slices.Reverse(want)
	if !slices.Equal(got, want) {
		t.Fatalf("list newest first = %v, want %v", got, want)
	}
	p, err := s.List(ctx, ListOptions{Oldest: true, Filter: Filter{Project: "crow", Tags: []string{"db"}, MinImportance: 5}})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Memories) != 3 || p.Memories[0].ID != ids[0] || p.Memories[2].ID != ids[3] {
		t.Fatalf("filtered list = %+v", p.Memories)
	}
	if p, _ := s.List(ctx, ListOptions{Filter: Filter{Category: "todo"}}); len(p.Memories) != 1 || p.Memories[0].ID != ids[2] {
		t.Fatalf("category filter = %+v", p.Memories)
	}
	res, err := s.Search(ctx, SearchOptions{Query: "db search fsync", Filter: Filter{Project: "crow", MinImportance: 6}})
	if err != nil || len(res) != 1 || res[0].ID != ids[3] || res[0].Score <= 0 {
		t.Fatalf("filtered search = %+v %v", res, err)
	}
	res, _ = s.Search(ctx, SearchOptions{Filter: Filter{Tags: []string{"db"}}, Limit: 2})
	if len(res) != 2 || res[0].ID != ids[3] || res[1].ID != ids[1] {
		t.Fatalf("tag search = %+v", res)
	}
	if _, err := s.Search(ctx, SearchOptions{Filter: Filter{MinImportance: 11}}); err == nil {
		t.Fatal("bad min_importance accepted")
	}
}

func TestCount(t *testing.T) {
	s, _ := newService(t)
	ctx := context.Background()
	for _, in := range []CreateInput{
		{Content: "a", Project: "crow", Category: "decision"},
		{Content: "b", Project: "crow"},
		{Content: "c", Project: "home", Category: "decision"},
	} {
		if _, err := s.Add(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	gone, _ := s.Add(ctx, CreateInput{Content: "d", Project: "gone"})
	if err := s.Delete(ctx, gone.ID); err != nil {
		t.Fatal(err)
	}
	c, err := s.Count(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c.Total != 3 || c.Projects["crow"] != 2 || c.Projects["home"] != 1 || c.Projects["gone"] != 0 ||
		c.Categories["decision"] != 2 || c.Categories["general"] != 1 {
		t.Fatalf("counts = %+v", c)
	}

	// The counts are maintained: a patch moves a memory between projects and categories, a
	// forget drops it, and a project or category left empty is not listed.
	moved, _ := s.Add(ctx, CreateInput{Content: "e", Project: "home", Category: "todo"})
	if _, err := s.Update(ctx, moved.ID, PatchInput{Project: ptr("crow"), Category: ptr("decision")}); err != nil {
		t.Fatal(err)
	}
	forgotten, _ := s.Add(ctx, CreateInput{Content: "f", Project: "attic"})
	if _, err := s.Forget(ctx, forgotten.ID); err != nil {
		t.Fatal(err)
	}
	if c, err = s.Count(ctx); err != nil {
		t.Fatal(err)
	}
	want := Counts{Total: 4, Projects: map[string]int{"crow": 3, "home": 1},
		Categories: map[string]int{"decision": 3, "general": 1}}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("counts = %+v, want %+v", c, want)
	}
}

func TestIDsIncreaseWithinAMillisecond(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	prev := newID(now)
	for range 1000 {
		id := newID(now)
		if id <= prev {
			t.Fatalf("%s after %s in the same millisecond", id, prev)
		}
		prev = id
	}
	// A clock going back keeps the order too.
	if id := newID(now.Add(-time.Second)); id <= prev {
		t.Fatalf("%s after %s with the clock back", id, prev)
	}
}
