package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	sjson "github.com/segmentio/encoding/json"
)

var codecStrings = []string{"", "r1", "memories", "a b", "x\"y", `back\slash`, "<tag>&", "ünï", "\u2028", "tab\t", "\x01", string([]byte{0xff, 'a'})}

var codecData = []string{`{}`, `{"a":1}`, `{ "b" : [1, 2] , "a":"x y"}`, `{"h":"<b>&amp;</b>"}`, `{"u":"\u2028 \u00e9"}`,
	`null`, `"s"`, `12.5e3`, `[1,{"z":null}]`, `{"n":1,"v":"z"}`, `{"nested":{"deep":[true,false,null]}}`, `{"esc":"a\"b\\c\n"}`}

func randRow(rng *rand.Rand) *Row {
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	vv := VV{}
	for range rng.IntN(4) {
		vv[pick(codecStrings)] = rng.Uint64N(1 << 40)
	}
	if rng.IntN(8) == 0 {
		vv = nil
	}
	var data json.RawMessage = []byte(pick(codecData))
	if rng.IntN(10) == 0 {
		data = nil
	}
	loc := time.UTC
	if rng.IntN(3) == 0 {
		loc = time.FixedZone("x", 3600*rng.IntN(10)-5*3600+60*rng.IntN(2)*30)
	}
	return &Row{RowID: pick(codecStrings), Table: pick(codecStrings), Data: data, LamportTS: rng.Uint64(),
		InstanceID: pick(codecStrings), VV: vv, Deleted: rng.IntN(2) == 0,
		UpdatedAt: time.Unix(rng.Int64N(4e9), rng.Int64N(2)*rng.Int64N(1e9)).In(loc)}
}

// TestAppendRowMatchesEncodingJSON: the hand-written envelope encoder writes
// exactly json.Marshal's bytes.
func TestAppendRowMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		r := randRow(rng)
		want, werr := json.Marshal(r)
		got, gerr := appendRow([]byte("prefix"), r)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("%d: errors differ: %v vs %v (%+v)", i, werr, gerr, r)
		}
		if werr == nil && string(got) != "prefix"+string(want) {
			t.Fatalf("%d:\ngot  %s\nwant prefix%s", i, got, want)
		}
	}
	for _, r := range []*Row{{Data: json.RawMessage{}}, {Data: json.RawMessage(`{bad`)}, {UpdatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}} {
		if _, err := appendRow(nil, r); err == nil {
			t.Fatalf("%+v encoded", r)
		}
	}
}

// allPlain: every string of r is written without escapes.
func allPlain(r *Row) bool {
	for id := range r.VV {
		if !plain(id) {
			return false
		}
	}
	return plain(r.RowID) && plain(r.Table) && plain(r.InstanceID)
}

func sameRow(a, b *Row) bool {
	return a.RowID == b.RowID && a.Table == b.Table && bytes.Equal(a.Data, b.Data) && a.LamportTS == b.LamportTS &&
		a.InstanceID == b.InstanceID && reflect.DeepEqual(a.VV, b.VV) && a.Deleted == b.Deleted &&
		a.UpdatedAt.Equal(b.UpdatedAt) && a.UpdatedAt.Location().String() == b.UpdatedAt.Location().String() &&
		fmt.Sprint(a.UpdatedAt) == fmt.Sprint(b.UpdatedAt)
}

// mutate changes a few bytes of b (insertions, deletions, replacements with
// JSON-significant characters).
func mutate(rng *rand.Rand, b []byte) []byte {
	b = bytes.Clone(b)
	alphabet := []byte(`{}[]",:\ 0123456789-.eEtrufalsn` + "\x00\xff\t")
	for range 1 + rng.IntN(3) {
		if len(b) == 0 {
			break
		}
		i := rng.IntN(len(b))
		switch rng.IntN(3) {
		case 0:
			b[i] = alphabet[rng.IntN(len(alphabet))]
		case 1:
			b = append(b[:i], b[i+1:]...)
		default:
			b = append(b[:i], append([]byte{alphabet[rng.IntN(len(alphabet))]}, b[i:]...)...)
		}
	}
	return b
}

