package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"
)

// TestCanonicalJSONRFC8785 runs the examples of RFC 8785 that apply to a JCS limited to
// integers, and checks that the others are refused rather than printed wrongly.
func TestCanonicalJSONRFC8785(t *testing.T) {
	cases := []struct {
		name, in, want string // want "" = refused
	}{
		// §3.2.2, without its non-integer numbers: string escaping and literals.
		{"3.2.2 strings and literals", `{
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`, `{"literals":[null,true,false],"string":"€$\u000f\nA'B\"\\\\\"/"}`},
		// §3.2.2 as published: its numbers are not integers.
		{"3.2.2 with numbers", `{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`, ""},
		// §3.2.3: members sorted by UTF-16 code units (the emoji's surrogates sort before U+FB33).
		{"3.2.3 sorting", `{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}`, "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"ö\":\"Latin Small Letter O With Diaeresis\",\"€\":\"Euro Sign\",\"😀\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}"},
		// Appendix B, the integer rows.
		{"B zero", `0`, `0`},
		{"B minus zero", `-0`, `0`},
		{"B 2^53-1", `9007199254740991`, `9007199254740991`},
		{"B -(2^53-1)", `-9007199254740991`, `-9007199254740991`},
		{"B 2^53", `9007199254740992`, ""},
		{"B 1e+23", `1e23`, ""},
		{"B 5e-324", `5e-324`, ""},
		// Integers written with a fraction or an exponent print as ECMAScript prints them.
		{"exponent", `1E2`, `100`},
		{"fraction zero", `4.000`, `4`},
		{"minus zero fraction", `-0.0`, `0`},
		{"ten tenths", `10e-1`, `1`},
		{"fraction", `4.5`, ""},
		{"huge exponent", `1e999999999`, ""},
		{"tiny exponent", `1e-999999999`, ""},
		// Structure and whitespace.
		{"empty object", ` { } `, `{}`},
		{"empty array", "[\n]", `[]`},
		{"deep", strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth), strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth)},
		{"nested", `{"b":[1,{"z":null,"a":[]}],"a":{"y":true,"x":"x"}}`, `{"a":{"x":"x","y":true},"b":[1,{"a":[],"z":null}]}`},
		// Escaping: only " \ and U+0000–U+001F; DEL, U+2028, <, >, & and / stay as they are.
		{"controls", `"\u0000\u0008\u0009\u000a\u000b\u000c\u000d\u001f\u007f"`, "\"\\u0000\\b\\t\\n\\u000b\\f\\r\\u001f\u007f\""},
		{"no HTML escaping", `"<a href='x'>&amp;</a>\u2028\u2029\/"`, "\"<a href='x'>&amp;</a>\u2028\u2029/\""},
		// Escapes and surrogates.
		{"surrogate pair escape", `"\ud83d\ude00\u00e9\/"`, `"😀é/"`},
		{"uppercase hex escape", `"\u00C9"`, `"É"`},
		{"lone high surrogate", `"\ud83d"`, ""},
		{"lone high surrogate then text", `"\ud83dx"`, ""},
		{"high surrogate then non-surrogate", `"\ud83d\u0041"`, ""},
		{"lone low surrogate", `"\ude00"`, ""},
		{"invalid UTF-8", "\"\xff\"", ""},
		{"raw control character", "\"a\nb\"", ""},
		{"bad escape", `"\x"`, ""},
		{"short escape", `"\u12"`, ""},
		// Refused input.
		{"leading zero", `01`, ""},
		{"lone minus", `-`, ""},
		{"no fraction digits", `1.`, ""},
		{"no exponent digits", `1e`, ""},
		{"plus sign", `+1`, ""},
		{"bad literal", `nul`, ""},
		{"unterminated array", `[1`, ""},
		{"missing comma", `[1 2]`, ""},
		{"unterminated object", `{"a":1`, ""},
		{"member name not a string", `{a:1}`, ""},
		{"too deep", strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1), ""},
		{"duplicate member", `{"a":1,"a":1}`, ""},
		{"trailing data", `{} {}`, ""},
		{"invalid", `{"a":}`, ""},
		{"empty", ``, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := canonicalJSON([]byte(c.in))
			if c.want == "" {
				if !errors.Is(err, ErrNotCanonicalizable) {
					t.Fatalf("got %q, %v; want ErrNotCanonicalizable", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Fatalf("got  %s\nwant %s", got, c.want)
			}
			again, err := canonicalJSON(got)
			if err != nil || !bytes.Equal(again, got) {
				t.Fatalf("not idempotent: %s, %v", again, err)
			}
		})
	}
}

// TestCanonicalEmptyState pins the canonical form of the zero State: every list [], every
// null where the schema says null.
func TestCanonicalEmptyState(t *testing.T) {
	const want = `{"assumptions":[],"constraints":[],"current_focus":"","decisions":[],"metrics":[],"milestones":[],` +
		`"open_questions":[],"phase":"","priorities":[],"risks":[],` +
		`"state_meta":{"consolidated_until_event":0,"previous_state_hash":null,"version":0},"vision":[],"vocabulary":[]}`
	if got := canonical(t, State{}); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	// An item with nil evidence and an empty NullString still encodes [] and null.
	s := State{Decisions: []Decision{{ID: "dec_0001"}}}
	const wantDec = `{"created_version":0,"evidence_memory_ids":[],"evidence_root":"","id":"dec_0001","statement":"","status":"","superseded_by":null,"title":"","updated_version":0}`
	if got := canonical(t, s); !contains(got, `"decisions":[`+wantDec+`]`) {
		t.Fatalf("got %s", got)
	}
}

// TestCanonicalRoundTrip checks that a version survives the storage round trip (JSON encode,
// decode) with the same canonical bytes and hash.
func TestCanonicalRoundTrip(t *testing.T) {
	v := baseVersion(t)
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var back Version
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if err := Verify(back); err != nil {
		t.Fatal(err)
	}
	if canonical(t, back.State) != canonical(t, v.State) || mustJSON(t, back) != string(b) {
		t.Fatal("round trip changed the version")
	}
}

func TestHashRefusesNonCanonicalState(t *testing.T) {
	s := State{Decisions: []Decision{{ID: "dec_0001", Provenance: Provenance{EvidenceMemoryIDs: MemoryIDs{1 << 60}}}}}
	if _, err := Hash(s); !errors.Is(err, ErrNotCanonicalizable) {
		t.Fatalf("Hash of a state with memory number 2^60: %v", err)
	}
}

// TestCompareUTF16 checks the member order against a naive one: compare the UTF-16
// encodings.
func TestCompareUTF16(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	alphabet := []rune{'a', 'B', 0x7f, 0x80, 0xf6, 0x20ac, 0xd7ff, 0xe000, 0xfb33, 0xffff, 0x10000, 0x1f600, 0x10ffff}
	str := func() string {
		var rs []rune
		for range r.IntN(4) {
			rs = append(rs, alphabet[r.IntN(len(alphabet))])
		}
		return string(rs)
	}
	sign := func(n int) int { return min(max(n, -1), 1) }
	for range 20000 {
		a, b := str(), str()
		want := slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
		if got := sign(compareUTF16(a, b)); got != want {
			t.Fatalf("compareUTF16(%q, %q) = %d, want %d", a, b, got, want)
		}
	}
}
