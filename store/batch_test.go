package store

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestBatchRecordGolden(t *testing.T) {
	r1 := &Row{RowID: "00000000000000000012", Table: TableMemoryVersions, Data: json.RawMessage(`{"number":12}`),
		LamportTS: 7, InstanceID: "home", VV: VV{"home": 7}, UpdatedAt: time.Unix(1711000000, 0)}
	r2 := &Row{RowID: "01J", Table: TableMemoryNumbers, Data: json.RawMessage(`{"number":12}`),
		LamportTS: 8, InstanceID: "home", VV: VV{"home": 8}, UpdatedAt: time.Unix(1711000000, 0)}
	var recs [][]byte
	for _, r := range []*Row{r1, r2} {
		b, err := changeFor(r, OpInsert).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, b)
	}
	b := marshalBatch(recs)
	const golden = `{"schema":2,"type":"batch","changes":[` +
		`{"schema":1,"type":"memory_version_insert","table":"memory_versions","row_id":"00000000000000000012","op":"insert",` +
		`"data":{"number":12},"lamport":7,"instance_id":"home","timestamp":1711000000,"vv":{"home":7}},` +
		`{"schema":1,"type":"memory_number_insert","table":"memory_numbers","row_id":"01J","op":"insert",` +
		`"data":{"number":12},"lamport":8,"instance_id":"home","timestamp":1711000000,"vv":{"home":8}}]}`
	if string(b) != golden {
		t.Fatalf("batch record bytes changed:\n got %s\nwant %s", b, golden)
	}
	// marshalBatch writes what encoding/json writes for the same value.
	var br batchRecord
	if err := json.Unmarshal(b, &br); err != nil {
		t.Fatal(err)
	}
	if std, err := json.Marshal(br); err != nil || string(std) != golden {
		t.Fatalf("encoding/json: %s %v", std, err)
	}
	cs, err := ParseChanges(b)
	if err != nil || len(cs) != 2 || cs[0].RowID != r1.RowID || cs[1].Table != TableMemoryNumbers || cs[1].Lamport != 8 {
		t.Fatalf("parse: %+v %v", cs, err)
	}
	one, err := ParseChanges(recs[0])
	if err != nil || len(one) != 1 || one[0].RowID != r1.RowID {
		t.Fatalf("parse a single record: %+v %v", one, err)
	}
}

func TestParseChangesRefusesBadBatches(t *testing.T) {
	rec := `{"schema":1,"type":"note_insert","table":"notes","row_id":"a","op":"insert","data":{},"lamport":1,"instance_id":"i","timestamp":1,"vv":{"i":1}}`
	for name, b := range map[string]string{
		"one record":     `{"schema":2,"type":"batch","changes":[` + rec + `]}`,
		"no record":      `{"schema":2,"type":"batch","changes":[]}`,
		"bad inner":      `{"schema":2,"type":"batch","changes":[` + rec + `,{"schema":1,"op":"x"}]}`,
		"inner schema 3": `{"schema":2,"type":"batch","changes":[` + rec + `,{"schema":3}]}`,
		"truncated":      `{"schema":2,"type":"batch","changes":[` + rec + `,` + rec,
		"bad table":      `{"schema":2,"type":"batch","changes":[` + rec + `,` + strings.Replace(rec, `"notes"`, `"nope"`, 1) + `]}`,
	} {
		if cs, err := ParseChanges([]byte(b)); err == nil {
			t.Errorf("%s: parsed %d records", name, len(cs))
		}
	}
	if _, err := ParseChanges([]byte(`{"schema":3,"x":1}`)); !errors.Is(err, ErrUnknownSchema) {
		t.Fatalf("schema 3: %v", err)
	}
}

// WriteEntry's rows go in one feed entry, and a group commit keeps the other
// calls' one entry per row.
func TestWriteEntryJournalsOneEntry(t *testing.T) {
	db := openTest(t, t.TempDir())
	defer db.Close()
	j := &fakeJournal{}
	w := startWriter(t, db, j)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, err := w.WriteEntry(ctx, ins("b"+string(rune('a'+i))+"1", `{"n":1}`), ins("b"+string(rune('a'+i))+"2", `{"n":2}`),
				ins("b"+string(rune('a'+i))+"3", `{"n":3}`))
			errs <- err
		}()
		go func() {
			defer wg.Done()
			_, err := w.Write(ctx, ins("s"+string(rune('a'+i))+"1", `{}`), ins("s"+string(rune('a'+i))+"2", `{}`))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.WriteEntry(ctx, ins("alone", `{}`)); err != nil { // one row: a plain record
		t.Fatal(err)
	}
	entries := journalEntries(t, db)
	if len(entries) != 4+8+1 {
		t.Fatalf("%d entries, want 4 batches + 8 single records + 1", len(entries))
	}
	var batches, singles, rows int
	seen := map[string]bool{}
	for _, e := range entries {
		cs, err := ParseChanges(e)
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) > 1 {
			batches++
			if len(cs) != 3 || !strings.HasPrefix(cs[0].RowID, "b") || cs[0].RowID[:2] != cs[2].RowID[:2] {
				t.Fatalf("batch %+v", cs)
			}
			for k := 1; k < len(cs); k++ {
				if cs[k].Lamport != cs[k-1].Lamport+1 {
					t.Fatalf("batch records out of order: %d after %d", cs[k].Lamport, cs[k-1].Lamport)
				}
			}
		} else {
			singles++
		}
		for _, c := range cs {
			rows++
			seen[c.RowID] = true
		}
	}
	if batches != 4 || singles != 9 || rows != 21 || len(seen) != 21 {
		t.Fatalf("%d batches, %d singles, %d rows (%d distinct)", batches, singles, rows, len(seen))
	}
}

// A WriteEntry call larger than maxBatchEntry goes in several batch records,
// each within the bound, in order; a record too large to share stays plain.
func TestAppendBatchesBoundsEntries(t *testing.T) {
	rec := func(i, size int) []byte {
		return []byte(strings.Repeat(string(rune('a'+i%26)), size))
	}
	var recs [][]byte
	for i := range 100 {
		recs = append(recs, rec(i, 1000))
	}
	recs = append(recs, rec(100, maxBatchEntry+1), rec(101, 10))
	entries := appendBatches(nil, recs)
	var got [][]byte
	for _, e := range entries {
		if !strings.HasPrefix(string(e), batchPrefix) {
			got = append(got, e)
			continue
		}
		inner := strings.TrimSuffix(strings.TrimPrefix(string(e), batchPrefix), "]}")
		if len(inner) > maxBatchEntry+len(recs) {
			t.Fatalf("a batch of %d bytes of records, bound %d", len(inner), maxBatchEntry)
		}
		for _, r := range strings.Split(inner, ",") {
			got = append(got, []byte(r))
		}
	}
	if len(got) != len(recs) {
		t.Fatalf("%d records out of %d", len(got), len(recs))
	}
	for i := range recs {
		if string(got[i]) != string(recs[i]) {
			t.Fatalf("record %d changed or moved", i)
		}
	}
	// 100 records of 1000 bytes: per entry as many as fit, then the large one alone and plain,
	// then the last one alone and plain.
	per := maxBatchEntry / 1000
	if per < 2 {
		t.Fatal("the bound holds fewer than two records of 1000 bytes: the test proves nothing")
	}
	n := (100 + per - 1) / per
	if len(entries) != n+2 || string(entries[n]) != string(recs[100]) || string(entries[n+1]) != string(recs[101]) {
		t.Fatalf("%d entries, want %d", len(entries), n+2)
	}
}
