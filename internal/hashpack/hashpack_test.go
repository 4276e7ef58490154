package hashpack

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"math/rand/v2"
	"strings"
	"testing"
)

var samples = []string{
	``,
	`{"content_hash":"` + strings.Repeat("ab", 32) + `"}`,
	`{"event_hash":"0x` + strings.Repeat("0f", 32) + `","n":1}`,
	`["` + strings.Repeat("9", 64) + `","` + strings.Repeat("a", 64) + `"]`,
	`"` + strings.Repeat("c", 64) + `"`,
	`{"upper":"` + strings.Repeat("AB", 32) + `"}`,
	`{"short":"` + strings.Repeat("a", 63) + `","long":"` + strings.Repeat("a", 65) + `"}`,
	`{"x":"0x` + strings.Repeat("a", 63) + `","y":"0X` + strings.Repeat("a", 64) + `"}`,
	`{"esc":"a\"` + strings.Repeat("d", 64) + `\"b"}`,
	"{\"ff\":\"\xff\xff" + strings.Repeat("e", 64) + "\xff\"}",
	"\"" + strings.Repeat("e", 64) + "\"\"0x" + strings.Repeat("f", 64) + "\"\xff",
	`"`, `""`, `"0x"`, "\xff", "\xff\x01",
	// base64: packed from 64 characters, padded or not; near misses kept.
	`{"batch":"` + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xfa, 0x01}, 40)) + `"}`,
	`{"b":"` + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 49)) + `","c":"` + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{8}, 50)) + `"}`,
	`"` + base64.StdEncoding.EncodeToString(make([]byte, 48)) + "\xff\"", // Escape after it
}

// base64Kept are near misses of a packable base64 string, stored as they are.
var base64Kept = []string{
	`"` + strings.Repeat("A", 60) + `"`,             // too short
	`"` + strings.Repeat("A", 62) + `B="`,           // non-zero padding bits: not canonical
	`"` + strings.Repeat("A", 61) + `==="`,          // three '='
	`"` + strings.Repeat("A", 60) + `=A=="`,         // '=' inside
	`"` + strings.Repeat("A", 64) + `-_=="`,         // URL alphabet
	`"` + strings.Repeat("A", 65) + `"`,             // not a multiple of 4
	`"` + strings.Repeat("A", 64) + "\xff" + `AAA"`, // a byte outside the alphabet
	`"` + strings.Repeat("A", 64) + `\nAAA"`,        // a JSON escape
	`{"a":` + strings.Repeat("A", 64) + `}`,         // not a string
}

// TestBase64NearMissesKept: strings that are not canonical standard base64
// of 64 characters or more are not packed.
func TestBase64NearMissesKept(t *testing.T) {
	for _, in := range base64Kept {
		want := strings.ReplaceAll(in, "\xff", "\xff\x00")
		if got := Append(nil, []byte(in)); string(got) != want {
			t.Errorf("%q packed as %x", in, got)
		}
	}
}

