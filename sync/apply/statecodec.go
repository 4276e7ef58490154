package apply

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"slices"

	"github.com/crow-sync/crow/store"
)

// The row state (n/apply/r/) is stored in a compact binary form, version 1:
//
//	0x01
//	seen      vv
//	uvarint   number of versions, then per version:
//	  string  origin
//	  uvarint lamport
//	  vv      its own vector
//	  byte    1 if a tombstone, else 0
//	  varint  ts (Unix seconds)
//	  bytes   data
//
// where string and bytes are a uvarint length and the bytes, and vv is a
// uvarint count then (string id, uvarint counter) pairs sorted by id. A value
// starting with '{' is the JSON form written by earlier builds; it is still
// read, and rewritten in binary form the next time the row's state changes.
const stateV1 = 0x01

var errBadState = errors.New("malformed row state")

func encodeState(st *rowState) []byte {
	b := make([]byte, 0, 64+len(st.Versions)*96)
	b = append(b, stateV1)
	b = appendVV(b, st.Seen)
	b = binary.AppendUvarint(b, uint64(len(st.Versions)))
	for _, v := range st.Versions {
		b = appendBytes(b, v.Origin)
		b = binary.AppendUvarint(b, v.Lamport)
		b = appendVV(b, v.VV)
		if v.Deleted {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
		b = binary.AppendVarint(b, v.TS)
		b = appendBytes(b, v.Data)
	}
	return b
}

func appendBytes[T string | []byte | json.RawMessage](b []byte, s T) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendVV(b []byte, v store.VV) []byte {
	ids := make([]string, 0, len(v))
	for id := range v {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	b = binary.AppendUvarint(b, uint64(len(ids)))
	for _, id := range ids {
		b = appendBytes(b, id)
		b = binary.AppendUvarint(b, v[id])
	}
	return b
}

// decodeState decodes a stored row state (binary or legacy JSON). It copies
// everything it keeps out of b.
func decodeState(b []byte) (*rowState, error) {
	if len(b) > 0 && b[0] == '{' {
		st := new(rowState)
		return st, json.Unmarshal(b, st)
	}
	if len(b) == 0 || b[0] != stateV1 {
		return nil, errBadState
	}
	d := stateDecoder{b: b[1:]}
	st := &rowState{Seen: d.vv()}
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		return nil, errBadState
	}
	st.Versions = make([]*version, 0, n)
	for range n {
		v := &version{Origin: string(d.bytes())}
		v.Lamport = d.uvarint()
		v.VV = d.vv()
		v.Deleted = d.byte() == 1
		v.TS = d.varint()
		if data := d.bytes(); len(data) > 0 {
			v.Data = json.RawMessage(slices.Clone(data))
		}
		st.Versions = append(st.Versions, v)
	}
	if d.bad || len(d.b) != 0 {
		return nil, errBadState
	}
	return st, nil
}

type stateDecoder struct {
	b   []byte
	bad bool
}

func (d *stateDecoder) uvarint() uint64 {
	x, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.bad, d.b = true, nil
		return 0
	}
	d.b = d.b[n:]
	return x
}

func (d *stateDecoder) varint() int64 {
	x, n := binary.Varint(d.b)
	if n <= 0 {
		d.bad, d.b = true, nil
		return 0
	}
	d.b = d.b[n:]
	return x
}

func (d *stateDecoder) byte() byte {
	if len(d.b) == 0 {
		d.bad = true
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

// bytes returns the next length-prefixed bytes, a slice of the input.
func (d *stateDecoder) bytes() []byte {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.bad, d.b = true, nil
		return nil
	}
	s := d.b[:n:n]
	d.b = d.b[n:]
	return s
}

func (d *stateDecoder) vv() store.VV {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.bad, d.b = true, nil
		return nil
	}
	v := make(store.VV, n)
	for range n {
		id := string(d.bytes())
		v[id] = d.uvarint()
	}
	return v
}
