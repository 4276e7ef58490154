package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/crow-sync/crow/app"
)

// POST /v1/memories and crow_store_memories on a real home with a
// satellite: 1,000 memories in one call are stored and replicate; a call
// with bad items stores none and names each; an oversized body is 413.
func TestBulkCreateMemories(t *testing.T) {
	home := NewDaemon(t, "home", nil)
	home.Start()
	s := NewDaemon(t, "laptop", home)
	s.Start()
	Enrolled(t, home, s)

	// 1,000 memories of 256 bytes with tags, the benchmark's size: the
	// whole call is one store transaction, within badger's limit.
	content := func(i int) string { s := fmt.Sprintf("bulk memory %d ", i); return s + strings.Repeat("x", 256-len(s)) }
	in := app.MemoriesCreateIn{}
	for i := range 1000 {
		in.Memories = append(in.Memories, app.MemoryCreateIn{Content: content(i), Project: "bulk", Tags: []string{"bench", "bulk"}})
	}
	out := Must(home, app.MemoryCreateMany, in)
	if len(out.Memories) != 1000 || out.Memories[0].Content != content(0) || out.Memories[999].Content != content(999) {
		t.Fatalf("bulk create answered %d memories", len(out.Memories))
	}
	want := make([]string, 1000)
	for i := range want {
		want[i] = content(i)
	}
	Eventually(t, syncTimeout, "the laptop to hold the 1,000", func() bool { return holdsOnce(t, s, want, 1000) })

	// All or nothing: items 1 and 3 are bad.
	body := `{"memories":[{"content":"fine"},{"content":""},{"content":"fine too"},{"content":"x","importance":11}]}`
	code, e := home.RawJSON(home.Key, "POST", "/v1/memories", body)
	if code != 400 || e == nil || !strings.Contains(e.Msg, "memories[1]") || !strings.Contains(e.Msg, "memories[3]") {
		t.Fatalf("a batch with bad items: %d %+v", code, e)
	}
	if !holdsOnce(t, home, want, 1000) {
		t.Fatal("a refused batch stored something")
	}
	// Over the cap: 413, nothing stored.
	big, _ := json.Marshal(app.MemoriesCreateIn{Memories: []app.MemoryCreateIn{{Content: strings.Repeat("a", 60000)}}})
	huge := `{"memories":[` + strings.Repeat(string(big[len(`{"memories":[`):len(big)-2])+",", 80) + `{"content":"last"}]}`
	if code, e := home.RawJSON(home.Key, "POST", "/v1/memories", huge); code != 413 {
		t.Fatalf("a body over 4 MiB: %d %+v", code, e)
	}

	// Through MCP on the satellite.
	got, errText := callTool[app.MemoriesCreated](t, mcpClient(t, s, "/mcp"), "crow_store_memories",
		map[string]any{"memories": []map[string]any{{"content": "by mcp one"}, {"content": "by mcp two", "tags": []string{"t"}}}})
	if errText != "" || len(got.Memories) != 2 || got.Memories[1].Source != "mcp" {
		t.Fatalf("crow_store_memories: %+v %q", got, errText)
	}
	Eventually(t, syncTimeout, "home to hold the MCP batch", func() bool {
		return holdsOnce(t, home, append(want, "by mcp one", "by mcp two"), 1002)
	})
}