// TestRoundTrip: AppendUnpacked gives back exactly what Append packed, for
// JSON with and without hashes, near misses, Escape bytes and random bytes;
// hashes shrink to 34 bytes and nothing else grows but an Escape byte.
func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	inputs := append(append([]string(nil), samples...), base64Kept...)
	for range 20000 {
		var b []byte
		for range rng.IntN(6) {
			switch rng.IntN(5) {
			case 0:
				b = append(b, samples[rng.IntN(len(samples))]...)
			case 1:
				h := make([]byte, 32)
				for i := range h {
					h[i] = byte(rng.IntN(256))
				}
				b = append(b, `"`+hex.EncodeToString(h)+`"`...)
			case 2:
				b = append(b, `"0x`...)
				b = append(b, strings.Repeat("1", 60+rng.IntN(8))...)
				b = append(b, '"')
			case 3:
				raw := make([]byte, 44+rng.IntN(40))
				for i := range raw {
					raw[i] = byte(rng.IntN(256))
				}
				enc := base64.StdEncoding.EncodeToString(raw)
				if rng.IntN(4) == 0 { // a damaged one: a character changed or dropped
					i := rng.IntN(len(enc))
					enc = enc[:i] + string("A=-\"\xff"[rng.IntN(5)]) + enc[i+1:]
				}
				b = append(b, `"`+enc+`"`...)
			default:
				for range rng.IntN(40) {
					b = append(b, byte(rng.IntN(256)))
				}
			}
		}
		inputs = append(inputs, string(b))
	}
	for i, in := range inputs {
		p := Append([]byte("pre"), []byte(in))
		if !bytes.HasPrefix(p, []byte("pre")) {
			t.Fatalf("%d: prefix lost", i)
		}
		p = p[3:]
		if !Packed(p) && string(p) != in {
			t.Fatalf("%d: %q unpacked differs from %q", i, p, in)
		}
		got, ok := AppendUnpacked([]byte("pre"), p)
		if !ok || string(got) != "pre"+in {
			t.Fatalf("%d: %q\n→ %x\n→ %q %v", i, in, p, got, ok)
		}
		if grow := len(p) - len(in); grow > strings.Count(in, "\xff") {
			t.Fatalf("%d: grew by %d", i, grow)
		}
	}
	h := `{"a":"` + strings.Repeat("0", 64) + `","b":"0x` + strings.Repeat("f", 64) + `"}`
	if p := Append(nil, []byte(h)); len(p) != len(h)-32-34 {
		t.Fatalf("%d bytes packed from %d", len(p), len(h))
	}
	b64 := `{"batch":"` + base64.StdEncoding.EncodeToString(make([]byte, 6831)) + `"}`
	if p := Append(nil, []byte(b64)); len(p) != len(`{"batch":}`)+2+2+6831 {
		t.Fatalf("%d bytes packed from %d", len(p), len(b64))
	}
}

// TestFormat freezes the packed bytes (they are on disk).
func TestFormat(t *testing.T) {
	raw := bytes.Repeat([]byte{0x5c, 0xa7}, 25) // 50 bytes: 68 characters, "=="
	in := `{"h":"` + strings.Repeat("a1", 32) + `","e":"0x` + strings.Repeat("07", 32) + "\",\"x\":\"\xff\",\"b\":\"" +
		base64.StdEncoding.EncodeToString(raw) + `"}`
	want := hex.EncodeToString([]byte(`{"h":`)) + "ff01" + strings.Repeat("a1", 32) +
		hex.EncodeToString([]byte(`,"e":`)) + "ff02" + strings.Repeat("07", 32) +
		hex.EncodeToString([]byte(`,"x":"`)) + "ff00" + hex.EncodeToString([]byte(`","b":`)) +
		"ff0332" + hex.EncodeToString(raw) + hex.EncodeToString([]byte(`}`))
	if got := hex.EncodeToString(Append(nil, []byte(in))); got != want {
		t.Fatalf("packed form changed:\ngot  %s\nwant %s", got, want)
	}
}

// TestRefusesMalformed: a packed text cut inside a sequence, or with an
// unknown form, is refused.
func TestRefusesMalformed(t *testing.T) {
	p := Append(nil, []byte(`"`+strings.Repeat("b", 64)+`"`))
	for n := 1; n < len(p); n++ {
		if _, ok := AppendUnpacked(nil, p[:n]); ok {
			t.Fatalf("cut to %d of %d bytes unpacked", n, len(p))
		}
	}
	p = Append(nil, []byte(`"`+base64.StdEncoding.EncodeToString(make([]byte, 200))+`"`))
	for n := 1; n < len(p); n++ {
		if _, ok := AppendUnpacked(nil, p[:n]); ok {
			t.Fatalf("base64 cut to %d of %d bytes unpacked", n, len(p))
		}
	}
	for _, bad := range [][]byte{{Escape, 0x09}, {Escape, formBase64}, {Escape, formBase64, 0}, {Escape, formBase64, 0x80}, {Escape, formBase64, 2, 1}} {
		if _, ok := AppendUnpacked(nil, bad); ok {
			t.Fatalf("%x unpacked", bad)
		}
	}
}
