package exchange

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/crow-sync/crow/memory"
)

func parseFile(t *testing.T, name, format string) Parsed {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := Parse(f, format)
	if err != nil {
		t.Fatalf("Parse(%s, %s): %v", name, format, err)
	}
	return p
}

func TestDetect(t *testing.T) {
	for name, want := range map[string]string{
		"crow.jsonl": Crow, "mcp-memory.jsonl": MCPMemory, "mem0-results.json": Mem0, "mem0-list.json": Mem0,
	} {
		if p := parseFile(t, name, Auto); p.Format != want {
			t.Errorf("%s detected as %s, want %s", name, p.Format, want)
		}
	}
}

func TestCrowFormat(t *testing.T) {
	p := parseFile(t, "crow.jsonl", Crow)
	if len(p.Items) != 2 {
		t.Fatalf("%d items, want 2", len(p.Items))
	}
	it := p.Items[0]
	r := it.Record
	if it.Line != 2 || r.ID != "01JDQ7Z3K5M8N9P0Q1R2S3T4V5" || r.Project != "infra" || r.Category != "decision" ||
		*r.Importance != 8 || strings.Join(r.Tags, ",") != "deploy,ops" || r.Source != "cli" ||
		!r.CreatedAt.Equal(time.Date(2026, 11, 1, 10, 0, 0, 123e6, time.UTC)) || *r.Number != 1 {
		t.Fatalf("first item %+v", it)
	}
	rec, err := r.Import("", memory.SourceAPI)
	if err != nil {
		t.Fatal(err)
	}
	if rec.ID != r.ID || rec.Project != "infra" || rec.Source != "cli" || *rec.Importance != 8 {
		t.Fatalf("import record %+v", rec)
	}
	if rec, _ := r.Import("other", memory.SourceAPI); rec.Project != "other" {
		t.Fatalf("--project override: project %q", rec.Project)
	}
}

func TestMCPMemoryFormat(t *testing.T) {
	p := parseFile(t, "mcp-memory.jsonl", MCPMemory)
	if len(p.Items) != 3 {
		t.Fatalf("%d items, want 3 (two entities, one relation without its entity): %+v", len(p.Items), p.Items)
	}
	john := p.Items[0]
	want := "John_Smith (person)\n- Speaks fluent Spanish\n- Prefers morning meetings\n- Graduated in 2019\nRelations:\n- John_Smith works_at Anthropic"
	if john.Line != 1 || john.Record.Content != want || john.Record.Category != "entity" ||
		strings.Join(john.Record.Tags, ",") != "mcp-memory,person" {
		t.Fatalf("John_Smith: line %d %+v\ncontent %q", john.Line, john.Record, john.Record.Content)
	}
	loose := p.Items[2]
	if loose.Line != 6 || loose.Record.Content != "Jane_Doe mentors John_Smith" || loose.Record.Category != "relation" {
		t.Fatalf("loose relation %+v", loose)
	}
	// The ids are derived from the names: the same file maps to the same ids.
	again := parseFile(t, "mcp-memory.jsonl", Auto)
	for i := range p.Items {
		if !memory.ValidID(p.Items[i].Record.ID) || p.Items[i].Record.ID != again.Items[i].Record.ID {
			t.Fatalf("item %d: ids %q and %q", i, p.Items[i].Record.ID, again.Items[i].Record.ID)
		}
	}
	if p.Items[0].Record.ID == p.Items[1].Record.ID {
		t.Fatal("two entities share an id")
	}
}

func TestMem0Formats(t *testing.T) {
	p := parseFile(t, "mem0-results.json", Mem0)
	if len(p.Items) != 2 {
		t.Fatalf("%d items, want 2", len(p.Items))
	}
	a, b := p.Items[0], p.Items[1]
	if a.Line != 3 || b.Line != 13 {
		t.Errorf("lines %d and %d, want 3 and 13", a.Line, b.Line)
	}
	if a.Record.Content != "User is planning a trip to Japan next spring" || a.Record.Category != "travel" ||
		strings.Join(a.Record.Tags, ",") != "mem0,travel,user:alex" ||
		!a.Record.CreatedAt.Equal(time.Date(2024, 7, 26, 17, 29, 36, 630547e3, time.UTC)) || !a.Record.UpdatedAt.IsZero() {
		t.Fatalf("first %+v", a.Record)
	}
	if b.Record.Category != "health" || strings.Join(b.Record.Tags, ",") != "mem0,health,food,user:alex" ||
		!b.Record.UpdatedAt.Equal(time.Date(2024, 8, 1, 8, 0, 0, 0, time.UTC)) {
		t.Fatalf("second %+v", b.Record)
	}
	// The id keeps the creation time (ULID order) and is the same every time.
	if !strings.HasPrefix(a.Record.ID, memory.DerivedID(a.Record.CreatedAt, [32]byte{})[:10]) {
		t.Errorf("id %s does not start with its creation time", a.Record.ID)
	}
	l := parseFile(t, "mem0-list.json", Auto)
	if len(l.Items) != 2 || l.Items[0].Record.Content != "Prefers dark mode in every editor" || l.Items[1].Line != 4 ||
		l.Items[0].Record.Category != "" || !l.Items[0].Record.CreatedAt.Equal(time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)) {
		t.Fatalf("list %+v", l.Items)
	}
	// One mem0 memory a line.
	jl := `{"id":"x1","memory":"likes tea","created_at":"2024-01-01T00:00:00Z"}` + "\n" + `{"id":"x2","memory":"likes cake"}` + "\n"
	p, err := Parse(strings.NewReader(jl), Auto)
	if err != nil || p.Format != Mem0 || len(p.Items) != 2 || p.Items[1].Line != 2 {
		t.Fatalf("mem0 JSONL: %+v, %v", p, err)
	}
}

