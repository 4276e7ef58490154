package memory

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	sjson "github.com/segmentio/encoding/json"
)

// TestRowDecodeMatchesEncodingJSON pins the read paths' decoder (segmentio's,
// faster) to encoding/json's result for the rows this package reads: memories
// rows and memory_numbers data as written, and hand-written variants a
// replicated or older row could carry (unknown fields, nulls, other key case,
// duplicate keys, escapes, a bad document).
func TestRowDecodeMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	alphabet := []string{"a", "é", "\"", "\\", "\n", "\u2028", "<", "&", "😀", " ", "\x00", "\t"}
	str := func(n int) string {
		var b strings.Builder
		for range r.IntN(n) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		return b.String()
	}
	var docs [][]byte
	for i := range 2000 {
		d := rowData{ID: newID(time.Unix(int64(i), 0)), Project: str(8), Content: str(300),
			ContentHash: ContentHash(str(5)), Category: str(6), Importance: r.IntN(11) - 1,
			Source: str(4), Origin: str(6),
			CreatedAt: time.Unix(r.Int64N(4e9), r.Int64N(1e9)).UTC(),
			UpdatedAt: time.Unix(r.Int64N(4e9), 0).In(time.FixedZone("x", 3600))}
		switch r.IntN(3) {
		case 0: // nil: written as null
		case 1:
			d.Tags = []string{}
		default:
			for range 1 + r.IntN(4) {
				d.Tags = append(d.Tags, str(6))
			}
		}
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, b)
		h := fmt.Sprintf("0x%064x", r.Uint64())
		nb, _ := json.Marshal(numberData{Number: r.Uint64N(1 << 40), EventHash: &h})
		docs = append(docs, nb)
	}
	docs = append(docs,
		[]byte(`{"id":"a","content":"x","extra":{"nested":[1,2,{"k":null}]},"tags":null}`),
		[]byte(`{"ID":"upper","Content":"case","CONTENT_HASH":"h","Tags":["t"]}`),
		[]byte(`{"content":"first","content":"second","importance":3,"importance":7}`),
		[]byte(`{"content":"\u00e9\ud83d\ude00\/","created_at":"2026-12-05T10:00:00.123456789+02:00"}`),
		[]byte(`{"number":null,"event_hash":null}`),
		[]byte(`{"number":12,"event_hash":"0xab"}`),
		[]byte(`{"number":-1}`),
		[]byte(`{"importance":"7"}`),
		[]byte(`{"created_at":"not a time"}`),
		[]byte(`{"content":"truncated`),
		[]byte(`[]`),
	)
	for _, b := range docs {
		for _, mk := range []func() any{func() any { return new(rowData) }, func() any { return new(numberData) }} {
			want, got := mk(), mk()
			werr := json.Unmarshal(b, want)
			gerr := sjson.Unmarshal(b, got)
			if (werr == nil) != (gerr == nil) {
				t.Fatalf("%T from %s: encoding/json err %v, segmentio err %v", want, b, werr, gerr)
			}
			if werr == nil && !reflect.DeepEqual(want, got) {
				t.Fatalf("%T from %s:\nencoding/json %+v\nsegmentio     %+v", want, b, want, got)
			}
		}
	}
}
