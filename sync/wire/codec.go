package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Errors returned by Decode.
var (
	// ErrVersion is returned by Decode for a payload whose version byte is unknown.
	ErrVersion = errors.New("wire: unknown version")
	// ErrType is returned by Decode for an unknown message type.
	ErrType = errors.New("wire: unknown message type")
	// ErrMalformed is returned by Decode for a payload that does not follow the
	// format (short, trailing bytes, impossible counts, bad UTF-8).
	ErrMalformed = errors.New("wire: malformed message")
)

// Encode returns the version-1 payload of m (without the frame header).
func Encode(m Message) []byte {
	b := make([]byte, 0, sizeHint(m))
	b = append(b, Version, m.msgType())
	switch m := m.(type) {
	case *Heads:
		b = binary.BigEndian.AppendUint32(b, uint32(len(m.Heads)))
		for _, h := range m.Heads {
			b = appendHead(b, h)
		}
	case *Request:
		b = binary.BigEndian.AppendUint64(b, m.ReqID)
		b = append(b, m.Feed[:]...)
		b = binary.BigEndian.AppendUint64(b, m.Start)
		b = binary.BigEndian.AppendUint64(b, m.End)
	case *Data:
		b = binary.BigEndian.AppendUint64(b, m.ReqID)
		b = appendHead(b, m.Head)
		b = binary.BigEndian.AppendUint64(b, m.Start)
		b = binary.BigEndian.AppendUint32(b, uint32(len(m.Entries)))
		if len(m.Cleared) == 0 {
			for _, e := range m.Entries {
				b = appendBytes(b, e)
			}
		} else {
			b = appendSparse(b, &m.Range)
		}
		b = appendBytes(b, m.Proof)
	case *Error:
		b = binary.BigEndian.AppendUint64(b, m.ReqID)
		b = binary.BigEndian.AppendUint16(b, uint16(m.Code))
		b = appendBytes(b, []byte(m.Message))
	default:
		panic(fmt.Sprintf("wire: Encode of %T", m))
	}
	return b
}

// sizeHint is about the encoded size of m (exact for Data without cleared
// entries), so a megabyte range is not copied at each doubling of its slice.
func sizeHint(m Message) int {
	d, ok := m.(*Data)
	if !ok {
		return 64
	}
	n := 2 + 8 + len(d.Head.Feed) + 8 + 4 + len(d.Head.Signed) + 8 + 4 + 4 + len(d.Proof)
	for _, e := range d.Entries {
		n += 1 + 4 + len(e)
	}
	return n + len(d.Cleared)*(1+8+32)
}

// Entry tags of TypeDataCleared.
const (
	entryData    byte = 0x00
	entryCleared byte = 0x01
)

// appendSparse appends the entries of r, each tagged as data or cleared. It
// panics if r.Cleared is not in index order within the range, or names an
// entry that has data or a size of 0 (the caller builds it from a feed).
func appendSparse(b []byte, r *Range) []byte {
	c := r.Cleared
	for j, e := range r.Entries {
		i := r.Start + uint64(j)
		if len(c) > 0 && c[0].Index == i {
			if e != nil || c[0].Size == 0 {
				panic(fmt.Sprintf("wire: cleared entry %d with data or of size 0", i))
			}
			b = append(b, entryCleared)
			b = binary.BigEndian.AppendUint64(b, c[0].Size)
			b = append(b, c[0].Leaf[:]...)
			c = c[1:]
			continue
		}
		b = append(b, entryData)
		b = appendBytes(b, e)
	}
	if len(c) > 0 {
		panic(fmt.Sprintf("wire: cleared entry %d outside [%d,%d) or out of order", c[0].Index, r.Start, r.End()))
	}
	return b
}

func appendHead(b []byte, h Head) []byte {
	b = append(b, h.Feed[:]...)
	b = binary.BigEndian.AppendUint64(b, h.Length)
	return appendBytes(b, h.Signed)
}

func appendBytes(b, v []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(v)))
	return append(b, v...)
}

// Decode parses a payload produced by Encode. The result does not alias p.
func Decode(p []byte) (Message, error) { return decode(p, false) }

// DecodeOwned is Decode for a caller that owns p and never modifies it again (a frame
// read for it alone): the result's byte fields (entries, signatures) are slices of p,
// each capped at its own length, instead of copies. A replica's range is most of a
// satellite's first sync; its entries were copied once more here.
func DecodeOwned(p []byte) (Message, error) { return decode(p, true) }

