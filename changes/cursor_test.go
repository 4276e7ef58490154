package changes

import (
	"encoding/base64"
	"errors"
	"testing"

	"github.com/crow-sync/crow/feed"
)

// A cursor's text form round-trips, is the same for the same lengths
// whatever the map order, and every malformed form is refused with
// ErrBadCursor.
func TestCursorText(t *testing.T) {
	var k1, k2 feed.PublicKey
	k1[0], k2[0] = 1, 2
	c := Cursor{Lengths: map[feed.PublicKey]uint64{k2: 300, k1: 7}}
	s := c.String()
	back, err := ParseCursor(s)
	if err != nil || len(back.Lengths) != 2 || back.Lengths[k1] != 7 || back.Lengths[k2] != 300 {
		t.Fatalf("ParseCursor(%q) = %v, %v", s, back, err)
	}
	if again := (Cursor{Lengths: map[feed.PublicKey]uint64{k1: 7, k2: 300}}).String(); again != s {
		t.Errorf("not canonical: %q vs %q", again, s)
	}
	if z, err := ParseCursor(""); err != nil || len(z.Lengths) != 0 || (Cursor{}).String() != "" {
		t.Errorf("zero cursor: %v %v", z, err)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(s)
	enc := base64.RawURLEncoding.EncodeToString
	dup := append([]byte{1, 2}, append(append(k1[:], 7), append(k1[:], 8)...)...)
	for name, bad := range map[string]string{
		"not base64":   "not a cursor!",
		"version 2":    enc(append([]byte{2}, raw[1:]...)),
		"truncated":    enc(raw[:len(raw)-3]),
		"trailing":     enc(append(append([]byte{}, raw...), 0)),
		"no count":     enc([]byte{1}),
		"a feed twice": enc(dup),
	} {
		if _, err := ParseCursor(bad); !errors.Is(err, ErrBadCursor) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// FuzzParseCursor: no input panics, and whatever parses prints back to a
// form that parses to the same lengths.
func FuzzParseCursor(f *testing.F) {
	var k feed.PublicKey
	f.Add(Cursor{Lengths: map[feed.PublicKey]uint64{k: 5}}.String())
	f.Add("")
	f.Add("AQA")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCursor(s)
		if err != nil {
			return
		}
		back, err := ParseCursor(c.String())
		if err != nil || len(back.Lengths) != len(c.Lengths) {
			t.Fatalf("%q: reparse %v %v", s, back, err)
		}
		for key, l := range c.Lengths {
			if back.Lengths[key] != l {
				t.Fatalf("%q: length of %x", s, key[:4])
			}
		}
	})
}
