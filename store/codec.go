package store

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	sjson "github.com/segmentio/encoding/json"
)

// Hand-written codecs for the two hot JSON shapes of the apply path: the row envelope (Row) and
// the change record (ChangeRecord). They produce and accept exactly what encoding/json does:
//
//   - appendRow writes the bytes json.Marshal(row) writes (same field order, compacted and
//     HTML-escaped data, sorted vv keys, RFC 3339 time); anything it does not handle itself
//     (strings needing escapes, invalid years) goes through encoding/json.
//   - parseRowFast and parseChangeFast accept only the exact form encoding/json writes (keys in
//     struct order, no whitespace, strings without escapes, plain unsigned integers) and report
//     false for anything else, so the caller falls back to json.Unmarshal. For the inputs they
//     accept the result equals json.Unmarshal's (the codec tests compare both on generated and
//     mutated inputs).

// appendRow appends the JSON envelope of r (the bytes of json.Marshal(r)).
func appendRow(b []byte, r *Row) ([]byte, error) {
	b0 := len(b)
	if r.Data != nil && len(r.Data) == 0 {
		return slowAppend(b, r) // encoding/json's error for empty raw data
	}
	b = append(b, `{"row_id":`...)
	b = appendString(b, r.RowID)
	b = append(b, `,"table":`...)
	b = appendString(b, r.Table)
	b = append(b, `,"data":`...)
	var ok bool
	if b, ok = appendRaw(b, r.Data); !ok {
		return slowAppend(b[:b0], r) // encoding/json's error for invalid data
	}
	b = append(b, `,"lamport_ts":`...)
	b = strconv.AppendUint(b, r.LamportTS, 10)
	b = append(b, `,"instance_id":`...)
	b = appendString(b, r.InstanceID)
	b = append(b, `,"vv":`...)
	b = appendVV(b, r.VV)
	b = append(b, `,"deleted":`...)
	b = strconv.AppendBool(b, r.Deleted)
	b = append(b, `,"updated_at":"`...)
	var err error
	if b, err = r.UpdatedAt.AppendText(b); err != nil {
		return nil, err
	}
	return append(b, "\"}"...), nil
}

// appendChange appends the JSON of c (the bytes of json.Marshal(c)); see appendRow.
func appendChange(b []byte, c *ChangeRecord) ([]byte, error) {
	b0 := len(b)
	if c.Data != nil && len(c.Data) == 0 {
		return slowAppend(b, c) // encoding/json's error for empty raw data
	}
	b = append(b, `{"schema":`...)
	b = strconv.AppendInt(b, int64(c.Schema), 10)
	b = append(b, `,"type":`...)
	b = appendString(b, c.Type)
	b = append(b, `,"table":`...)
	b = appendString(b, c.Table)
	b = append(b, `,"row_id":`...)
	b = appendString(b, c.RowID)
	b = append(b, `,"op":`...)
	b = appendString(b, string(c.Op))
	b = append(b, `,"data":`...)
	var ok bool
	if b, ok = appendRaw(b, c.Data); !ok {
		return slowAppend(b[:b0], c) // encoding/json's error for invalid data
	}
	b = append(b, `,"lamport":`...)
	b = strconv.AppendUint(b, c.Lamport, 10)
	b = append(b, `,"instance_id":`...)
	b = appendString(b, c.InstanceID)
	b = append(b, `,"timestamp":`...)
	b = strconv.AppendInt(b, c.Timestamp, 10)
	b = append(b, `,"vv":`...)
	b = appendVV(b, c.VV)
	return append(b, '}'), nil
}

// appendRaw appends raw JSON as encoding/json writes a json.RawMessage field (null for nil;
// compacted; HTML-escaped); false if data is not valid JSON.
func appendRaw(b []byte, data json.RawMessage) ([]byte, bool) {
	if data == nil {
		return append(b, "null"...), true
	}
	start := len(b)
	if sjson.Valid(data) && compacted(data) {
		b = append(b, data...) // what Compact would return (most data: written compact)
	} else {
		buf := bytes.NewBuffer(b)
		if err := sjson.Compact(buf, data); err != nil {
			return b[:start], false
		}
		b = buf.Bytes()
	}
	if needsHTMLEscape(b[start:]) {
		var esc bytes.Buffer
		json.HTMLEscape(&esc, b[start:])
		b = append(b[:start], esc.Bytes()...)
	}
	return b, true
}

