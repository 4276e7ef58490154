package hashpack

import (
	"bytes"
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
}

// TestRoundTrip: AppendUnpacked gives back exactly what Append packed, for
// JSON with and without hashes, near misses, Escape bytes and random bytes;
// hashes shrink to 34 bytes and nothing else grows but an Escape byte.
func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	inputs := append([]string(nil), samples...)
	for range 20000 {
		var b []byte
		for range rng.IntN(6) {
			switch rng.IntN(4) {
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
}

// TestFormat freezes the packed bytes (they are on disk).
func TestFormat(t *testing.T) {
	in := `{"h":"` + strings.Repeat("a1", 32) + `","e":"0x` + strings.Repeat("07", 32) + "\",\"x\":\"\xff\"}"
	want := hex.EncodeToString([]byte(`{"h":`)) + "ff01" + strings.Repeat("a1", 32) +
		hex.EncodeToString([]byte(`,"e":`)) + "ff02" + strings.Repeat("07", 32) +
		hex.EncodeToString([]byte(`,"x":"`)) + "ff00" + hex.EncodeToString([]byte(`"}`))
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
	if _, ok := AppendUnpacked(nil, []byte{Escape, 0x09}); ok {
		t.Fatal("unknown form unpacked")
	}
}
