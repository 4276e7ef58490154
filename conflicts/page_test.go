package conflicts

import (
	"cmp"
	"slices"
	"testing"
	"time"
)

type item struct {
	at time.Time
	id string
}

func itemKey(i item) (time.Time, string) { return i.at, i.id }

// TestPageNewest walks every page size over a list with equal timestamps and
// checks the pages put together are the list, and that a cursor survives the
// removal of the item it names.
func TestPageNewest(t *testing.T) {
	base := time.Unix(1_700_000_000, 0)
	var list []item
	for i, s := range []int{5, 5, 5, 4, 3, 3, 1} {
		list = append(list, item{base.Add(time.Duration(s) * time.Second), string(rune('a' + 6 - i))})
	}
	slices.SortFunc(list, func(a, b item) int {
		if c := b.at.Compare(a.at); c != 0 {
			return c
		}
		return -cmp.Compare(a.id, b.id)
	})
	for limit := 1; limit <= len(list)+1; limit++ {
		var got []item
		cursor := ""
		for pages := 0; ; pages++ {
			page, next, err := PageNewest(list, itemKey, cursor, limit)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) > limit {
				t.Fatalf("limit %d: page of %d", limit, len(page))
			}
			got = append(got, page...)
			if next == "" {
				break
			}
			if pages > len(list) {
				t.Fatalf("limit %d: paging does not end", limit)
			}
			cursor = next
		}
		if !slices.Equal(got, list) {
			t.Fatalf("limit %d: pages %v, want %v", limit, got, list)
		}
	}
	// No limit: everything, no cursor.
	if all, next, _ := PageNewest(list, itemKey, "", 0); len(all) != len(list) || next != "" {
		t.Errorf("no limit: %d items, next %q", len(all), next)
	}
	// The item a cursor names may disappear; the next page is still right.
	first, next, _ := PageNewest(list, itemKey, "", 2)
	rest := slices.DeleteFunc(slices.Clone(list), func(i item) bool { return i == first[1] })
	page, _, _ := PageNewest(rest, itemKey, next, 10)
	if !slices.Equal(page, list[2:]) {
		t.Errorf("after removing the cursor's item: %v, want %v", page, list[2:])
	}
	for _, bad := range []string{"x", "12", "_a", "abc_d"} {
		if _, _, err := PageNewest(list, itemKey, bad, 2); err == nil {
			t.Errorf("cursor %q accepted", bad)
		}
	}
}
