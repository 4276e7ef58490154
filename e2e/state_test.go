package e2e

import (
	"os"
	"path/filepath"
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

// publicGet GETs a public path of d without any key.
func publicGet(t *testing.T, d *Daemon, path string) (int, map[string]any) {
	t.Helper()
	return d.DoKey("", "GET", path, nil)
}

// Anchoring on real daemons: home anchors a state version on its embedded
// chain; the public verify endpoints say it matches, without a key; the
// satellite, which reads no chain, reports home's replicated record as
// unverified; after a restart of home the chain (persisted in
// $CROW_HOME/chain) still holds the anchor, and a second version is
// anchored after it.
func TestAnchoringAndPublicVerify(t *testing.T) {
	home, sats := cluster(t, "laptop")
	laptop := sats[0]
	st, m := home.Do("POST", "/v1/memory", map[string]any{"content": "anchor me", "project": "chain"})
	if st != 201 {
		t.Fatalf("write: %d %v", st, m)
	}
	var number float64
	Eventually(t, syncTimeout, "the memory's number", func() bool {
		_, got := home.Do("GET", "/v1/memory/"+m["id"].(string), nil)
		n, ok := got["number"].(float64)
		number = n
		return ok
	})
	consolidate := func(d *Daemon, op map[string]any) map[string]any {
		t.Helper()
		st, res := d.Do("POST", "/v1/project/chain/state/ops", map[string]any{"ops": []any{op}, "consolidated_until_event": number})
		if st != 200 {
			t.Fatalf("consolidation: %d %v", st, res)
		}
		return res
	}
	v1 := consolidate(home, map[string]any{"op": "add_decision", "title": "Anchor it", "statement": "state hashes go on chain", "evidence_memory_ids": []any{number}})
	var doc map[string]any
	Eventually(t, syncTimeout, "version 1 anchored", func() bool {
		st, doc = publicGet(t, home, "/v1/verify/chain")
		return st == 200 && doc["verified"] == true
	})
	ver := doc["versions"].([]any)[0].(map[string]any)
	if ver["onchain_state_hash"] != v1["state_hash"] || ver["match"] != true || ver["tx_hash"] == nil {
		t.Fatalf("verify = %v", doc)
	}
	if strings.Contains(doc["project_id"].(string), "chain") || doc["chain"] == nil {
		t.Fatalf("verify document: %v", doc)
	}
	// The chain answers as soon as the transaction is mined; home's record
	// of it (and its counter) follow.
	Eventually(t, syncTimeout, "home's anchor record in the state and the metrics", func() bool {
		st, sv := home.Do("GET", "/v1/project/chain/state", nil)
		a, _ := sv["anchor"].(map[string]any)
		_, m := home.DoRaw("GET", "/metrics")
		return st == 200 && a["status"] == "anchored" && a["tx_hash"] != nil && strings.Contains(m, "crow_anchor_states_total 1")
	})
	if st, one := publicGet(t, home, "/v1/project/chain/state/anchor?version=1"); st != 200 || one["verified"] != true {
		t.Fatalf("state anchor = %d %v", st, one)
	}
	if st, _ := publicGet(t, home, "/v1/project/chain/state/anchor?version=7"); st != 404 {
		t.Fatalf("an unknown version = %d", st)
	}
	Eventually(t, syncTimeout, "the laptop to see home's anchor record", func() bool {
		st, d := publicGet(t, laptop, "/v1/verify/chain")
		if st != 200 {
			return false
		}
		vs := d["versions"].([]any)
		return len(vs) == 1 && vs[0].(map[string]any)["status"] == "unverified" && vs[0].(map[string]any)["match"] == true
	})

	// The CLI: crow verify (local, and another gateway by URL), crow state.
	if out := home.MustCLI("verify", "chain"); !strings.Contains(out, "verified: every version is anchored and matches") {
		t.Fatalf("crow verify:\n%s", out)
	}
	if out := laptop.MustCLI("verify", "chain", "--url", home.URL()); !strings.Contains(out, "anchored") || !strings.Contains(out, "chain 1337") {
		t.Fatalf("crow verify --url:\n%s", out)
	}
	if out := laptop.MustCLI("state", "show", "chain"); !strings.Contains(out, v1["state_hash"].(string)) {
		t.Fatalf("crow state show:\n%s", out)
	}
	opsFile := filepath.Join(t.TempDir(), "ops.json")
	os.WriteFile(opsFile, []byte(`[{"op":"set_focus","focus":"from the CLI"},{"op":"bogus"}]`), 0o600)
	out, errOut, err := laptop.CLI("state", "apply", "chain", opsFile)
	if err == nil || !strings.Contains(out, "version 2 (1 ops applied)") || !strings.Contains(out, "op 1 rejected") || !strings.Contains(errOut, "1 of the ops were rejected") {
		t.Fatalf("crow state apply: err=%v\n%s\n%s", err, out, errOut)
	}

	home.Stop()
	home.Start()
	// The chain kept version 1 (persisted); version 2, made just before the
	// stop, may have been anchored before it or is anchored now.
	if st, d := publicGet(t, home, "/v1/project/chain/state/anchor?version=1"); st != 200 || d["verified"] != true {
		t.Fatalf("version 1 after a restart of home: %d %v", st, d)
	}
	Eventually(t, syncTimeout, "every version anchored after the restart", func() bool {
		st, d := publicGet(t, home, "/v1/verify/chain")
		return st == 200 && d["verified"] == true
	})
	consolidate(home, map[string]any{"op": "set_phase", "phase": "anchored"})
	Eventually(t, syncTimeout, "version 3 anchored after the restart", func() bool {
		st, d := publicGet(t, home, "/v1/verify/chain")
		return st == 200 && d["verified"] == true && len(d["versions"].([]any)) == 3
	})
}
