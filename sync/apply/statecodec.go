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
	b = store.AppendVV(b, st.Seen)
	b = binary.AppendUvarint(b, uint64(len(st.Versions)))
	for _, v := range st.Versions {
		b = store.AppendBytes(b, v.Origin)
		b = binary.AppendUvarint(b, v.Lamport)
		b = store.AppendVV(b, v.VV)
		if v.Deleted {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
		b = binary.AppendVarint(b, v.TS)
		b = store.AppendBytes(b, v.Data)
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
	d := store.NewBinDecoder(b[1:])
	st := &rowState{Seen: d.VV()}
	n := d.Uvarint()
	if n > uint64(len(d.Rest())) {
		return nil, errBadState
	}
	st.Versions = make([]*version, 0, n)
	for range n {
		v := &version{Origin: string(d.Bytes())}
		v.Lamport = d.Uvarint()
		v.VV = d.VV()
		v.Deleted = d.Byte() == 1
		v.TS = d.Varint()
		if data := d.Bytes(); len(data) > 0 {
			v.Data = json.RawMessage(slices.Clone(data))
		}
		st.Versions = append(st.Versions, v)
	}
	if d.Bad() || len(d.Rest()) != 0 {
		return nil, errBadState
	}
	return st, nil
}
