package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/client"
)

// versionsOn reads numbers 1..upto on d: for each, the memory id and content
// hash of the version it names ("" when d does not hold it).
func versionsOn(d *Daemon, upto uint64) []string {
	out := make([]string, upto)
	for n := uint64(1); n <= upto; n++ {
		m, err := Call(d, app.MemoryGet, app.MemoryID{ID: fmt.Sprint(n)})
		if err == nil && m.Number != nil && *m.Number == n {
			out[n-1] = m.ID + "/" + m.ContentHash
		}
	}
	return out
}

// numberedAll waits until every memory of ids has a number on each of ds,
// the numbers 1..N are contiguous, each names one version, and every one of
// ds holds the same versions under the same numbers. It returns N.
func numberedAll(t *testing.T, ids []string, ds ...*Daemon) uint64 {
	t.Helper()
	var n uint64
	Eventually(t, syncTimeout, fmt.Sprintf("%d memories numbered on %d instances", len(ids), len(ds)), func() bool {
		var want []string
		for i, d := range ds {
			var hi uint64
			for _, id := range ids {
				m, err := Call(d, app.MemoryGet, app.MemoryID{ID: id})
				if err != nil || m.Number == nil {
					return false
				}
				hi = max(hi, *m.Number)
			}
			got := versionsOn(d, hi)
			if i == 0 {
				want, n = got, hi
			} else if hi != n || !slices.Equal(got, want) {
				return false
			}
		}
		return true
	})
	vs := versionsOn(ds[0], n)
	seen := map[string]uint64{}
	for i, v := range vs {
		if v == "" {
			t.Fatalf("gap: number %d is not held (numbers %v)", i+1, vs)
		}
		if prev, ok := seen[v]; ok {
			t.Fatalf("duplicate: numbers %d and %d name the same version %s", prev, i+1, v)
		}
		seen[v] = uint64(i + 1)
	}
	return n
}

