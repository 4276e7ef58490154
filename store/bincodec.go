package store

import (
	"encoding/binary"
	"encoding/json"
	"slices"
)

// The compact binary forms that packages keep beside rows (the apply loop's
// row state, the conflict row index) share these primitives: unsigned and
// signed varints, length-prefixed bytes, and version vectors in canonical
// order. Each format that uses them starts with its own version byte.

// AppendBytes appends uvarint(len(s)) ‖ s.
func AppendBytes[T string | []byte | json.RawMessage](b []byte, s T) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// AppendVV appends v as uvarint(n) ‖ n × (bytes(id) ‖ uvarint(counter)),
// ids sorted, so equal vectors encode to equal bytes.
func AppendVV(b []byte, v VV) []byte {
	ids := make([]string, 0, len(v))
	for id := range v {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	b = binary.AppendUvarint(b, uint64(len(ids)))
	for _, id := range ids {
		b = AppendBytes(b, id)
		b = binary.AppendUvarint(b, v[id])
	}
	return b
}

// BinDecoder reads what the Append functions wrote. A read past the end or
// a malformed varint marks it Bad and every later read returns zero values,
// so a caller checks Bad (and Rest) once at the end.
type BinDecoder struct {
	b   []byte
	bad bool
}

// NewBinDecoder reads b.
func NewBinDecoder(b []byte) *BinDecoder { return &BinDecoder{b: b} }

// Bad reports whether a read failed.
func (d *BinDecoder) Bad() bool { return d.bad }

// Rest returns the bytes not read yet.
func (d *BinDecoder) Rest() []byte { return d.b }

func (d *BinDecoder) fail() { d.bad, d.b = true, nil }

// Uvarint reads an unsigned varint.
func (d *BinDecoder) Uvarint() uint64 {
	x, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return x
}

// Varint reads a signed varint.
func (d *BinDecoder) Varint() int64 {
	x, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return x
}

// Byte reads one byte.
func (d *BinDecoder) Byte() byte {
	if len(d.b) == 0 {
		d.fail()
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

// Bytes reads length-prefixed bytes: a slice of the input, not a copy.
func (d *BinDecoder) Bytes() []byte {
	n := d.Uvarint()
	if n > uint64(len(d.b)) {
		d.fail()
		return nil
	}
	s := d.b[:n:n]
	d.b = d.b[n:]
	return s
}

// Fixed reads the next n bytes: a slice of the input, not a copy.
func (d *BinDecoder) Fixed(n int) []byte {
	if n < 0 || n > len(d.b) {
		d.fail()
		return nil
	}
	s := d.b[:n:n]
	d.b = d.b[n:]
	return s
}

// VV reads a version vector.
func (d *BinDecoder) VV() VV {
	n := d.Uvarint()
	if n > uint64(len(d.b)) {
		d.fail()
		return nil
	}
	v := make(VV, n)
	for range n {
		id := string(d.Bytes())
		v[id] = d.Uvarint()
	}
	return v
}
