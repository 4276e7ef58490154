package exchange

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/search"
	"github.com/crow-sync/crow/store/storetest"
)

// newService is a memory.Service over badger in a temporary directory.
func newService(t testing.TB) *memory.Service {
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
	return memory.NewService(env.DB, env.Writer, ix, memory.Options{})
}

// export writes every live memory of svc in the crow format, as the CLI does.
func export(t *testing.T, svc *memory.Service) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteHeader(&buf); err != nil {
		t.Fatal(err)
	}
	o := memory.ListOptions{Limit: 3, Oldest: true}
	for {
		p, err := svc.List(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range p.Memories {
			if err := WriteRecord(&buf, FromMemory(m)); err != nil {
				t.Fatal(err)
			}
		}
		if o.Cursor = p.NextCursor; o.Cursor == "" {
			return buf.Bytes()
		}
	}
}

// load parses data and imports it into svc in batches of 4, as the CLI does.
func load(t *testing.T, svc *memory.Service, data []byte) Result {
	t.Helper()
	p, err := Parse(bytes.NewReader(data), Auto)
	if err != nil {
		t.Fatal(err)
	}
	var res Result
	for _, b := range Batches(p.Items, 4, 1<<20) {
		recs, err := Import(b, "", memory.SourceCLI)
		if err != nil {
			t.Fatal(err)
		}
		outs, err := svc.Import(context.Background(), recs, false)
		if err != nil {
			t.Fatal(err)
		}
		res.Add(Outcomes(b, outs))
	}
	return res
}

func all(t *testing.T, svc *memory.Service) []memory.Memory {
	t.Helper()
	p, err := svc.List(context.Background(), memory.ListOptions{Limit: 1000, Oldest: true})
	if err != nil {
		t.Fatal(err)
	}
	return p.Memories
}

func TestRoundTripIntoAFreshInstance(t *testing.T) {
	ctx := context.Background()
	a := newService(t)
	imp := func(i int) *int { return &i }
	for _, in := range []memory.CreateInput{
		{Content: "plain"},
		{Content: "with fields", Project: "infra", Category: "decision", Importance: imp(9), Tags: []string{"x", "y"}, Source: memory.SourceMCP},
		{Content: "unicode ✓ and \"quotes\" and <tags>\nand lines", Project: "p2", Source: memory.SourceExtension},
		{Content: "edited later", Source: memory.SourceCLI},
		{Content: "to be deleted"},
		{Content: "six"}, {Content: "seven"},
	} {
		if _, err := a.Add(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	ms := all(t, a)
	if _, err := a.Update(ctx, ms[3].ID, memory.PatchInput{Content: ptr("edited now")}); err != nil {
		t.Fatal(err)
	}
	if err := a.Delete(ctx, ms[4].ID); err != nil {
		t.Fatal(err)
	}
	want := all(t, a)
	data := export(t, a)

	b := newService(t)
	res := load(t, b, data)
	if res.Imported != len(want) || res.Duplicates != 0 || res.Refused != 0 {
		t.Fatalf("first import: %+v, want %d imported", res, len(want))
	}
	got := all(t, b)
	if len(got) != len(want) {
		t.Fatalf("%d memories, want %d", len(got), len(want))
	}
	for i := range want {
		w, g := want[i], got[i]
		if g.ID != w.ID || g.Content != w.Content || g.ContentHash != w.ContentHash || g.Project != w.Project ||
			g.Category != w.Category || g.Importance != w.Importance || !slices.Equal(g.Tags, w.Tags) ||
			g.Source != w.Source || !g.CreatedAt.Equal(w.CreatedAt) || !g.UpdatedAt.Equal(w.UpdatedAt) {
			t.Errorf("memory %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
	// Re-importing, and importing the copy's own export back, duplicate nothing.
	if res := load(t, b, data); res.Imported != 0 || res.Duplicates != len(want) {
		t.Fatalf("re-import: %+v", res)
	}
	if res := load(t, a, export(t, b)); res.Imported != 0 || res.Duplicates != len(want) {
		t.Fatalf("import of the copy's export: %+v", res)
	}
	if n := len(all(t, a)); n != len(want) {
		t.Fatalf("the source has %d memories after importing its copy, want %d", n, len(want))
	}
}

func TestForeignFormatsImportOnce(t *testing.T) {
	svc := newService(t)
	for _, name := range []string{"mcp-memory.jsonl", "mem0-results.json", "mem0-list.json"} {
		data := mustRead(t, name)
		first := load(t, svc, data)
		again := load(t, svc, data)
		if first.Imported == 0 || again.Imported != 0 || again.Duplicates != first.Imported {
			t.Fatalf("%s: first %+v, again %+v", name, first, again)
		}
	}
	ms := all(t, svc)
	if len(ms) != 3+2+2 {
		t.Fatalf("%d memories, want 7", len(ms))
	}
	found := map[string]memory.Memory{}
	for _, m := range ms {
		found[m.Content] = m
	}
	m, ok := found["Is allergic to peanuts"]
	if !ok || m.Category != "health" || m.Source != memory.SourceCLI || m.Project != memory.DefaultProject ||
		m.CreatedAt.Format("2006-01-02T15:04:05.000Z") != "2024-07-26T10:31:02.101Z" {
		t.Fatalf("mem0 memory %+v", m)
	}
}

func ptr[T any](v T) *T { return &v }

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
