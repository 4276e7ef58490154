package app

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/memory/exchange"
	"github.com/crow-sync/crow/search"
	"github.com/crow-sync/crow/store/storetest"
)

// TestExchangeInputsRoundTrip: the batch the CLI sends (nested records with times, pointers
// and tags) is what memory.import receives, and export's query is what memory.export reads.
func TestExchangeInputsRoundTrip(t *testing.T) {
	imp, n, eh := 8, uint64(12), "ab"
	at := time.Date(2026, 11, 1, 10, 0, 0, 123e6, time.UTC)
	cases := []struct {
		op Op
		in any
	}{
		{MemoryExport, &MemoryExportIn{Project: "p", Limit: 500, Cursor: "01K"}},
		{MemoryImport, &MemoryImportIn{Project: "x", DryRun: true, Source: "cli", Memories: []exchange.Item{
			{Line: 2, Record: exchange.Record{ID: "01JDQ7Z3K5M8N9P0Q1R2S3T4V5", Number: &n, EventHash: &eh, Project: "p",
				Content: "c", Category: "k", Importance: &imp, Tags: []string{"a"}, Source: "mcp", CreatedAt: at, UpdatedAt: at}},
			{Line: 3, Record: exchange.Record{ID: "01JDQ7Z3K5M8N9P0Q1R2S3T4V6", Content: "d", Tags: []string{}}},
		}}},
	}
	for _, c := range cases {
		sp := c.op.Info()
		path, q, body, err := c.op.Input().EncodeREST(sp.Path, c.in)
		if err != nil {
			t.Fatalf("%s: encode: %v", sp.Name, err)
		}
		got, err := c.op.Input().BindREST(REST{Method: sp.Method, Path: path, Value: func(string) string { return "" }, Query: q, Body: body})
		if err != nil {
			t.Fatalf("%s: bind %s ?%s %s: %v", sp.Name, path, q.Encode(), body, err)
		}
		if !reflect.DeepEqual(got.Interface(), c.in) {
			t.Errorf("%s: round trip\n got %+v\nwant %+v", sp.Name, got.Elem().Interface(), reflect.ValueOf(c.in).Elem().Interface())
		}
	}
}

// TestImportAndExportOps runs the two operations on a memory service over badger: a bad
// record is refused with its line and the batch writes nothing; a good batch is counted;
// the export answers the records with their total.
func TestImportAndExportOps(t *testing.T) {
	ctx := context.Background()
	env := storetest.Start(t, t.TempDir())
	ix, err := search.Open(filepath.Join(t.TempDir(), "index"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ictx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- search.NewIndexer(env.DB, ix).Serve(ictx) }()
	t.Cleanup(func() { cancel(); <-done; ix.Close() })
	a := New(Deps{Memories: memory.NewService(env.DB, env.Writer, ix, memory.Options{})})

	good := exchange.Item{Line: 4, Record: exchange.Record{ID: "01JDQ7Z3K5M8N9P0Q1R2S3T4V5", Content: "fine", Tags: []string{}}}
	for _, bad := range []exchange.Record{
		{ID: "01JDQ7Z3K5M8N9P0Q1R2S3T4V6", Content: ""},
		{ID: "nope", Content: "x"},
		{ID: "01JDQ7Z3K5M8N9P0Q1R2S3T4V6", Content: "x", ContentHash: memory.ContentHash("y")},
	} {
		_, err := Call(ctx, a, MemoryImport, MemoryImportIn{Memories: []exchange.Item{good, {Line: 7, Record: bad}}})
		var e *Error
		if !errors.As(err, &e) || e.Kind != KindInvalid || !strings.HasPrefix(e.Msg, "line 7: ") || !strings.Contains(e.Msg, "nothing of this batch was written") {
			t.Errorf("bad record %+v: %v", bad, err)
		}
	}
	page, err := Call(ctx, a, MemoryExport, MemoryExportIn{})
	if err != nil || len(page.Memories) != 0 || *page.Total != 0 {
		t.Fatalf("refused batches wrote: %+v %v", page, err)
	}
	res, err := Call(ctx, a, MemoryImport, MemoryImportIn{Memories: []exchange.Item{good}, Project: "moved"})
	if err != nil || res.Imported != 1 || res.Items[0].Line != 4 || res.Items[0].Outcome != memory.Imported {
		t.Fatalf("import: %+v %v", res, err)
	}
	page, err = Call(ctx, a, MemoryExport, MemoryExportIn{Project: "moved"})
	if err != nil || len(page.Memories) != 1 || *page.Total != 1 || page.Memories[0].ID != good.Record.ID ||
		page.Memories[0].Source != memory.SourceAPI || page.Format != exchange.FormatName || page.NextCursor != "" {
		t.Fatalf("export: %+v %v", page, err)
	}
}
