package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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

// RowData reads a row's data and deleted flag, as GetRow does, and refuses what GetRow
// refuses; an envelope in another JSON form is read through the full decoder.
func TestRowData(t *testing.T) {
	db := openTest(t, t.TempDir())
	defer db.Close()
	err := db.Update(context.Background(), func(txn *Txn) error {
		for _, r := range []*Row{
			{RowID: "m1", Table: TableMemories, Data: json.RawMessage(`{"content":"caf\u00e9 \"x\""}`), VV: VV{"i": 1}},
			{RowID: "m2", Table: TableMemories, Data: json.RawMessage(`{"content":"gone"}`), VV: VV{"i": 2}, Deleted: true},
		} {
			if _, err := txn.PutRow(r); err != nil {
				return err
			}
		}
		// m3: the same envelope fields, in another order and spacing.
		return txn.txn.Set(rowKey(TableMemories, "m3"), []byte(`{ "deleted": false, "data": {"content": "odd"}, "row_id": "m3", "table": "memories", "lamport_ts": 3, "instance_id": "i", "vv": {"i": 3}, "updated_at": "2026-12-06T00:00:00Z" }`))
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.View(func(txn *Txn) error {
		for _, id := range []string{"m1", "m2", "m3"} {
			want, err := txn.GetRow(TableMemories, id)
			if err != nil {
				return err
			}
			var data []byte
			var deleted bool
			if err := txn.RowData(TableMemories, id, func(d []byte, del bool) error {
				data, deleted = bytes.Clone(d), del
				return nil
			}); err != nil {
				return err
			}
			if !bytes.Equal(data, want.Data) || deleted != want.Deleted {
				t.Errorf("%s: RowData %s deleted %v, GetRow %s deleted %v", id, data, deleted, want.Data, want.Deleted)
			}
		}
		called := false
		if err := txn.RowData(TableMemories, "none", func([]byte, bool) error { called = true; return nil }); !errors.Is(err, ErrNotFound) || called {
			t.Errorf("missing row: %v (fn called: %v), want ErrNotFound", err, called)
		}
		if err := txn.RowData("no_such_table", "m1", func([]byte, bool) error { return nil }); !errors.Is(err, ErrInvalidTable) {
			t.Errorf("bad table: %v, want ErrInvalidTable", err)
		}
		boom := errors.New("boom")
		if err := txn.RowData(TableMemories, "m1", func([]byte, bool) error { return boom }); !errors.Is(err, boom) {
			t.Errorf("fn's error: %v, want it returned", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