// Home failover on real daemons (issue 13): home H, satellite A made with
// init --import (it holds the seed), satellite B by invite. Writes
// everywhere, a consolidation; H is killed for good; B cannot promote (no
// seed); A's promotion is refused by nothing and A becomes home: it numbers
// the versions nobody numbered and goes on with no gap and no duplicate; a
// consolidation from B is forwarded to A and anchored on A's chain; then H
// comes back, is demoted, numbers nothing more and converges.
func TestHomeFailover(t *testing.T) {
	h := NewDaemon(t, "home", nil)
	h.Start()
	a := ImportDaemon(t, "spare", h)
	a.Start()
	h.MustCLI("instance", "add", a.URL())
	Enrolled(t, h, a)
	b := NewDaemon(t, "laptop", h)
	b.Start()
	Enrolled(t, h, b)
	Eventually(t, syncTimeout, "the laptop to know the spare", func() bool { return lists(b, instanceID(a)) && lists(a, instanceID(b)) })

	var ids []string
	write := func(d *Daemon, what string) {
		t.Helper()
		ids = append(ids, Must(d, app.MemoryCreate, app.MemoryCreateIn{Content: what + " on " + d.Name, Project: "crow"}).ID)
	}
	for i := range 2 {
		for _, d := range []*Daemon{h, a, b} {
			write(d, fmt.Sprintf("before the failover %d", i))
		}
	}
	base := numberedAll(t, ids, h, a, b)
	v1, err := Call(b, app.ProjectConsolidate, app.ConsolidateIn{Project: "crow", Ops: ops(
		`{"op": "add_decision", "title": "Failover", "statement": "a spare holds the seed", "evidence_memory_ids": [1]}`)})
	if err != nil || v1.Version != 1 {
		t.Fatalf("consolidation through the old home: %+v %v", v1, err)
	}
	Eventually(t, syncTimeout, "version 1 on the spare", func() bool {
		st, err := Call(a, app.ProjectStateGet, app.ProjectName{Project: "crow"})
		return err == nil && st.Version.Version == 1
	})

	h.Kill() // for good (until the end)
	write(b, "while home is dead")
	if _, err := Call(b, app.ProjectConsolidate, app.ConsolidateIn{Project: "crow", Ops: ops(`{"op": "set_focus", "focus": "x"}`)}); err == nil ||
		!strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("consolidation with home dead: %v", err)
	}
	// Only a seed holder can be promoted; the CLI says so in one line.
	if _, errOut, err := b.CLI("instance", "promote"); err == nil || !strings.Contains(errOut, "no master seed") {
		t.Fatalf("crow instance promote on the laptop: %v %q", err, errOut)
	}
	out := a.MustCLI("instance", "promote")
	if !strings.Contains(out, "is home from epoch 1") || !strings.Contains(out, fmt.Sprintf("numbers from #%d", base+1)) {
		t.Fatalf("crow instance promote: %q", out)
	}
	Eventually(t, syncTimeout, "the spare to serve as home", func() bool {
		hd, err := CallKey(a, "", app.InstanceHealth, app.HealthIn{})
		return err == nil && hd.Role == "home"
	})
	if _, errOut, err := a.CLI("instance", "promote"); err == nil || !strings.Contains(errOut, "home already") {
		t.Fatalf("a second promote: %v %q", err, errOut)
	}
	Eventually(t, syncTimeout, "the laptop to follow the new home", func() bool {
		page, err := Call(b, app.InstancesList, app.NoInput{})
		if err != nil {
			return false
		}
		for _, in := range page.Instances {
			if in.ID == instanceID(a) && in.Role == "home" {
				return true
			}
		}
		return false
	})

	for i := range 3 {
		write(a, fmt.Sprintf("after the failover %d", i))
		write(b, fmt.Sprintf("after the failover %d", i))
	}
	n := numberedAll(t, ids, a, b)
	if n != uint64(len(ids)) {
		t.Fatalf("%d numbers for %d versions", n, len(ids))
	}

	// Consolidation resumes on the new home: forwarded from the laptop,
	// anchored on the spare's chain.
	v2, err := Call(b, app.ProjectConsolidate, app.ConsolidateIn{Project: "crow", Ops: ops(
		fmt.Sprintf(`{"op": "add_milestone", "title": "Failed over", "evidence_memory_ids": [%d]}`, n))})
	if err != nil || v2.Version != 2 {
		t.Fatalf("consolidation forwarded to the new home: %+v %v", v2, err)
	}
	Eventually(t, syncTimeout, "version 2 anchored by the new home", func() bool {
		d, err := publicAnchor(a, "crow", 2)
		return err == nil && d.Verified
	})
	// Version 1's root, anchored on the old home's embedded chain (lost
	// with it), is sent again on the new home's: the same root, so its
	// proof holds; crow verify passes for every version.
	Eventually(t, syncTimeout, "every version verified on the new home's chain", func() bool {
		d, err := publicVerify(a, "crow")
		return err == nil && d.Verified && len(d.Versions) == 2
	})
	if out := a.MustCLI("verify", "crow"); !strings.Contains(out, v1.StateHash) || !strings.Contains(out, v2.StateHash) || strings.Contains(out, "FAIL") {
		t.Fatalf("crow verify on the new home:\n%s", out)
	}
	if out := b.MustCLI("verify", "crow", "--url", a.URL()); strings.Contains(out, "FAIL") {
		t.Fatalf("crow verify --url the new home, from the laptop:\n%s", out)
	}

	// The old home comes back: it learns the record, is demoted, numbers
	// nothing and converges.
	h.Start()
	Eventually(t, syncTimeout, "the old home to be demoted", func() bool {
		hd, err := CallKey(h, "", app.InstanceHealth, app.HealthIn{})
		return err == nil && hd.Role == "satellite" && strings.Contains(h.Log(), "demoted: a later home took over")
	})
	write(h, "on the demoted home")
	if got := numberedAll(t, ids, a, b, h); got != uint64(len(ids)) {
		t.Fatalf("%d numbers for %d versions after the old home came back", got, len(ids))
	}
	// From its restart as a satellite on, the old home runs no Numberer.
	if _, after, ok := strings.Cut(h.Log(), "restarting in the new role"); !ok || strings.Contains(after, "component=numbering") {
		t.Fatalf("the demoted home numbered after its restart as a satellite (restart logged: %v)", ok)
	}
	if _, err := Call(h, app.InstancePromote, app.PromoteIn{}); client.StatusOf(err) != 409 || !strings.Contains(err.Error(), "still reachable") {
		t.Fatalf("promote on the demoted home while the new one answers: %v", err)
	}
}

