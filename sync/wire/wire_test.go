package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
)

func key(b byte) (k FeedKey) {
	for i := range k {
		k[i] = b
	}
	return k
}

// goldens pins the version-1 encoding. These bytes must never change; a format
// change is a new version byte (see doc.go).
var goldens = []struct {
	name string
	msg  Message
	hex  string
}{
	{"heads-empty", &Heads{Heads: []Head{}}, "0101" + "00000000"},
	{"heads-one", &Heads{Heads: []Head{{Feed: key(0xaa), Length: 7, Signed: []byte{1, 2, 3}}}},
		"0101" + "00000001" + strings.Repeat("aa", 32) + "0000000000000007" + "00000003" + "010203"},
	{"request", &Request{ReqID: 1, Feed: key(0x11), Start: 4096, End: 8192},
		"0102" + "0000000000000001" + strings.Repeat("11", 32) + "0000000000001000" + "0000000000002000"},
	{"data", &Data{ReqID: 2, Range: Range{
		Head:  Head{Feed: key(0x22), Length: 3, Signed: []byte{0xff}},
		Start: 1, Entries: [][]byte{[]byte("a"), {}}, Proof: []byte{9, 9}}},
		"0103" + "0000000000000002" + strings.Repeat("22", 32) + "0000000000000003" + "00000001ff" +
			"0000000000000001" + "00000002" + "0000000161" + "00000000" + "000000020909"},
	{"data-cleared", &Data{ReqID: 4, Range: Range{
		Head:  Head{Feed: key(0x33), Length: 4, Signed: []byte{0xee}},
		Start: 2, Entries: [][]byte{[]byte("b"), nil, {}}, Proof: []byte{7},
		Cleared: []Cleared{{Index: 3, Size: 5, Leaf: key(0x44)}}}},
		"0105" + "0000000000000004" + strings.Repeat("33", 32) + "0000000000000004" + "00000001ee" +
			"0000000000000002" + "00000003" + "00" + "0000000162" +
			"01" + "0000000000000005" + strings.Repeat("44", 32) + "00" + "00000000" + "0000000107"},
	{"error", &Error{ReqID: 3, Code: CodeNotFound, Message: "no"},
		"0104" + "0000000000000003" + "0001" + "000000026e6f"},
}

func TestGolden(t *testing.T) {
	for _, g := range goldens {
		t.Run(g.name, func(t *testing.T) {
			got := hex.EncodeToString(Encode(g.msg))
			if got != g.hex {
				t.Fatalf("Encode = %s\nwant     %s", got, g.hex)
			}
			raw, _ := hex.DecodeString(g.hex)
			m, err := Decode(raw)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !reflect.DeepEqual(m, g.msg) {
				t.Fatalf("Decode = %#v, want %#v", m, g.msg)
			}
			m, err = DecodeOwned(raw)
			if err != nil {
				t.Fatalf("DecodeOwned: %v", err)
			}
			if !reflect.DeepEqual(m, g.msg) {
				t.Fatalf("DecodeOwned = %#v, want %#v", m, g.msg)
			}
		})
	}
}

// DecodeOwned's byte fields are the payload's own bytes, each capped at its length: an
// append to one entry cannot run into the next. Decode's are copies.
func TestDecodeOwnedAliasesCapped(t *testing.T) {
	msg := &Data{ReqID: 9, Range: Range{Head: Head{Feed: key(1), Length: 2, Signed: []byte{5}},
		Entries: [][]byte{[]byte("first"), []byte("second")}, Proof: []byte{1}}}
	p := Encode(msg)
	m, err := DecodeOwned(p)
	if err != nil {
		t.Fatal(err)
	}
	es := m.(*Data).Range.Entries
	_ = append(es[0], "XXXXXX"...)
	if string(es[1]) != "second" {
		t.Fatalf("an append to entry 0 wrote into entry 1: %q", es[1])
	}
	es[0][0] = 'F'
	if !bytes.Contains(p, []byte("First")) {
		t.Fatal("DecodeOwned's entry is not the payload's bytes")
	}
	c, err := Decode(p)
	if err != nil {
		t.Fatal(err)
	}
	c.(*Data).Range.Entries[1][0] = 'S'
	if !bytes.Contains(p, []byte("second")) {
		t.Fatal("Decode's entry aliases the payload")
	}
}

