package conflicts

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// PageNewest returns one page of list, which is sorted newest first by key
// (time, then id, both descending): the items after cursor, at most limit of
// them (all when limit is 0), and the cursor of the next page ("" when this
// is the last). A cursor is "<unix nanoseconds>_<id>" of the last item of the
// previous page, so paging stays correct when items are added or removed
// between pages.
func PageNewest[T any](list []T, key func(T) (time.Time, string), cursor string, limit int) ([]T, string, error) {
	start := 0
	if cursor != "" {
		ns, id, ok := strings.Cut(cursor, "_")
		n, err := strconv.ParseInt(ns, 10, 64)
		if !ok || err != nil || id == "" {
			return nil, "", errors.New("cursor is not one this endpoint gave out: pass next_cursor of the previous page")
		}
		at := time.Unix(0, n)
		start = len(list)
		for i, v := range list {
			t, vid := key(v)
			if c := t.Compare(at); c < 0 || (c == 0 && vid < id) {
				start = i
				break
			}
		}
	}
	list = list[start:]
	if limit == 0 || len(list) <= limit {
		return list, "", nil
	}
	t, id := key(list[limit-1])
	return list[:limit], fmt.Sprintf("%d_%s", t.UnixNano(), id), nil
}
