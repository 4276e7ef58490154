package e2e

import (
	"strings"
	"testing"
)

// The Project State on real daemons: a satellite's consolidation is
// forwarded to home, which builds the version; the version replicates back
// read-only; with home down the satellite says so (502) and nothing is
// written.
func TestConsolidationGoesToHome(t *testing.T) {
	home, sats := cluster(t, "laptop")
	laptop := sats[0]
	st, m := laptop.Do("POST", "/v1/memory", map[string]any{"content": "we chose badger for the store", "project": "crow"})
	if st != 201 {
		t.Fatalf("write: %d %v", st, m)
	}
	id := m["id"].(string)
	var number float64
	Eventually(t, syncTimeout, "home's number for the laptop's memory, on the laptop", func() bool {
		_, got := laptop.Do("GET", "/v1/memory/"+id, nil)
		n, ok := got["number"].(float64)
		number = n
		return ok && got["event_hash"] != nil
	})
	body := map[string]any{"consolidated_until_event": number, "ops": []any{
		map[string]any{"op": "add_decision", "title": "Badger", "statement": "badger is the embedded store", "evidence_memory_ids": []any{number}},
		map[string]any{"op": "set_phase", "phase": "alpha"},
	}}
	st, res := laptop.Do("POST", "/v1/project/crow/state/ops", body)
	if st != 200 || res["version"] != 1.0 || res["applied_count"] != 2.0 {
		t.Fatalf("consolidation from the laptop = %d %v", st, res)
	}
	Eventually(t, syncTimeout, "version 1 on both instances", func() bool {
		for _, d := range []*Daemon{home, laptop} {
			st, v := d.Do("GET", "/v1/project/crow/state", nil)
			if st != 200 || v["version"] != 1.0 || v["state_hash"] != res["state_hash"] {
				return false
			}
		}
		return true
	})
	// Home's own consolidation makes version 2, chained.
	st, res2 := home.Do("POST", "/v1/project/crow/state/ops", map[string]any{"ops": []any{map[string]any{"op": "set_focus", "focus": "ship it"}}})
	if st != 200 || res2["version"] != 2.0 {
		t.Fatalf("consolidation on home = %d %v", st, res2)
	}
	Eventually(t, syncTimeout, "version 2 on the laptop", func() bool {
		_, v := laptop.Do("GET", "/v1/project/crow/state", nil)
		meta, _ := v["state"].(map[string]any)["state_meta"].(map[string]any)
		return v["version"] == 2.0 && meta["previous_state_hash"] == res["state_hash"]
	})
	// Home's refusal comes back as the laptop's 400.
	st, bad := laptop.Do("POST", "/v1/project/crow/state/ops", map[string]any{"ops": []any{map[string]any{"op": "set_focus", "focus": "x"}}, "consolidated_until_event": 999})
	if st != 400 || !strings.Contains(bad["error"].(string), "home answered") {
		t.Fatalf("a bad request through the laptop = %d %v", st, bad)
	}
	home.Stop()
	st, down := laptop.Do("POST", "/v1/project/crow/state/ops", map[string]any{"ops": []any{map[string]any{"op": "set_focus", "focus": "offline"}}})
	if st != 502 || !strings.Contains(down["error"].(string), "home instance is unreachable") {
		t.Fatalf("consolidation with home down = %d %v", st, down)
	}
}