func TestDecodeErrors(t *testing.T) {
	good := Encode(&Request{ReqID: 1, Feed: key(1), Start: 0, End: 1})
	cases := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, ErrMalformed},
		{"version", append([]byte{2}, good[1:]...), ErrVersion},
		{"type", []byte{1, 0x7f}, ErrType},
		{"short", good[:len(good)-1], ErrMalformed},
		{"trailing", append(append([]byte{}, good...), 0), ErrMalformed},
		{"huge-count", []byte{1, TypeHeads, 0xff, 0xff, 0xff, 0xff}, ErrMalformed},
		{"bad-utf8", Encode(&Error{ReqID: 1, Code: 1, Message: "\xff"}), ErrMalformed},
		{"long-message", Encode(&Error{ReqID: 1, Code: 1, Message: strings.Repeat("x", MaxErrorMessage+1)}), ErrMalformed},
	}
	sparse := func(entries ...string) []byte { // a 0x05 body with these entry encodings
		b, _ := hex.DecodeString("0105" + "0000000000000001" + strings.Repeat("33", 32) + "0000000000000001" + "00000000" +
			"0000000000000000" + fmt.Sprintf("%08x", len(entries)) + strings.Join(entries, "") + "00000000")
		return b
	}
	cleared := "01" + "0000000000000005" + strings.Repeat("44", 32)
	cases = append(cases, []struct {
		name string
		in   []byte
		want error
	}{
		{"cleared-none", sparse("00" + "00000000"), ErrMalformed},
		{"cleared-tag", sparse(cleared, "02"+"00000000"), ErrMalformed},
		{"cleared-size-0", sparse("01" + "0000000000000000" + strings.Repeat("44", 32)), ErrMalformed},
		{"cleared-short", sparse(cleared)[:60], ErrMalformed},
		{"cleared-huge-count", []byte{1, TypeDataCleared, 0, 0, 0, 0, 0, 0, 0, 1}, ErrMalformed},
	}...)
	if _, err := Decode(sparse(cleared, "00"+"00000000")); err != nil {
		t.Fatalf("valid 0x05: %v", err)
	}
	for _, c := range cases {
		if _, err := Decode(c.in); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
	}
}

func TestFrames(t *testing.T) {
	var buf bytes.Buffer
	for _, p := range [][]byte{{}, []byte("hello"), bytes.Repeat([]byte{7}, 1000)} {
		if err := WriteFrame(&buf, p); err != nil {
			t.Fatal(err)
		}
	}
	if got := hex.EncodeToString(buf.Bytes()[:13]); got != "00000000"+"0000000568656c6c6f" {
		t.Fatalf("frame bytes %s", got)
	}
	for _, want := range []int{0, 5, 1000} {
		p, err := ReadFrame(&buf, 0)
		if err != nil || len(p) != want {
			t.Fatalf("ReadFrame = %d bytes, %v; want %d", len(p), err, want)
		}
	}
	if _, err := ReadFrame(&buf, 0); err != io.EOF {
		t.Fatalf("at end: %v, want io.EOF", err)
	}
	big := []byte{0, 0, 0x10, 0}
	if _, err := ReadFrame(bytes.NewReader(big), 100); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("over limit: %v", err)
	}
	if _, err := ReadFrame(bytes.NewReader([]byte{0, 0, 0, 5, 1}), 0); err != io.ErrUnexpectedEOF {
		t.Fatalf("cut frame: %v", err)
	}
	if err := WriteFrame(io.Discard, make([]byte, MaxFrameSize+1)); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("write over limit: %v", err)
	}
}

// FuzzDecode checks that Decode never panics and that whatever it accepts
// re-encodes to the same bytes (the format is canonical).
func FuzzDecode(f *testing.F) {
	for _, g := range goldens {
		raw, _ := hex.DecodeString(g.hex)
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		m, err := Decode(p)
		if err != nil {
			return
		}
		if again := Encode(m); !bytes.Equal(again, p) {
			t.Fatalf("re-encode differs:\n in  %x\n out %x", p, again)
		}
	})
}

// FuzzReadFrame checks that framing never panics nor returns more than the limit.
func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 0xaa}, 16)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, 0)
	f.Fuzz(func(t *testing.T, p []byte, max int) {
		r := bytes.NewReader(p)
		for {
			b, err := ReadFrame(r, max)
			if err != nil {
				return
			}
			limit := max
			if limit <= 0 || limit > MaxFrameSize {
				limit = MaxFrameSize
			}
			if len(b) > limit {
				t.Fatalf("frame of %d over limit %d", len(b), limit)
			}
		}
	})
}

// A Data with an inconsistent Cleared list is a caller bug: Encode panics
// rather than send a range that does not say what it carries.
func TestEncodeBadClearedPanics(t *testing.T) {
	for name, r := range map[string]Range{
		"with data": {Start: 0, Entries: [][]byte{[]byte("x")}, Cleared: []Cleared{{Index: 0, Size: 1}}},
		"outside":   {Start: 0, Entries: [][]byte{nil}, Cleared: []Cleared{{Index: 1, Size: 1}}},
		"size 0":    {Start: 0, Entries: [][]byte{nil}, Cleared: []Cleared{{Index: 0}}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			Encode(&Data{Range: r})
		}()
	}
}