// compacted reports whether valid JSON data has no space outside its strings,
// so json.Compact would return it as it is. (segmentio's Compact is
// encoding/json's, a full scan per row: 1.7 % of a satellite's CPU in a 100k
// sync, where every row arrives compact.)
func compacted(data []byte) bool {
	in := false
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case in && c == '\\':
			i++ // the escaped byte cannot end the string
		case c == '"':
			in = !in
		case !in && isSpace(c):
			return false
		}
	}
	return true
}

// slowAppend is appendRow or appendChange through encoding/json.
func slowAppend(b []byte, v any) ([]byte, error) {
	enc, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, enc...), nil
}

func needsHTMLEscape(b []byte) bool {
	for i, c := range b {
		switch {
		case c == '<' || c == '>' || c == '&':
			return true
		case c == 0xE2 && i+2 < len(b) && b[i+1] == 0x80 && b[i+2]&^1 == 0xA8: // U+2028, U+2029
			return true
		}
	}
	return false
}

// plain reports whether s is encoded by encoding/json as itself between quotes.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' || c >= 0x80 {
			return false
		}
	}
	return true
}

func appendString(b []byte, s string) []byte {
	if plain(s) {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	enc, _ := json.Marshal(s) // a string always encodes
	return append(b, enc...)
}

func appendVV(b []byte, v VV) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	ids := make([]string, 0, len(v))
	for id := range v {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	b = append(b, '{')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, id)
		b = append(b, ':')
		b = strconv.AppendUint(b, v[id], 10)
	}
	return append(b, '}')
}

// reader is a cursor over a JSON text in exactly encoding/json's output form. Every method
// reports false when the input is not in that form; the caller then falls back.
type reader struct {
	b []byte
	i int
}

func (r *reader) lit(s string) bool {
	if len(r.b)-r.i < len(s) || string(r.b[r.i:r.i+len(s)]) != s {
		return false
	}
	r.i += len(s)
	return true
}

// str reads a string without escapes, valid UTF-8 and without control characters.
func (r *reader) str() (string, bool) {
	b, ok := r.strBytes()
	return string(b), ok
}

// strBytes is str's string as a slice of the input (no allocation).
func (r *reader) strBytes() ([]byte, bool) {
	if r.i >= len(r.b) || r.b[r.i] != '"' {
		return nil, false
	}
	start := r.i + 1
	ascii := true
	for j := start; j < len(r.b); j++ {
		c := r.b[j]
		switch {
		case c == '"':
			s := r.b[start:j]
			if !ascii && !utf8.Valid(s) {
				return nil, false
			}
			r.i = j + 1
			return s, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= 0x80:
			ascii = false
		}
	}
	return nil, false
}

// uint reads a non-negative integer without leading zeros that fits in a uint64.
func (r *reader) uint() (uint64, bool) {
	start := r.i
	var n uint64
	for r.i < len(r.b) && r.b[r.i] >= '0' && r.b[r.i] <= '9' {
		d := uint64(r.b[r.i] - '0')
		if n > (math.MaxUint64-d)/10 {
			return 0, false
		}
		n = n*10 + d
		r.i++
	}
	if r.i == start || (r.b[start] == '0' && r.i-start > 1) {
		return 0, false
	}
	return n, true
}

func (r *reader) boolean() (bool, bool) {
	switch {
	case r.lit("true"):
		return true, true
	case r.lit("false"):
		return false, true
	}
	return false, false
}

