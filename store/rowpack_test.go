package store

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// hashData: row data with hashes (internal/hashpack's tests cover the packing's
// cases; these are what a row holds: a memory's, a number's, a near miss, an
// escaped 0xFF).
var hashData = []string{
	`{"content_hash":"` + strings.Repeat("ab", 32) + `","content":"x"}`,
	`{"number":7,"event_hash":"0x` + strings.Repeat("0f", 32) + `"}`,
	`{"short":"` + strings.Repeat("a", 63) + `"}`,
	"{\"h\":\"" + strings.Repeat("e", 64) + "\",\"ff\":\"\xff\"}",
	`{"kind":"root","batch":"` + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{2, 0xa1, 0x2e}, 70)) + `","items":null}`,
}

func randPackRow(rng *rand.Rand) *Row {
	r := randRow(rng)
	if rng.IntN(2) == 0 {
		r.Data = json.RawMessage(hashData[rng.IntN(len(hashData))])
	}
	if rng.IntN(2) == 0 {
		r.UpdatedAt = r.UpdatedAt.UTC()
	}
	if r.Table == "" { // a table has a name (ValidTable)
		r.Table = TableMemories
	}
	return r
}

// TestPackedRowDecodesAsJSONEnvelope: a row written in the packed envelope
// decodes (whole, or its data alone) to exactly what its JSON envelope decodes
// to; rows that cannot be packed exactly are written as the JSON envelope.
func TestPackedRowDecodesAsJSONEnvelope(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	packed := 0
	for i := range 30000 {
		r := randPackRow(rng)
		env, jerr := appendRow(nil, r)
		val, perr := encodeRow([]byte("prefix"), r)
		if (jerr != nil) != (perr != nil) {
			t.Fatalf("%d: errors differ: %v vs %v (%+v)", i, jerr, perr, r)
		}
		if jerr != nil {
			continue
		}
		if !bytes.HasPrefix(val, []byte("prefix")) {
			t.Fatalf("%d: prefix lost", i)
		}
		val = val[len("prefix"):]
		if (val[0] == packedRowFormat) != packable(r) {
			t.Fatalf("%d: packed %v, packable %v (%+v)", i, val[0] == packedRowFormat, packable(r), r)
		}
		if val[0] == packedRowFormat {
			packed++
		} else if !bytes.Equal(val, env) {
			t.Fatalf("%d: unpacked form is not the JSON envelope:\n%s\n%s", i, val, env)
		}
		var want Row
		if err := json.Unmarshal(env, &want); err != nil {
			t.Fatal(err)
		}
		key := rowKey(r.Table, r.RowID)
		var got Row
		if err := decodeRowValue(key, val, &got); err != nil {
			t.Fatalf("%d: %v (%x)", i, err, val)
		}
		if !sameRow(&got, &want) {
			t.Fatalf("%d:\ngot  %+v\nwant %+v", i, got, want)
		}
		data, deleted, err := rowValueData(val)
		if err != nil || !bytes.Equal(data, want.Data) || deleted != want.Deleted {
			t.Fatalf("%d: data %q %v %v, want %q %v", i, data, deleted, err, want.Data, want.Deleted)
		}
	}
	for _, r := range []*Row{{Table: TableMemories, Data: json.RawMessage{}}, {Table: TableMemories, Data: json.RawMessage(`{bad`)}} {
		if _, err := encodeRow(nil, r); err == nil {
			t.Fatalf("%+v encoded", r)
		}
	}
	if packed < 10000 {
		t.Fatalf("only %d of 30000 rows packed", packed)
	}
}

// TestPackedRowFormat freezes the packed envelope's bytes (rows on disk).
func TestPackedRowFormat(t *testing.T) {
	r := &Row{RowID: "01M97AH6NXBJRG8K64AEP9YN9H", Table: TableMemoryNumbers,
		Data:      json.RawMessage(`{"number":7,"event_hash":"0x` + strings.Repeat("a1", 32) + `","h":"` + strings.Repeat("07", 32) + `","s":"<` + "\xff" + `>"}`),
		LamportTS: 300, InstanceID: "i1", VV: VV{"i2": 2, "i1": 1}, Deleted: true,
		UpdatedAt: time.Date(2026, 12, 7, 4, 0, 2, 759634933, time.UTC)}
	got, err := encodeRow(nil, r)
	if err != nil {
		t.Fatal(err)
	}
	data := hex.EncodeToString([]byte(`{"number":7,"event_hash":`)) + "ff02" + strings.Repeat("a1", 32) +
		hex.EncodeToString([]byte(`,"h":`)) + "ff01" + strings.Repeat("07", 32) +
		hex.EncodeToString([]byte(`,"s":"\u003c`)) + "ff00" + hex.EncodeToString([]byte(`\u003e"}`))
	want := "01" + "ac02" + "026931" + "01" + "02" + "026931" + "01" + "026932" + "02" +
		"84bdb1b10d" + "f5b79cea02" + // 2026-12-07T04:00:02Z zig-zag, 759634933 ns
		hex.EncodeToString(binary.AppendUvarint(nil, uint64(len(data)/2))) + data
	if hex.EncodeToString(got) != want {
		t.Fatalf("packed envelope changed:\ngot  %x\nwant %s", got, want)
	}
	env, _ := appendRow(nil, r)
	if len(got) >= len(env)*2/3 {
		t.Fatalf("packed %d bytes, JSON envelope %d", len(got), len(env))
	}
}

