package store

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// LastRows reads the newest live rows under a prefix, newest first, filtered, and nothing
// of the neighbouring prefixes.
func TestLastRows(t *testing.T) {
	db := openTest(t, t.TempDir())
	defer db.Close()
	err := db.Update(context.Background(), func(txn *Txn) error {
		for i, id := range []string{"a/1", "a/2", "a/3", "a/4", "a/x/9", "ab/9", "b/1", "a/\U0010ffff"} {
			r := &Row{RowID: id, Table: TableStateVersions, Data: json.RawMessage(`{}`), VV: VV{"i": uint64(i + 1)},
				Deleted: id == "a/4"}
			if _, err := txn.PutRow(r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ids := func(rows []Row) (out []string) {
		for _, r := range rows {
			out = append(out, r.RowID)
		}
		return out
	}
	notSub := func(r *Row) bool { return !strings.Contains(r.RowID[2:], "/") }
	for _, c := range []struct {
		prefix string
		n      int
		filter func(*Row) bool
		want   string
	}{
		{"a/", 1, nil, "a/\U0010ffff"},
		{"a/", 2, notSub, "a/\U0010ffff a/3"},
		{"a/", 3, nil, "a/\U0010ffff a/x/9 a/3"},
		{"a/", 10, notSub, "a/\U0010ffff a/3 a/2 a/1"},
		{"a", 10, nil, "ab/9 a/\U0010ffff a/x/9 a/3 a/2 a/1"},
		{"c/", 10, nil, ""},
	} {
		rows, err := db.LastRows(TableStateVersions, c.prefix, c.n, c.filter)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(ids(rows), " "); got != c.want {
			t.Errorf("LastRows(%q, %d) = %q, want %q", c.prefix, c.n, got, c.want)
		}
	}
}
