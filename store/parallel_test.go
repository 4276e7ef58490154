package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// TestLargeWriteEncodedInOrder: a call large enough to be checked and encoded on several
// cores (write's validation, stageBatch's rows and change records) stores every row as
// given, journals one record per row in the call's order with consecutive clocks, and a
// call with one bad mutation deep inside is refused whole with that mutation's error.
func TestLargeWriteEncodedInOrder(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	db := openTest(t, t.TempDir())
	defer db.Close()
	w := startWriter(t, db, &fakeJournal{})
	ctx := context.Background()
	const n = 1000
	muts := make([]Mutation, n)
	for i := range muts {
		// Rows of every shape: packable hashes, HTML-escaped text, nested values.
		data := fmt.Sprintf(`{"i":%d,"content_hash":"%064x","text":"<a & b> %d","n":{"k":[%d]}}`, i, i*7919, i, i)
		if i%3 == 0 {
			data = fmt.Sprintf(`{"i":%d}`, i)
		}
		muts[i] = Mutation{Table: TableMemories, RowID: fmt.Sprintf("m%04d", i), Op: OpInsert, Data: json.RawMessage(data)}
	}

	bad := append([]Mutation(nil), muts...)
	bad[777] = Mutation{Table: TableMemories, RowID: "m0777", Op: OpInsert, Data: json.RawMessage(`{"i":`)}
	bad[901] = Mutation{Table: TableMemories, RowID: "bad id/", Op: OpInsert, Data: json.RawMessage(`{}`)}
	if _, err := w.Write(ctx, bad...); !errors.Is(err, ErrInvalidMutation) || !strings.Contains(err.Error(), "m0777") {
		t.Fatalf("a call with mutation 777 bad: %v, want its refusal", err)
	}
	if got := journalEntries(t, db); len(got) != 0 {
		t.Fatalf("a refused call journalled %d entries", len(got))
	}

	rows, err := w.Write(ctx, muts...)
	if err != nil {
		t.Fatal(err)
	}
	entries := journalEntries(t, db)
	if len(rows) != n || len(entries) != n {
		t.Fatalf("%d rows, %d journal entries, want %d each", len(rows), len(entries), n)
	}
	for i, e := range entries {
		c, err := ParseChange(e)
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		if c.RowID != muts[i].RowID || c.Lamport != rows[0].LamportTS+uint64(i) || c.Op != OpInsert {
			t.Fatalf("entry %d is %s at lamport %d (%s), want %s at %d", i, c.RowID, c.Lamport, c.Op, muts[i].RowID, rows[0].LamportTS+uint64(i))
		}
		if !jsonEqual(c.Data, muts[i].Data) {
			t.Fatalf("entry %d data %s, want %s", i, c.Data, muts[i].Data)
		}
		got, err := db.Get(TableMemories, muts[i].RowID)
		if err != nil {
			t.Fatal(err)
		}
		if !jsonEqual(got.Data, muts[i].Data) || got.LamportTS != c.Lamport || rows[i].Seq != rows[0].Seq+uint64(i) {
			t.Fatalf("row %s read back as %s at lamport %d (queue seq %d), want %s at %d (seq %d)",
				muts[i].RowID, got.Data, got.LamportTS, rows[i].Seq, muts[i].Data, c.Lamport, rows[0].Seq+uint64(i))
		}
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}