// A forced promotion while the old home still runs, cut off (its sync
// paused): it goes on numbering its own writes above the base; those
// numbers are refused everywhere, the new home numbers the same versions,
// and once the old home hears of the record it is demoted and its rows
// give way to the new home's: every instance ends with the same numbers
// 1..N, each version once.
func TestPromoteForcedWhileHomeRuns(t *testing.T) {
	h := NewDaemon(t, "home", nil)
	h.Start()
	a := ImportDaemon(t, "spare", h)
	a.Start()
	h.MustCLI("instance", "add", a.URL())
	Enrolled(t, h, a)
	b := NewDaemon(t, "laptop", h)
	b.Start()
	Enrolled(t, h, b)
	Eventually(t, syncTimeout, "the laptop to know the spare", func() bool { return lists(b, instanceID(a)) && lists(a, instanceID(b)) })
	var ids []string
	write := func(d *Daemon, what string) {
		t.Helper()
		ids = append(ids, Must(d, app.MemoryCreate, app.MemoryCreateIn{Content: what + " on " + d.Name}).ID)
	}
	write(h, "first")
	write(b, "first")
	base := numberedAll(t, ids, h, a, b)

	h.MustCLI("sync", "pause")
	if _, errOut, err := a.CLI("instance", "promote"); err == nil || !strings.Contains(errOut, "still reachable") || !strings.Contains(errOut, "--force") {
		t.Fatalf("promote while home answers: %v %q", err, errOut)
	}
	a.MustCLI("instance", "promote", "--force")
	Eventually(t, syncTimeout, "the spare to serve as home", func() bool {
		hd, err := CallKey(a, "", app.InstanceHealth, app.HealthIn{})
		return err == nil && hd.Role == "home"
	})
	// The cut-off old home numbers its own writes above the base.
	write(h, "cut off 1")
	write(h, "cut off 2")
	Eventually(t, syncTimeout, "the old home to number its writes", func() bool {
		m, err := Call(h, app.MemoryGet, app.MemoryID{ID: ids[len(ids)-1]})
		return err == nil && m.Number != nil && *m.Number == base+2
	})
	write(a, "new home")
	write(b, "laptop")

	h.MustCLI("sync", "resume")
	Eventually(t, syncTimeout, "the old home to be demoted", func() bool {
		hd, err := CallKey(h, "", app.InstanceHealth, app.HealthIn{})
		return err == nil && hd.Role == "satellite"
	})
	if n := numberedAll(t, ids, a, b, h); n != uint64(len(ids)) {
		t.Fatalf("%d numbers for %d versions", n, len(ids))
	}
	// The old home's numbers above the base were refused (parked) on the
	// new home and on the laptop.
	for _, d := range []*Daemon{a, b} {
		_, m := d.DoRaw("GET", "/metrics")
		if !parkedSome(m) {
			t.Fatalf("%s parked none of the old home's numbers:\n%s", d.Name, m)
		}
	}
}

// parkedSome reports whether a /metrics text counts parked feed entries.
func parkedSome(metrics string) bool {
	for _, l := range strings.Split(metrics, "\n") {
		if v, ok := strings.CutPrefix(l, "crow_apply_parked_total "); ok && v != "0" {
			return true
		}
	}
	return false
}
