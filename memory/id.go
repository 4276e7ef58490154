package memory

import (
	"crypto/rand"
	"encoding/binary"
	"sync"
	"time"
)

// crockford is the ULID alphabet.
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// lastID is the newest id this process made (monotonic ULIDs).
var lastID struct {
	sync.Mutex
	b [16]byte
}

// newID returns a ULID: 48-bit millisecond timestamp then 80 random bits, in 26 Crockford
// base32 characters, so ids sort by creation time. Within a process ids are strictly
// increasing (the ULID spec's monotonic mode): an id made in the same millisecond as the
// previous one, or with a clock that went back, is the previous one plus 1, so two memories
// written in one millisecond still list in the order they were written.
func newID(now time.Time) string {
	var b [16]byte
	ms := uint64(now.UnixMilli())
	binary.BigEndian.PutUint16(b[0:2], uint16(ms>>32))
	binary.BigEndian.PutUint32(b[2:6], uint32(ms))
	rand.Read(b[6:]) // never fails (crypto/rand)
	lastID.Lock()
	if string(b[:6]) <= string(lastID.b[:6]) {
		b = lastID.b
		for i := 15; i >= 6; i-- { // +1 on the 80-bit random part
			b[i]++
			if b[i] != 0 {
				break
			}
		}
	}
	lastID.b = b
	lastID.Unlock()
	return ulidString(b)
}

// ulidString writes the 16 bytes of a ULID as its 26 characters.
func ulidString(b [16]byte) string {
	// 128 bits → 26 chars of 5 bits (the first char carries 3 bits).
	var out [26]byte
	hi := binary.BigEndian.Uint64(b[0:8])
	lo := binary.BigEndian.Uint64(b[8:16])
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(out[:])
}
