package search

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/crow-sync/crow/store"
	"github.com/crow-sync/crow/store/storetest"
)

func putRow(t *testing.T, w *store.Writer, table, id string, op store.Op, data string) {
	t.Helper()
	var raw json.RawMessage
	if data != "" {
		raw = json.RawMessage(data)
	}
	if _, err := w.Write(context.Background(), store.Mutation{Table: table, RowID: id, Op: op, Data: raw}); err != nil {
		t.Fatal(err)
	}
}

func allHits(t *testing.T, ix *Index, q AllQuery) []string {
	t.Helper()
	hits, err := ix.SearchAll(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, h := range hits {
		out = append(out, h.Table+"/"+h.RowID)
	}
	slices.Sort(out)
	return out
}

// memoryOrder is the ranked ids (and their order) of a memory search.
func memoryOrder(t *testing.T, ix *Index, q Query) []string {
	t.Helper()
	hits, err := ix.Search(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, h := range hits {
		out = append(out, h.ID)
	}
	return out
}

// TestRecordsSearchAcrossTables: rows of every record table are indexed with their table;
// SearchAll finds them (and memories) in one search, filtered by table; updates re-index,
// deletes remove; memory searches never see a record and rank as before.
func TestRecordsSearchAcrossTables(t *testing.T) {
	dbDir, ixDir := t.TempDir(), filepath.Join(t.TempDir(), "index")
	env := storetest.Start(t, dbDir)
	ix, stop := runIndexer(t, env.DB, ixDir)
	for _, m := range corpus() {
		put(t, env.Writer, store.OpInsert, m)
	}
	caughtUp(t, env.DB, ix)
	memQueries := []Query{{Text: "storage fsyncs badger"}, {Text: "badger"}, {Project: "crow"}, {}, {Tags: []string{"db"}}}
	var before [][]string
	for _, q := range memQueries {
		before = append(before, memoryOrder(t, ix, q))
	}

	w := env.Writer
	putRow(t, w, store.TableNotes, "n1", store.OpInsert, `{"title":"Badger tuning","content":"value log GC every hour","tags":["ops"]}`)
	putRow(t, w, store.TableContacts, "c1", store.OpInsert, `{"name":"Ada Lovelace","email":"ada@example.org","extra":{"city":"London"}}`)
	putRow(t, w, store.TableSources, "s1", store.OpInsert, `{"url":"https://dgraph.io/docs/badger","title":"Badger docs"}`)
	putRow(t, w, store.TableSettings, "theme", store.OpInsert, `{"key":"theme","value":"solarized"}`)
	putRow(t, w, store.TableBlogPosts, "b1", store.OpInsert, `{"title":"Why London","slug":"why-london","body":"Fog and badgers","status":"draft"}`)
	putRow(t, w, store.TableCrowContext, "x", store.OpInsert, `{"section":"style","device":"","project":"crow","content":"short answers"}`)
	putRow(t, w, store.TableProjects, "p", store.OpInsert, `{"name":"badger"}`) // not indexed
	caughtUp(t, env.DB, ix)

	cases := []struct {
		q    AllQuery
		want []string
	}{
		{AllQuery{Text: "badger"}, []string{"blog_posts/b1", "memories/m1", "notes/n1", "sources/s1"}},
		{AllQuery{Text: "badger", Tables: []string{"notes", "sources"}}, []string{"notes/n1", "sources/s1"}},
		{AllQuery{Text: "badger", Tables: []string{"memories"}}, []string{"memories/m1"}},
		{AllQuery{Text: "london"}, []string{"blog_posts/b1", "contacts/c1"}}, // nested extra fields too
		{AllQuery{Text: "ada", Tables: []string{"notes"}}, nil},
		{AllQuery{Text: "solarized"}, []string{"settings/theme"}},
		{AllQuery{Text: "answers"}, []string{"crow_context/x"}},
		{AllQuery{Text: "example.org"}, []string{"contacts/c1"}},
	}
	for _, c := range cases {
		if got := allHits(t, ix, c.q); !slices.Equal(got, c.want) {
			t.Errorf("%+v → %v, want %v", c.q, got, c.want)
		}
	}
	if _, err := ix.SearchAll(context.Background(), AllQuery{Text: "x", Tables: []string{"projects"}}); err == nil {
		t.Error("an unindexed table was searched")
	}
	if _, err := ix.SearchAll(context.Background(), AllQuery{Text: "  "}); err == nil {
		t.Error("an empty query was run")
	}
	for i, q := range memQueries {
		if got := memoryOrder(t, ix, q); !slices.Equal(got, before[i]) {
			t.Errorf("memory search %+v with records: %v, before %v", q, got, before[i])
		}
	}

	// Update re-indexes, delete removes.
	putRow(t, w, store.TableNotes, "n1", store.OpUpdate, `{"title":"Pebble tuning","content":"compaction"}`)
	putRow(t, w, store.TableContacts, "c1", store.OpDelete, "")
	caughtUp(t, env.DB, ix)
	if got := allHits(t, ix, AllQuery{Text: "badger", Tables: []string{"notes"}}); got != nil {
		t.Errorf("old note text still found: %v", got)
	}
	if got := allHits(t, ix, AllQuery{Text: "pebble"}); !slices.Equal(got, []string{"notes/n1"}) {
		t.Errorf("updated note: %v", got)
	}
	if got := allHits(t, ix, AllQuery{Text: "lovelace"}); got != nil {
		t.Errorf("deleted contact still found: %v", got)
	}
	stop()

	// A lost index is rebuilt with the records (tombstones left out).
	if err := os.RemoveAll(ixDir); err != nil {
		t.Fatal(err)
	}
	ix, _ = runIndexer(t, env.DB, ixDir)
	caughtUp(t, env.DB, ix)
	if got := allHits(t, ix, AllQuery{Text: "pebble badger london"}); !slices.Equal(got, []string{"blog_posts/b1", "memories/m1", "notes/n1", "sources/s1"}) {
		t.Errorf("after rebuild: %v", got)
	}
	if n, _ := ix.Count(); n != 4+5 {
		t.Errorf("count after rebuild %d, want 4 memories + 5 records", n)
	}
}

func TestSplitDocID(t *testing.T) {
	for _, c := range []struct{ table, row string }{
		{"memories", "01JABC"}, {"notes", "a/b"}, {"crow_context", "s/d/p"}, {"settings", ""},
	} {
		if tb, r := splitDocID(docID(c.table, c.row)); tb != c.table || r != c.row {
			t.Errorf("%s/%s → %s %s", c.table, c.row, tb, r)
		}
	}
}