// TestPackedRowRefusesDamage: a damaged packed envelope is an error or a row,
// never a panic; truncations are errors.
func TestPackedRowRefusesDamage(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	r := &Row{RowID: "r", Table: TableMemories, Data: json.RawMessage(hashData[0]), LamportTS: 9, InstanceID: "i",
		VV: VV{"i": 9}, UpdatedAt: time.Unix(1e9, 5).UTC()}
	val, err := encodeRow(nil, r)
	if err != nil || val[0] != packedRowFormat {
		t.Fatalf("%x %v", val, err)
	}
	key := rowKey(r.Table, r.RowID)
	for n := 1; n < len(val); n++ {
		var got Row
		if err := decodeRowValue(key, val[:n], &got); err == nil {
			t.Fatalf("truncated to %d of %d bytes decoded: %+v", n, len(val), got)
		}
		if _, _, err := rowValueData(val[:n]); err == nil {
			t.Fatalf("data of a value truncated to %d of %d bytes read", n, len(val))
		}
	}
	if _, _, err := rowValueData(append(bytes.Clone(val), 0)); err == nil {
		t.Fatal("a value with a byte after its data read")
	}
	for range 5000 {
		m := mutate(rng, val)
		if len(m) > 0 {
			m[0] = packedRowFormat
		}
		var got Row
		_ = decodeRowValue(key, m, &got)
		_, _, _ = rowValueData(m)
	}
}

// TestRowsOfBothFormsRead: a store holding rows written as JSON envelopes (an
// older build's) reads them beside packed ones, and rewriting one packs it.
func TestRowsOfBothFormsRead(t *testing.T) {
	db := openTest(t, t.TempDir())
	t.Cleanup(func() { db.Close() })
	put := func(id, data string) {
		t.Helper()
		err := db.Update(context.Background(), func(txn *Txn) error {
			_, err := txn.PutRow(&Row{RowID: id, Table: TableMemories, Data: json.RawMessage(data), LamportTS: 2,
				InstanceID: "i", VV: VV{"i": 2}, UpdatedAt: time.Unix(2e9, 0).UTC()})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	old := &Row{RowID: "old", Table: TableMemories, Data: json.RawMessage(hashData[0]), LamportTS: 1, InstanceID: "i",
		VV: VV{"i": 1}, UpdatedAt: time.Unix(1e9, 0).UTC()}
	env, err := appendRow(nil, old)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.bdb.Update(func(txn *badger.Txn) error { return txn.Set(rowKey(old.Table, old.RowID), env) }); err != nil {
		t.Fatal(err)
	}
	put("new", hashData[1])
	got, err := db.Get(TableMemories, "old")
	if err != nil || !sameRow(got, old) {
		t.Fatalf("old row: %+v %v", got, err)
	}
	rows, _, err := db.List(TableMemories, ListOptions{})
	if err != nil || len(rows) != 2 || string(rows[0].Data) != hashData[1] || string(rows[1].Data) != hashData[0] {
		t.Fatalf("list: %v %v", rows, err)
	}
	raw := func(id string) []byte {
		var v []byte
		if err := db.bdb.View(func(txn *badger.Txn) error {
			item, err := txn.Get(rowKey(TableMemories, id))
			if err != nil {
				return err
			}
			v, err = item.ValueCopy(nil)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := raw("new"); v[0] != packedRowFormat {
		t.Fatalf("new row stored as %q", v)
	}
	put("old", hashData[2])
	if v := raw("old"); v[0] != packedRowFormat {
		t.Fatalf("rewritten row stored as %q", v)
	}
}