func decode(p []byte, owned bool) (Message, error) {
	if len(p) < 2 {
		return nil, fmt.Errorf("%w: %d bytes", ErrMalformed, len(p))
	}
	if p[0] != Version {
		return nil, fmt.Errorf("%w: %d", ErrVersion, p[0])
	}
	d := decoder{b: p[2:], owned: owned}
	var m Message
	switch p[1] {
	case TypeHeads:
		n := d.u32()
		// A head takes at least 32+8+4 bytes: bound n before allocating.
		if !d.fits(n, 44) {
			return nil, fmt.Errorf("%w: heads count %d", ErrMalformed, n)
		}
		hs := make([]Head, n)
		for i := range hs {
			hs[i] = d.head()
		}
		m = &Heads{Heads: hs}
	case TypeRequest:
		r := &Request{ReqID: d.u64()}
		r.Feed = d.key()
		r.Start = d.u64()
		r.End = d.u64()
		m = r
	case TypeData:
		r := &Data{ReqID: d.u64()}
		r.Head = d.head()
		r.Start = d.u64()
		n := d.u32()
		if !d.fits(n, 4) {
			return nil, fmt.Errorf("%w: entry count %d", ErrMalformed, n)
		}
		r.Entries = make([][]byte, n)
		for i := range r.Entries {
			r.Entries[i] = d.bytes()
		}
		r.Proof = d.bytes()
		m = r
	case TypeDataCleared:
		r := &Data{ReqID: d.u64()}
		r.Head = d.head()
		r.Start = d.u64()
		n := d.u32()
		if !d.fits(n, 5) {
			return nil, fmt.Errorf("%w: entry count %d", ErrMalformed, n)
		}
		r.Entries = make([][]byte, n)
		for i := range r.Entries {
			switch d.u8() {
			case entryData:
				r.Entries[i] = d.bytes()
			case entryCleared:
				c := Cleared{Index: r.Start + uint64(i), Size: d.u64()}
				copy(c.Leaf[:], d.take(32))
				if c.Size == 0 {
					return nil, fmt.Errorf("%w: cleared entry %d of size 0", ErrMalformed, c.Index)
				}
				r.Cleared = append(r.Cleared, c)
			default:
				if !d.bad {
					return nil, fmt.Errorf("%w: entry %d tag", ErrMalformed, i)
				}
			}
		}
		if !d.bad && len(r.Cleared) == 0 {
			// Such a range is encoded as TypeData.
			return nil, fmt.Errorf("%w: type 0x%02x without a cleared entry", ErrMalformed, p[1])
		}
		r.Proof = d.bytes()
		m = r
	case TypeError:
		e := &Error{ReqID: d.u64(), Code: ErrorCode(d.u16())}
		msg := d.bytes()
		if len(msg) > MaxErrorMessage || !utf8.Valid(msg) {
			return nil, fmt.Errorf("%w: error message", ErrMalformed)
		}
		e.Message = string(msg)
		m = e
	default:
		return nil, fmt.Errorf("%w: 0x%02x", ErrType, p[1])
	}
	if d.bad {
		return nil, fmt.Errorf("%w: type 0x%02x truncated", ErrMalformed, p[1])
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrMalformed, len(d.b))
	}
	return m, nil
}

// decoder reads fixed fields; once it runs short it sets bad and returns zeros.
type decoder struct {
	b     []byte
	bad   bool
	owned bool // bytes returns slices of b (DecodeOwned)
}

func (d *decoder) take(n int) []byte {
	if d.bad || n < 0 || len(d.b) < n {
		d.bad = true
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

// fits reports whether n items of at least min bytes each can still follow.
func (d *decoder) fits(n uint32, min int) bool {
	return !d.bad && uint64(n)*uint64(min) <= uint64(len(d.b))
}

func (d *decoder) u8() byte {
	if v := d.take(1); v != nil {
		return v[0]
	}
	return 0
}

func (d *decoder) u16() uint16 {
	if v := d.take(2); v != nil {
		return binary.BigEndian.Uint16(v)
	}
	return 0
}

func (d *decoder) u32() uint32 {
	if v := d.take(4); v != nil {
		return binary.BigEndian.Uint32(v)
	}
	return 0
}

func (d *decoder) u64() uint64 {
	if v := d.take(8); v != nil {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

func (d *decoder) key() (k FeedKey) {
	copy(k[:], d.take(32))
	return k
}

func (d *decoder) bytes() []byte {
	n := d.u32()
	if uint64(n) > uint64(len(d.b)) {
		d.bad = true
		return nil
	}
	v := d.take(int(n))
	if v == nil {
		return nil
	}
	if d.owned {
		return v[:len(v):len(v)]
	}
	return append(make([]byte, 0, len(v)), v...)
}

func (d *decoder) head() Head {
	return Head{Feed: d.key(), Length: d.u64(), Signed: d.bytes()}
}
