package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/crow-sync/crow/internal/hashpack"
)

// The row envelope on disk. Since schema 3 a row is stored packed (encodeRow): a
// binary envelope whose data is the JSON appendRow would hold, with its hashes in
// binary. Rows stored earlier as JSON envelopes (appendRow's bytes, first byte '{')
// are read as they are, and packed when the row is next written.
//
//	0x01                 packedRowFormat
//	uvarint              lamport_ts
//	uvarint len ‖ bytes  instance_id
//	byte                 flags: 1 deleted, 2 vv is null
//	vv                   AppendVV's form (absent when null)
//	varint, uvarint      updated_at: Unix seconds, nanoseconds (UTC)
//	uvarint len ‖ bytes  data, its hashes packed (internal/hashpack): the value's last bytes
//
// row_id and table are the key's (t/<table>/<row_id>), not repeated. A row that
// cannot be packed exactly — an updated_at outside UTC, a row id, instance id or
// version-vector id or table that is not valid UTF-8 (the JSON envelope would have changed
// it), data that is not valid JSON (an error either way) — is stored as the JSON
// envelope, so decoding either form gives the Row json.Unmarshal gives for the JSON
// envelope.
//
// A memory keeps three hashes across its rows (content_hash; a version's content_hash
// and event_hash; its number's event_hash): hashpack stores each in 34 bytes instead
// of 66–68 that badger's Snappy cannot shorten. The content is kept as it is.
const packedRowFormat = 0x01

const (
	packedDeleted = 1 << iota
	packedNilVV
)

// errBadPackedRow: a stored row in the packed form that does not decode.
var errBadPackedRow = errors.New("malformed packed row envelope")

// encodeRow appends the stored form of r: packed when it can be, else the JSON envelope
// (and encoding/json's error for data that is empty or not JSON).
func encodeRow(b []byte, r *Row) ([]byte, error) {
	if !packable(r) || (r.Data != nil && len(r.Data) == 0) {
		return appendRow(b, r)
	}
	sp := packScratch.Get().(*[2][]byte)
	defer packScratch.Put(sp)
	// The data as the JSON envelope holds it (compacted, HTML-escaped), so both
	// forms decode to the same bytes.
	raw, ok := appendRaw(sp[0][:0], r.Data)
	if !ok {
		return appendRow(b, r)
	}
	p := hashpack.Append(sp[1][:0], raw)
	sp[0], sp[1] = raw, p

	b = append(b, packedRowFormat)
	b = binary.AppendUvarint(b, r.LamportTS)
	b = AppendBytes(b, r.InstanceID)
	var flags byte
	if r.Deleted {
		flags |= packedDeleted
	}
	if r.VV == nil {
		flags |= packedNilVV
	}
	b = append(b, flags)
	if r.VV != nil {
		b = AppendVV(b, r.VV)
	}
	b = binary.AppendVarint(b, r.UpdatedAt.Unix())
	b = binary.AppendUvarint(b, uint64(r.UpdatedAt.Nanosecond()))
	return AppendBytes(b, p), nil
}

// packScratch holds encodeRow's two buffers: the data's JSON, and the data packed.
var packScratch = sync.Pool{New: func() any { return new([2][]byte) }}

// packable reports whether r's packed form decodes to what its JSON envelope does.
func packable(r *Row) bool {
	if r.UpdatedAt.Location() != time.UTC || r.UpdatedAt.Year() < 0 || r.UpdatedAt.Year() > 9999 {
		return false
	}
	if !utf8.ValidString(r.RowID) || !utf8.ValidString(r.Table) || !utf8.ValidString(r.InstanceID) {
		return false
	}
	for id := range r.VV {
		if !utf8.ValidString(id) {
			return false
		}
	}
	return true
}

// packedHead is a packed envelope's fields before its data.
type packedHead struct {
	lamport    uint64
	instanceID []byte
	flags      byte
	vv         VV
	updatedAt  time.Time
	data       []byte // packed
}

// readPacked reads a packed envelope (val[0] == packedRowFormat); vv is decoded
// only if withVV.
func readPacked(val []byte, withVV bool) (packedHead, bool) {
	var h packedHead
	d := NewBinDecoder(val[1:])
	h.lamport = d.Uvarint()
	h.instanceID = d.Bytes()
	h.flags = d.Byte()
	if h.flags&packedNilVV == 0 {
		if withVV {
			h.vv = d.VV()
		} else {
			for n := d.Uvarint(); n > 0 && !d.Bad(); n-- {
				d.Bytes()
				d.Uvarint()
			}
		}
	}
	sec := d.Varint()
	nsec := d.Uvarint()
	if d.Bad() || nsec >= 1e9 {
		return h, false
	}
	h.updatedAt = time.Unix(sec, int64(nsec)).UTC()
	h.data = d.Bytes()
	if d.Bad() || len(d.Rest()) != 0 || len(h.data) == 0 {
		return h, false
	}
	return h, true
}

// decodeRowValue decodes a stored row (either form) under key into out; Data is
// out's own.
func decodeRowValue(key, val []byte, out *Row) error {
	if len(val) == 0 || val[0] != packedRowFormat {
		if parseRowFast(val, out) {
			return nil
		}
		*out = Row{}
		return json.Unmarshal(val, out)
	}
	table, rowID, ok := splitRowKey(key)
	if !ok {
		return errBadPackedRow
	}
	h, ok := readPacked(val, true)
	if !ok {
		return errBadPackedRow
	}
	data, ok := hashpack.AppendUnpacked(make([]byte, 0, len(h.data)+64), h.data)
	if !ok {
		return errBadPackedRow
	}
	*out = Row{RowID: rowID, Table: table, Data: data, LamportTS: h.lamport, InstanceID: string(h.instanceID),
		VV: h.vv, Deleted: h.flags&packedDeleted != 0, UpdatedAt: h.updatedAt}
	return nil
}

// rowValueData returns a stored row's data and deleted flag (either form): a slice
// of val, or a new slice when its hashes had to be unpacked.
func rowValueData(val []byte) (data []byte, deleted bool, err error) {
	if len(val) == 0 || val[0] != packedRowFormat {
		data, deleted, ok := parseRowDataFast(val)
		if !ok { // another encoding of the envelope: decode it whole
			var r Row
			if err := json.Unmarshal(val, &r); err != nil {
				return nil, false, err
			}
			data, deleted = r.Data, r.Deleted
		}
		return data, deleted, nil
	}
	h, ok := readPacked(val, false)
	if !ok {
		return nil, false, errBadPackedRow
	}
	deleted = h.flags&packedDeleted != 0
	if !hashpack.Packed(h.data) {
		return h.data, deleted, nil
	}
	if data, ok = hashpack.AppendUnpacked(make([]byte, 0, len(h.data)+64), h.data); !ok {
		return nil, false, errBadPackedRow
	}
	return data, deleted, nil
}

// splitRowKey splits t/<table>/<row_id>.
func splitRowKey(key []byte) (table, rowID string, ok bool) {
	if !bytes.HasPrefix(key, []byte("t/")) {
		return "", "", false
	}
	rest := key[2:]
	i := bytes.IndexByte(rest, '/')
	if i <= 0 {
		return "", "", false
	}
	return string(rest[:i]), string(rest[i+1:]), true
}