// raw reads one JSON value (validated, without surrounding whitespace) and returns it as a
// slice of the input.
func (r *reader) raw() (json.RawMessage, bool) {
	start, depth := r.i, 0
scan:
	for ; r.i < len(r.b); r.i++ {
		switch r.b[r.i] {
		case '"':
			for r.i++; r.i < len(r.b) && r.b[r.i] != '"'; r.i++ {
				if r.b[r.i] == '\\' {
					r.i++
				}
			}
			if r.i >= len(r.b) {
				return nil, false
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				break scan
			}
			depth--
		case ',':
			if depth == 0 {
				break scan
			}
		}
	}
	v := r.b[start:r.i]
	if len(v) == 0 || isSpace(v[0]) || isSpace(v[len(v)-1]) || !sjson.Valid(v) {
		return nil, false
	}
	return v, true
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (r *reader) vv() (VV, bool) {
	if r.lit("null") {
		return nil, true
	}
	if !r.lit("{") {
		return nil, false
	}
	v := VV{}
	if r.lit("}") {
		return v, true
	}
	for {
		id, ok := r.str()
		if !ok || !r.lit(":") {
			return nil, false
		}
		n, ok := r.uint()
		if !ok {
			return nil, false
		}
		v[id] = n
		if r.lit("}") {
			return v, true
		}
		if !r.lit(",") {
			return nil, false
		}
	}
}

// parseRowFast decodes an envelope in encoding/json's exact output form. Data is copied.
func parseRowFast(b []byte, out *Row) bool {
	r := reader{b: b}
	var ok bool
	if !r.lit(`{"row_id":`) {
		return false
	}
	if out.RowID, ok = r.str(); !ok || !r.lit(`,"table":`) {
		return false
	}
	if out.Table, ok = r.str(); !ok || !r.lit(`,"data":`) {
		return false
	}
	if out.Data, ok = r.raw(); !ok || !r.lit(`,"lamport_ts":`) {
		return false
	}
	if out.LamportTS, ok = r.uint(); !ok || !r.lit(`,"instance_id":`) {
		return false
	}
	if out.InstanceID, ok = r.str(); !ok || !r.lit(`,"vv":`) {
		return false
	}
	if out.VV, ok = r.vv(); !ok || !r.lit(`,"deleted":`) {
		return false
	}
	if out.Deleted, ok = r.boolean(); !ok || !r.lit(`,"updated_at":`) {
		return false
	}
	ts, ok := r.str()
	if !ok || !r.lit("}") || r.i != len(b) {
		return false
	}
	out.Data = bytes.Clone(out.Data) // b is only valid during the badger callback
	var t time.Time
	if err := t.UnmarshalText([]byte(ts)); err != nil {
		return false
	}
	out.UpdatedAt = t
	return true
}

// parseRowDataFast reads only the data and deleted fields of a row envelope in
// encoding/json's exact output form (parseRowFast's), without allocating: data is a slice
// of b. ok is false for any other form.
func parseRowDataFast(b []byte) (data []byte, deleted, ok bool) {
	r := reader{b: b}
	if !r.lit(`{"row_id":`) {
		return nil, false, false
	}
	if _, ok = r.strBytes(); !ok || !r.lit(`,"table":`) {
		return nil, false, false
	}
	if _, ok = r.strBytes(); !ok || !r.lit(`,"data":`) {
		return nil, false, false
	}
	if data, ok = r.raw(); !ok || !r.lit(`,"lamport_ts":`) {
		return nil, false, false
	}
	if _, ok = r.uint(); !ok || !r.lit(`,"instance_id":`) {
		return nil, false, false
	}
	if _, ok = r.strBytes(); !ok || !r.lit(`,"vv":`) {
		return nil, false, false
	}
	if _, ok = r.raw(); !ok || !r.lit(`,"deleted":`) {
		return nil, false, false
	}
	if deleted, ok = r.boolean(); !ok || !r.lit(`,"updated_at":`) {
		return nil, false, false
	}
	if _, ok = r.strBytes(); !ok || !r.lit("}") || r.i != len(b) {
		return nil, false, false
	}
	return data, deleted, true
}

// parseChangeFast decodes a change record in encoding/json's exact output form (the form
// ChangeRecord.Marshal writes). It does not check schema, op or table. Data is a slice of b.
func parseChangeFast(b []byte, out *ChangeRecord) bool {
	r := reader{b: b}
	var ok bool
	if !r.lit(`{"schema":`) {
		return false
	}
	s, ok := r.uint()
	if !ok || s > math.MaxInt32 || !r.lit(`,"type":`) {
		return false
	}
	out.Schema = int(s)
	if out.Type, ok = r.str(); !ok || !r.lit(`,"table":`) {
		return false
	}
	if out.Table, ok = r.str(); !ok || !r.lit(`,"row_id":`) {
		return false
	}
	if out.RowID, ok = r.str(); !ok || !r.lit(`,"op":`) {
		return false
	}
	op, ok := r.str()
	if !ok || !r.lit(`,"data":`) {
		return false
	}
	out.Op = Op(op)
	if out.Data, ok = r.raw(); !ok || !r.lit(`,"lamport":`) {
		return false
	}
	if out.Lamport, ok = r.uint(); !ok || !r.lit(`,"instance_id":`) {
		return false
	}
	if out.InstanceID, ok = r.str(); !ok || !r.lit(`,"timestamp":`) {
		return false
	}
	ts, ok := r.uint()
	if !ok || ts > math.MaxInt64 || !r.lit(`,"vv":`) {
		return false
	}
	out.Timestamp = int64(ts)
	if out.VV, ok = r.vv(); !ok || !r.lit("}") || r.i != len(b) {
		return false
	}
	return true
}
