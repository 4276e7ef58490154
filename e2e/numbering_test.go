package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/crow-sync/crow/app"
)

// Home numbers every memory, its own and the satellites', once: the numbers
// 1..N with their event hashes reach every instance, identical everywhere;
// a memory written on a satellite has no number until home has seen it.
func TestHomeNumbersMemories(t *testing.T) {
	home, sats := cluster(t, "laptop")
	laptop := sats[0]
	var ids []string
	for i := range 5 {
		d := home
		if i%2 == 0 {
			d = laptop
		}
		ids = append(ids, Must(d, app.MemoryCreate, app.MemoryCreateIn{Content: fmt.Sprintf("memory %d", i)}).ID)
	}
	numbers := func(d *Daemon) (map[string]uint64, map[string]string) {
		ns, hs := map[string]uint64{}, map[string]string{}
		for _, id := range ids {
			m, err := Call(d, app.MemoryGet, app.MemoryID{ID: id})
			if err != nil {
				return nil, nil
			}
			if m.Number != nil {
				ns[id] = *m.Number
			}
			if m.EventHash != nil {
				hs[id] = *m.EventHash
			}
		}
		return ns, hs
	}
	Eventually(t, syncTimeout, "numbers and event hashes on both instances", func() bool {
		hn, hh := numbers(home)
		ln, lh := numbers(laptop)
		return len(hn) == 5 && len(hh) == 5 && fmt.Sprint(hn) == fmt.Sprint(ln) && fmt.Sprint(hh) == fmt.Sprint(lh)
	})
	hn, hh := numbers(home)
	var got []uint64
	for _, n := range hn {
		got = append(got, n)
	}
	slices.Sort(got)
	if fmt.Sprint(got) != "[1 2 3 4 5]" {
		t.Fatalf("numbers = %v, want 1..5 once each", got)
	}
	for id, h := range hh {
		if len(h) != 66 || h[:2] != "0x" {
			t.Fatalf("event hash of %s = %q", id, h)
		}
	}
}

// Numbers name immutable versions (SPEC §10), on real daemons: a memory
// written on the laptop is #1 and cited by the state; edited on the laptop,
// home numbers the edit #N with supersedes 1; `crow memory get 1` still
// prints the old content (superseded by #N), on both instances; and the
// state citing #1 flags it as stale evidence #1 → #N, with its hash
// unchanged (get_project_state, REST and `crow state show`).
func TestNumberingEditsAreNewVersions(t *testing.T) {
	home, sats := cluster(t, "laptop")
	laptop := sats[0]
	const before, after = "we deploy from the staging branch", "we deploy from the main branch"
	id := Must(laptop, app.MemoryCreate, app.MemoryCreateIn{Content: before, Project: "crow"}).ID
	numberOn := func(d *Daemon) uint64 {
		m, err := Call(d, app.MemoryGet, app.MemoryID{ID: id})
		if err != nil || m.Number == nil {
			return 0
		}
		return *m.Number
	}
	Eventually(t, syncTimeout, "#1 on the laptop", func() bool { return numberOn(laptop) == 1 })
	res, err := Call(laptop, app.ProjectConsolidate, app.ConsolidateIn{Project: "crow", Ops: ops(
		`{"op": "add_decision", "title": "Staging", "statement": "deploy from staging", "evidence_memory_ids": [1]}`)})
	if err != nil || res.Version != 1 || res.AppliedCount != 1 {
		t.Fatalf("consolidation citing #1 = %+v %v", res, err)
	}

	Must(laptop, app.MemoryUpdate, app.MemoryUpdateIn{ID: id, Content: ptr(after)})
	var n uint64
	Eventually(t, syncTimeout, "home's number for the edit, on the laptop", func() bool {
		n = numberOn(laptop)
		return n > 1
	})
	for _, d := range []*Daemon{home, laptop} {
		Eventually(t, syncTimeout, "both versions on "+d.Name, func() bool {
			_, err1 := Call(d, app.MemoryGet, app.MemoryID{ID: "1"})
			_, err2 := Call(d, app.MemoryGet, app.MemoryID{ID: fmt.Sprint(n)})
			return err1 == nil && err2 == nil
		})
		old := Must(d, app.MemoryGet, app.MemoryID{ID: "1"})
		cur := Must(d, app.MemoryGet, app.MemoryID{ID: fmt.Sprint(n)})
		if old.ID != id || old.Content != before || *old.Number != 1 || old.SupersededBy == nil || *old.SupersededBy != n ||
			cur.ID != id || cur.Content != after || cur.Supersedes == nil || *cur.Supersedes != 1 || cur.SupersededBy != nil ||
			*old.EventHash == *cur.EventHash {
			t.Fatalf("%s: #1 = %+v, #%d = %+v", d.Name, old, n, cur)
		}
		out := d.MustCLI("memory", "get", "1")
		if !strings.Contains(out, before) || !strings.Contains(out, fmt.Sprintf("(superseded by #%d)", n)) {
			t.Fatalf("%s: crow memory get 1 printed %q", d.Name, out)
		}
		if out := d.MustCLI("memory", "get", fmt.Sprint(n)); !strings.Contains(out, after) || !strings.Contains(out, "(supersedes #1)") {
			t.Fatalf("%s: crow memory get %d printed %q", d.Name, n, out)
		}
		if _, stderr, err := d.CLI("memory", "get", "999"); err == nil || !strings.Contains(stderr, "no memory #999") {
			t.Fatalf("%s: crow memory get 999: %v %q", d.Name, err, stderr)
		}
	}

	want := fmt.Sprintf(`{"dec_0001":[{"number":1,"superseded_by":%d}]}`, n)
	for _, d := range []*Daemon{home, laptop} {
		Eventually(t, syncTimeout, "stale evidence in the state on "+d.Name, func() bool {
			st, err := Call(d, app.ProjectStateGet, app.ProjectName{Project: "crow"})
			return err == nil && mustJSON(t, st.StaleEvidence) == want
		})
		st := Must(d, app.ProjectStateGet, app.ProjectName{Project: "crow"})
		if st.StateHash != res.StateHash || st.Version.Version != 1 {
			t.Fatalf("%s: the annotation changed the state: %s version %d, was %s", d.Name, st.StateHash, st.Version.Version, res.StateHash)
		}
		var shown struct {
			StaleEvidence map[string][]map[string]uint64 `json:"stale_evidence"`
		}
		if err := json.Unmarshal([]byte(d.MustCLI("state", "show", "crow")), &shown); err != nil ||
			fmt.Sprint(shown.StaleEvidence) != fmt.Sprintf("map[dec_0001:[map[number:1 superseded_by:%d]]]", n) {
			t.Fatalf("%s: crow state show: %v %v", d.Name, shown, err)
		}
	}
}
