package store

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func benchMemoryRow() *Row {
	data := `{"category":"general","content":"` + strings.Repeat("memory text ", 21) + `","content_hash":"` +
		strings.Repeat("a7", 32) + `","created_at":"2026-12-07T04:00:02.237Z","id":"01M97AH6NXBJRG8K64AEP9YN9H","importance":5,` +
		`"origin":"7dd6bac9-4fa9-48e0-97dd-5309d843d177","project":"default","source":"api","tags":[],"updated_at":"2026-12-07T04:00:02.748Z"}`
	return &Row{RowID: "01M97AH6NXBJRG8K64AEP9YN9H", Table: TableMemories, Data: json.RawMessage(data), LamportTS: 307132,
		InstanceID: "7dd6bac9-4fa9-48e0-97dd-5309d843d177", VV: VV{"7dd6bac9-4fa9-48e0-97dd-5309d843d177": 2, "3d22703c-27f3-445a-bdff-968c8118337a": 1},
		UpdatedAt: time.Date(2026, 12, 7, 4, 0, 2, 748000000, time.UTC)}
}

// BenchmarkRowEncode: a memory's row in the packed envelope and in the JSON one.
func BenchmarkRowEncode(b *testing.B) {
	r := benchMemoryRow()
	for _, c := range []struct {
		name string
		f    func([]byte, *Row) ([]byte, error)
	}{{"packed", encodeRow}, {"json", appendRow}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var buf []byte
			for b.Loop() {
				var err error
				if buf, err = c.f(buf[:0], r); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(buf)), "bytes")
		})
	}
}

// BenchmarkRowDecode: the same row read back from either envelope.
func BenchmarkRowDecode(b *testing.B) {
	r := benchMemoryRow()
	key := rowKey(r.Table, r.RowID)
	packed, _ := encodeRow(nil, r)
	env, _ := appendRow(nil, r)
	for _, c := range []struct {
		name string
		val  []byte
	}{{"packed", packed}, {"json", env}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var out Row
				if err := decodeRowValue(key, c.val, &out); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"-data", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := rowValueData(c.val); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