// TestParseFastMatchesEncodingJSON: whenever the fast envelope and change
// record parsers accept an input (generated, or generated then mutated), they
// decode it exactly as json.Unmarshal does; and they accept what the encoders
// write.
func TestParseFastMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	accepted := 0
	for i := range 50000 {
		r := randRow(rng)
		enc, err := json.Marshal(r)
		if err != nil {
			continue
		}
		in := enc
		if i%2 == 1 {
			in = mutate(rng, enc)
		}
		var fast Row
		ok := parseRowFast(in, &fast)
		var slow Row
		serr := json.Unmarshal(in, &slow)
		if i%2 == 0 && !ok && allPlain(r) {
			t.Fatalf("%d: fast parser refused encoder output %s", i, in)
		}
		if ok {
			accepted++
			if serr != nil || !sameRow(&fast, &slow) {
				t.Fatalf("%d: %s\nfast %+v\nslow %+v (%v)", i, in, fast, slow, serr)
			}
		}
		// The lean reader (Txn.RowData) accepts whatever parseRowFast does, and
		// reads the same data and deleted flag as json.Unmarshal.
		data, deleted, dok := parseRowDataFast(in)
		if ok && !dok {
			t.Fatalf("%d: parseRowDataFast refused what parseRowFast read: %s", i, in)
		}
		if dok && serr == nil && (!bytes.Equal(data, slow.Data) || deleted != slow.Deleted) {
			t.Fatalf("%d: %s\nlean data %s deleted %v\nslow data %s deleted %v", i, in, data, deleted, slow.Data, slow.Deleted)
		}

		c := ChangeRecord{Schema: rng.IntN(3), Type: "memory_update", Table: r.Table, RowID: r.RowID, Op: Op(r.InstanceID),
			Data: r.Data, Lamport: r.LamportTS >> 1, InstanceID: r.InstanceID, Timestamp: rng.Int64N(4e9) - 1e9, VV: r.VV}
		enc, err = json.Marshal(c)
		if err != nil {
			continue
		}
		in = enc
		if i%2 == 1 {
			in = mutate(rng, enc)
		}
		var fc, sc ChangeRecord
		ok = parseChangeFast(in, &fc)
		serr = json.Unmarshal(in, &sc)
		if ok && (serr != nil || !reflect.DeepEqual(fc, sc)) {
			t.Fatalf("%d: %s\nfast %+v\nslow %+v (%v)", i, in, fc, sc, serr)
		}
		if i%2 == 0 && !ok && c.Timestamp >= 0 && allPlain(r) && c.Data != nil {
			t.Fatalf("%d: fast parser refused encoder output %s", i, in)
		}
	}
	if accepted < 500 {
		t.Fatalf("fast row parser accepted only %d inputs", accepted)
	}
}

// TestValidAndCompactMatchEncodingJSON: the faster validator and compactor
// the codecs use (segmentio/encoding/json) agree with encoding/json on valid
// and mutated documents: same verdict, same compacted bytes.
func TestValidAndCompactMatchEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	docs := append([]string{}, codecData...)
	docs = append(docs, `{"content":"memory 1: sync badger \"feed\" \\ merkle","tags":["a","b"],"importance":7,"x":-1.5e-3,"u":"\u00e9\ud83d\ude00"}`,
		"{\"a\" : [ 1 , 2 ,\t3 ] ,\n \"b\" : { } , \"c\":\"\\u2028<&>\"}", `[]`, `0`, `-0.0E+1`, `"\x7f"`, "\"\xff\xfe\"")
	checked, spaced := 0, 0
	for i := range 200000 {
		in := []byte(docs[rng.IntN(len(docs))])
		if i%4 != 0 {
			in = mutate(rng, in)
		}
		if got, want := sjson.Valid(in), json.Valid(in); got != want {
			t.Fatalf("Valid(%q) = %v, encoding/json says %v", in, got, want)
		}
		var a, b bytes.Buffer
		errA, errB := sjson.Compact(&a, in), json.Compact(&b, in)
		if (errA == nil) != (errB == nil) || (errA == nil && !bytes.Equal(a.Bytes(), b.Bytes())) {
			t.Fatalf("Compact(%q) = %q, %v; encoding/json: %q, %v", in, a.Bytes(), errA, b.Bytes(), errB)
		}
		// appendRow's shortcut: a valid document it finds compacted is Compact's result.
		if errB == nil {
			if got, want := compacted(in), bytes.Equal(b.Bytes(), in); got != want {
				t.Fatalf("compacted(%q) = %v, but Compact gives %q", in, got, b.Bytes())
			}
			if !bytes.Equal(b.Bytes(), in) {
				spaced++
			}
		}
		checked++
	}
	t.Logf("%d documents checked, %d valid ones with insignificant space", checked, spaced)
	if spaced < 1000 {
		t.Fatalf("only %d valid documents with insignificant space: the shortcut is not exercised", spaced)
	}
}

// TestAppendChangeMatchesEncodingJSON: the change record's encoder (its frozen wire form,
// ChangeRecord.Marshal) writes exactly json.Marshal's bytes.
func TestAppendChangeMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	ops := []Op{OpInsert, OpUpdate, OpDelete, Op(pick(codecStrings))}
	for i := range 20000 {
		r := randRow(rng)
		c := changeFor(r, ops[rng.IntN(len(ops))])
		c.Schema = rng.IntN(3) - 1
		c.Type = pick(codecStrings)
		c.Timestamp = rng.Int64() - rng.Int64()
		want, werr := json.Marshal(c)
		got, gerr := appendChange([]byte("prefix"), &c)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("%d: errors differ: %v vs %v (%+v)", i, werr, gerr, c)
		}
		if werr == nil && string(got) != "prefix"+string(want) {
			t.Fatalf("%d:\ngot  %s\nwant prefix%s", i, got, want)
		}
		if m, err := c.Marshal(); werr == nil && (err != nil || !bytes.Equal(m, want)) {
			t.Fatalf("%d: Marshal = %s, %v; want %s", i, m, err, want)
		}
	}
	for _, c := range []ChangeRecord{{Data: json.RawMessage{}}, {Data: json.RawMessage(`{bad`)}} {
		if _, err := c.Marshal(); err == nil {
			t.Fatalf("%+v encoded", c)
		}
	}
}
