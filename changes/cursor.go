package changes

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"github.com/crow-sync/crow/feed"
)

// Cursor is how far a client has seen: the length of every feed held here
// when the answer was made. A feed the cursor does not name is read from its
// first entry (an instance that joined later).
//
// Its text form is opaque to clients: base64url (no padding) of version byte
// 1, a uvarint count, then per feed, in key order, the 32-byte key and a
// uvarint length. Compatibility: a new layout takes a new version byte; an
// unknown one is refused (ErrBadCursor), never guessed.
type Cursor struct {
	Lengths map[feed.PublicKey]uint64
}

// cursorVersion is the version byte of the text form.
const cursorVersion = 1

// maxCursorFeeds bounds the feeds a parsed cursor may name.
const maxCursorFeeds = 4096

// ErrBadCursor is wrapped by ParseCursor's errors.
var ErrBadCursor = errors.New("not a changes cursor")

// String is the cursor's text form ("" for the zero cursor: from the start).
func (c Cursor) String() string {
	if len(c.Lengths) == 0 {
		return ""
	}
	keys := make([]feed.PublicKey, 0, len(c.Lengths))
	for k := range c.Lengths {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return bytes.Compare(keys[i][:], keys[j][:]) < 0 })
	b := []byte{cursorVersion}
	b = binary.AppendUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		b = append(b, k[:]...)
		b = binary.AppendUvarint(b, c.Lengths[k])
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// ParseCursor parses a cursor's text form; "" is the zero cursor.
func ParseCursor(s string) (Cursor, error) {
	c := Cursor{Lengths: map[feed.PublicKey]uint64{}}
	if s == "" {
		return c, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return Cursor{}, fmt.Errorf("%w: not base64url (%v); pass the cursor of a previous answer as it is", ErrBadCursor, err)
	}
	if len(b) == 0 || b[0] != cursorVersion {
		return Cursor{}, fmt.Errorf("%w: unknown cursor version; pass the cursor of a previous answer as it is", ErrBadCursor)
	}
	b = b[1:]
	n, k := binary.Uvarint(b)
	if k <= 0 || n > maxCursorFeeds {
		return Cursor{}, fmt.Errorf("%w: bad feed count", ErrBadCursor)
	}
	b = b[k:]
	for range n {
		if len(b) < len(feed.PublicKey{}) {
			return Cursor{}, fmt.Errorf("%w: truncated", ErrBadCursor)
		}
		var key feed.PublicKey
		copy(key[:], b)
		b = b[len(key):]
		l, k := binary.Uvarint(b)
		if k <= 0 {
			return Cursor{}, fmt.Errorf("%w: truncated", ErrBadCursor)
		}
		b = b[k:]
		if _, dup := c.Lengths[key]; dup {
			return Cursor{}, fmt.Errorf("%w: a feed named twice", ErrBadCursor)
		}
		c.Lengths[key] = l
	}
	if len(b) != 0 {
		return Cursor{}, fmt.Errorf("%w: trailing bytes", ErrBadCursor)
	}
	return c, nil
}
