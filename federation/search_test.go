package federation

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

func raws(t testing.TB, results ...map[string]any) []json.RawMessage {
	out := make([]json.RawMessage, len(results))
	for i, r := range results {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = b
	}
	return out
}

func TestMergeHits(t *testing.T) {
	statuses := []InstanceStatus{{ID: "home"}, {ID: "a"}, {ID: "b"}}
	per := [][]json.RawMessage{
		raws(t, result("x", 0.5), result("y", 0.5)),
		raws(t, result("x", 0.5), result("z", 0.9), result("z", 0.2)), // a repeats z
		raws(t, result("x", 0.7), result("w", 0.5)),
	}
	got := mergeHits(statuses, per, 10)
	want := []string{
		"z 0.9 a [a]",
		"x 0.7 b [home a b]", // best score wins; FoundOn in status order
		"w 0.5 b [b]",        // equal scores: by id
		"y 0.5 home [home]",
	}
	var lines []string
	for _, h := range got {
		lines = append(lines, fmt.Sprintf("%s %v %s %v", h.ID, h.Score, h.Instance, h.FoundOn))
	}
	if !slices.Equal(lines, want) {
		t.Errorf("merged\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if string(got[1].Memory) != string(per[2][0]) {
		t.Errorf("x's memory is %s, want b's copy", got[1].Memory)
	}
	// A tie keeps the first instance's copy.
	tie := mergeHits(statuses[:2], [][]json.RawMessage{raws(t, result("x", 0.5)), raws(t, result("x", 0.5))}, 10)
	if tie[0].Instance != "home" {
		t.Errorf("tie kept %s's copy, want home's", tie[0].Instance)
	}
	if n := len(mergeHits(statuses, per, 2)); n != 2 {
		t.Errorf("limit 2 kept %d", n)
	}
	if hits := mergeHits(nil, nil, 5); hits == nil || len(hits) != 0 {
		t.Errorf("no results: %#v, want an empty list (encodes as [])", hits)
	}
}

// TestMergeHitsReference compares mergeHits with a naive merge on random
// inputs.
func TestMergeHitsReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 500 {
		n := 1 + rng.IntN(4)
		statuses := make([]InstanceStatus, n)
		per := make([][]json.RawMessage, n)
		type agg struct {
			best    float64
			foundOn map[string]bool
		}
		naive := map[string]*agg{}
		for i := range n {
			statuses[i].ID = fmt.Sprintf("i%d", i)
			for range rng.IntN(6) {
				id := fmt.Sprintf("m%d", rng.IntN(8))
				score := float64(rng.IntN(5)) / 4
				per[i] = append(per[i], raws(t, result(id, score))...)
				a := naive[id]
				if a == nil {
					a = &agg{best: score, foundOn: map[string]bool{}}
					naive[id] = a
				}
				a.best = max(a.best, score)
				a.foundOn[statuses[i].ID] = true
			}
		}
		limit := 1 + rng.IntN(10)
		got := mergeHits(statuses, per, limit)

		ids := make([]string, 0, len(naive))
		for id := range naive {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(x, y int) bool {
			if naive[ids[x]].best != naive[ids[y]].best {
				return naive[ids[x]].best > naive[ids[y]].best
			}
			return ids[x] < ids[y]
		})
		if len(ids) > limit {
			ids = ids[:limit]
		}
		if len(got) != len(ids) {
			t.Fatalf("round %d: %d hits, want %d", round, len(got), len(ids))
		}
		for k, id := range ids {
			h := got[k]
			if h.ID != id || h.Score != naive[id].best || len(h.FoundOn) != len(naive[id].foundOn) {
				t.Fatalf("round %d hit %d: %+v, want %s %v on %v", round, k, h, id, naive[id].best, naive[id].foundOn)
			}
			for _, inst := range h.FoundOn {
				if !naive[id].foundOn[inst] {
					t.Fatalf("round %d: %s found on %s", round, id, inst)
				}
			}
			var m map[string]any
			json.Unmarshal(h.Memory, &m)
			if m["score"] != h.Score {
				t.Fatalf("round %d: %s's memory has score %v, hit %v", round, id, m["score"], h.Score)
			}
		}
	}
}

func TestSearchArgs(t *testing.T) {
	out, limit, err := searchArgs(json.RawMessage(`{"query":"q","instances":"all","instance_id":"x","project":"p"}`))
	if err != nil || string(out) != `{"project":"p","query":"q"}` || limit != DefaultSearchLimit {
		t.Errorf("got %s, %d, %v", out, limit, err)
	}
	if out, limit, err := searchArgs(json.RawMessage(`{"query":"q","limit":5}`)); err != nil || limit != 5 || !strings.Contains(string(out), `"limit":5`) {
		t.Errorf("limit: %s, %d, %v", out, limit, err)
	}
	if out, _, err := searchArgs(nil); err != nil || string(out) != "{}" {
		t.Errorf("nil args: %s, %v", out, err)
	}
	for _, bad := range []string{`[]`, `null`, `"q"`, `{`, `{"limit":0}`, `{"limit":1.5}`, `{"limit":"3"}`} {
		if _, _, err := searchArgs(json.RawMessage(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// searchResults is what SearchMemories makes of a peer's tool result.
func searchResults(res *mcp.CallToolResult) ([]json.RawMessage, error) {
	raw, err := answer("peer", SearchTool, res)
	if err != nil {
		return nil, searchError(err)
	}
	return decodeResults(raw)
}

func TestSearchResults(t *testing.T) {
	ok := func(res *mcp.CallToolResult, want int) {
		t.Helper()
		got, err := searchResults(res)
		if err != nil || len(got) != want {
			t.Errorf("%d results, %v; want %d", len(got), err, want)
		}
	}
	bad := func(res *mcp.CallToolResult) {
		t.Helper()
		if got, err := searchResults(res); err == nil {
			t.Errorf("accepted %v", got)
		}
	}
	ok(mcp.NewToolResultStructuredOnly(map[string]any{"results": []any{result("a", 1)}}), 1)
	ok(&mcp.CallToolResult{RawStructuredContent: json.RawMessage(`{"query":"q","results":[]}`)}, 0)
	ok(mcp.NewToolResultText(`{"results":[{"id":"a","score":1},{"id":"b","score":0}]}`), 2)
	bad(mcp.NewToolResultError("query is required"))
	bad(mcp.NewToolResultText("not json"))
	bad(mcp.NewToolResultStructuredOnly(map[string]any{"query": "q"}))
	bad(mcp.NewToolResultStructuredOnly(map[string]any{"results": "none"}))

	for _, r := range []string{`{"id":"a","score":1}`, `{"id":"a","score":0,"x":[1]}`} {
		if err := checkResults([]json.RawMessage{json.RawMessage(r)}); err != nil {
			t.Errorf("%s: %v", r, err)
		}
	}
	for _, r := range []string{`{"id":"a"}`, `{"score":1}`, `{"id":"","score":1}`, `{"id":1,"score":1}`, `[1]`, `{"id":"a","score":"1"}`} {
		if err := checkResults([]json.RawMessage{json.RawMessage(r)}); err == nil {
			t.Errorf("%s accepted", r)
		}
	}
}