func TestBadInput(t *testing.T) {
	header := `{"format":"crow-memories","version":1}` + "\n"
	cases := []struct {
		name, format, data string
		line               int
		msg                string
	}{
		{"bad JSON line", Crow, header + `{"id":"01JDQ7Z3K5M8N9P0Q1R2S3T4V5","content":"ok"}` + "\n" + `{"id": oops}` + "\n", 3, "bad JSON"},
		{"not an object", Crow, header + "[1,2]\n", 2, "not a JSON object"},
		{"newer version", Auto, `{"format":"crow-memories","version":2}` + "\n", 1, "newer crow"},
		{"header later", Crow, `{"id":"01JDQ7Z3K5M8N9P0Q1R2S3T4V5","content":"ok"}` + "\n" + header, 2, "header line after"},
		{"no id", Crow, header + `{"content":"ok"}` + "\n", 2, "no id"},
		{"oversized line", Crow, header + `{"id":"x","content":"` + strings.Repeat("a", MaxLineBytes) + `"}` + "\n", 2, "longer than"},
		{"mcp bad type", MCPMemory, `{"type":"entity","name":"a","entityType":"t","observations":[]}` + "\n" + `{"type":"node","name":"b"}` + "\n", 2, `type "node"`},
		{"mcp no name", MCPMemory, `{"type":"entity","entityType":"t"}` + "\n", 1, "without a name"},
		{"mcp relation", MCPMemory, `{"type":"relation","from":"a"}` + "\n", 1, "needs from, to"},
		{"mem0 no text", Mem0, "[\n  {\"id\": \"a\", \"memory\": \"x\"},\n  {\"id\": \"b\"}\n]", 3, "without \"memory\""},
		{"mem0 bad time", Mem0, `[{"id":"a","memory":"x","created_at":"yesterday"}]`, 1, "created_at"},
		{"mem0 cut", Mem0, "[\n{\"id\":\"a\",\"memory\":\"x\"},\n{\"id\":", 3, "bad JSON"},
		{"empty", Auto, "\n \n", 0, "empty"},
	}
	for _, c := range cases {
		_, err := Parse(strings.NewReader(c.data), c.format)
		var le *LineError
		if !errors.As(err, &le) || le.Line != c.line || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: error %v, want line %d with %q", c.name, err, c.line, c.msg)
		}
	}
	for _, data := range []string{"hello\n", `{"foo":1}` + "\n"} {
		if _, err := Parse(strings.NewReader(data), Auto); !errors.Is(err, ErrUnknownFormat) {
			t.Errorf("auto on %q: %v, want ErrUnknownFormat", data, err)
		}
	}
	if _, err := Parse(strings.NewReader(header), "csv"); !errors.Is(err, ErrUnknownFormat) || !strings.Contains(err.Error(), "mcp-memory") {
		t.Errorf("format csv: %v", err)
	}
	r := Record{ID: "01JDQ7Z3K5M8N9P0Q1R2S3T4V5", Content: "changed", ContentHash: memory.ContentHash("original")}
	if _, err := Import([]Item{{Line: 7, Record: r}}, "", ""); err == nil || !strings.Contains(err.Error(), "line 7: content_hash") {
		t.Errorf("altered content: %v", err)
	}
}

func TestWriteReadsBack(t *testing.T) {
	imp := 4
	rec := Record{ID: "01JDQ7Z3K5M8N9P0Q1R2S3T4V5", Project: "p", Content: "a <b> & \"c\"\nline two", Category: "c",
		Importance: &imp, Tags: []string{"x"}, Source: "api", CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC)}
	rec.UpdatedAt = rec.CreatedAt
	rec.ContentHash = memory.ContentHash(rec.Content)
	var buf bytes.Buffer
	if err := WriteHeader(&buf); err != nil {
		t.Fatal(err)
	}
	if err := WriteRecord(&buf, rec); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), "\n"); n != 2 {
		t.Fatalf("%d lines:\n%s", n, buf.String())
	}
	p, err := Parse(&buf, Auto)
	if err != nil || p.Format != Crow || len(p.Items) != 1 {
		t.Fatalf("%+v %v", p, err)
	}
	got := p.Items[0].Record
	if got.Content != rec.Content || got.ContentHash != rec.ContentHash || !got.CreatedAt.Equal(rec.CreatedAt) || *got.Importance != 4 {
		t.Fatalf("read back %+v", got)
	}
}

func TestBatches(t *testing.T) {
	items := make([]Item, 10)
	for i := range items {
		items[i].Record.Content = strings.Repeat("x", 1000)
	}
	if b := Batches(items, 4, 1<<20); len(b) != 3 || len(b[0]) != 4 || len(b[2]) != 2 {
		t.Fatalf("by count: %d batches", len(b))
	}
	if b := Batches(items, 100, 5000); len(b) != 5 {
		t.Fatalf("by bytes: %d batches, want 5", len(b))
	}
	items[3].Record.Content = strings.Repeat("x", 100000) // larger than a batch: alone
	b := Batches(items, 100, 5000)
	for _, batch := range b {
		if len(batch) > 1 && len(batch[1].Record.Content) > 5000 {
			t.Fatal("an oversized item shares its batch")
		}
	}
	if Batches(nil, 10, 10) != nil {
		t.Fatal("batches of nothing")
	}
}
