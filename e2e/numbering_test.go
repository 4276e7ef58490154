package e2e

import (
	"fmt"
	"slices"
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
