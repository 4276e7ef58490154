package state

import (
	"bytes"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// maxSafeInteger is 2^53-1, the largest integer every JSON implementation (IEEE 754 double)
// holds exactly. Canonical JSON refuses integers beyond it rather than round them.
const maxSafeInteger = 1<<53 - 1

// canonicalJSON returns the RFC 8785 (JCS) form of one JSON value: no insignificant
// whitespace, object members sorted by the UTF-16 code units of their names, strings with
// the minimal escaping of RFC 8785 §3.2.2.2, and numbers as ECMAScript prints them. Only
// integers within ±(2^53-1) are accepted (a state holds no other numbers). Input that is not
// I-JSON (RFC 7493: invalid UTF-8, lone surrogates, duplicate member names), any other
// number and trailing data are errors wrapping ErrNotCanonicalizable.
func canonicalJSON(in []byte) ([]byte, error) {
	c := canonicalizer{in: in, out: make([]byte, 0, len(in))}
	c.space()
	if err := c.value(0); err != nil {
		return nil, err
	}
	c.space()
	if c.pos != len(c.in) {
		return nil, c.fail("data after the JSON value")
	}
	return c.out, nil
}

// maxDepth bounds the nesting of arrays and objects.
const maxDepth = 1000

// canonicalizer parses in from pos and appends the canonical form to out.
type canonicalizer struct {
	in  []byte
	pos int
	out []byte
}

func (c *canonicalizer) fail(format string, args ...any) error {
	return fmt.Errorf("%w: at byte %d: %s", ErrNotCanonicalizable, c.pos, fmt.Sprintf(format, args...))
}

func (c *canonicalizer) space() {
	for c.pos < len(c.in) {
		switch c.in[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

func (c *canonicalizer) value(depth int) error {
	if c.pos == len(c.in) {
		return c.fail("unexpected end of input")
	}
	switch b := c.in[c.pos]; {
	case b == '{':
		return c.object(depth + 1)
	case b == '[':
		return c.array(depth + 1)
	case b == '"':
		s, err := c.str()
		if err != nil {
			return err
		}
		c.out = appendString(c.out, s)
		return nil
	case b == '-' || (b >= '0' && b <= '9'):
		return c.number()
	}
	for _, lit := range []string{"null", "true", "false"} {
		if bytes.HasPrefix(c.in[c.pos:], []byte(lit)) {
			c.pos += len(lit)
			c.out = append(c.out, lit...)
			return nil
		}
	}
	return c.fail("invalid character %q", c.in[c.pos])
}

func (c *canonicalizer) array(depth int) error {
	if depth > maxDepth {
		return c.fail("nested deeper than %d", maxDepth)
	}
	c.pos++ // [
	c.out = append(c.out, '[')
	c.space()
	if c.pos < len(c.in) && c.in[c.pos] == ']' {
		c.pos++
		c.out = append(c.out, ']')
		return nil
	}
	for {
		c.space()
		if err := c.value(depth); err != nil {
			return err
		}
		c.space()
		if c.pos == len(c.in) {
			return c.fail("unterminated array")
		}
		switch c.in[c.pos] {
		case ',':
			c.pos++
			c.out = append(c.out, ',')
		case ']':
			c.pos++
			c.out = append(c.out, ']')
			return nil
		default:
			return c.fail("expected , or ] in array")
		}
	}
}

func (c *canonicalizer) object(depth int) error {
	if depth > maxDepth {
		return c.fail("nested deeper than %d", maxDepth)
	}
	c.pos++ // {
	c.space()
	if c.pos < len(c.in) && c.in[c.pos] == '}' {
		c.pos++
		c.out = append(c.out, '{', '}')
		return nil
	}
	// Each member's value is canonicalized in place at the end of out; then the members are
	// sorted and the object is written over them.
	type member struct {
		name       string
		start, end int // the value in out
	}
	var members []member
	start := len(c.out)
	for {
		c.space()
		if c.pos == len(c.in) || c.in[c.pos] != '"' {
			return c.fail("expected a member name")
		}
		name, err := c.str()
		if err != nil {
			return err
		}
		c.space()
		if c.pos == len(c.in) || c.in[c.pos] != ':' {
			return c.fail("expected : after member name")
		}
		c.pos++
		c.space()
		vstart := len(c.out)
		if err := c.value(depth); err != nil {
			return err
		}
		members = append(members, member{name, vstart, len(c.out)})
		c.space()
		if c.pos == len(c.in) {
			return c.fail("unterminated object")
		}
		if c.in[c.pos] == '}' {
			c.pos++
			break
		}
		if c.in[c.pos] != ',' {
			return c.fail("expected , or } in object")
		}
		c.pos++
	}
	slices.SortStableFunc(members, func(a, b member) int { return compareUTF16(a.name, b.name) })
	obj := make([]byte, 0, len(c.out)-start+len(members)*16)
	obj = append(obj, '{')
	for i, m := range members {
		if i > 0 {
			if m.name == members[i-1].name {
				return c.fail("duplicate member name %q", m.name)
			}
			obj = append(obj, ',')
		}
		obj = appendString(obj, m.name)
		obj = append(obj, ':')
		obj = append(obj, c.out[m.start:m.end]...)
	}
	obj = append(obj, '}')
	c.out = append(c.out[:start], obj...)
	return nil
}

// str parses a JSON string at pos and returns its value.
func (c *canonicalizer) str() (string, error) {
	c.pos++ // "
	var sb []byte
	for {
		if c.pos == len(c.in) {
			return "", c.fail("unterminated string")
		}
		b := c.in[c.pos]
		switch {
		case b == '"':
			c.pos++
			return string(sb), nil
		case b < 0x20:
			return "", c.fail("control character %#x in a string", b)
		case b < utf8.RuneSelf && b != '\\':
			sb = append(sb, b)
			c.pos++
		case b >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(c.in[c.pos:])
			if r == utf8.RuneError && n <= 1 {
				return "", c.fail("invalid UTF-8")
			}
			sb = append(sb, c.in[c.pos:c.pos+n]...)
			c.pos += n
		default: // an escape
			r, err := c.escape()
			if err != nil {
				return "", err
			}
			sb = utf8.AppendRune(sb, r)
		}
	}
}

// escape parses the escape sequence at pos (a backslash) and returns the character.
func (c *canonicalizer) escape() (rune, error) {
	if c.pos+1 >= len(c.in) {
		return 0, c.fail("unterminated escape")
	}
	e := c.in[c.pos+1]
	c.pos += 2
	switch e {
	case '"', '\\', '/':
		return rune(e), nil
	case 'b':
		return '\b', nil
	case 'f':
		return '\f', nil
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case 'u':
		r, err := c.hex4()
		if err != nil {
			return 0, err
		}
		if !utf16.IsSurrogate(r) {
			return r, nil
		}
		if r < 0xdc00 && bytes.HasPrefix(c.in[c.pos:], []byte(`\u`)) {
			c.pos += 2
			lo, err := c.hex4()
			if err != nil {
				return 0, err
			}
			if pair := utf16.DecodeRune(r, lo); pair != utf8.RuneError {
				return pair, nil
			}
		}
		return 0, c.fail("lone surrogate in a string")
	}
	return 0, c.fail("invalid escape \\%c", e)
}

func (c *canonicalizer) hex4() (rune, error) {
	if c.pos+4 > len(c.in) {
		return 0, c.fail("short \\u escape")
	}
	n, err := strconv.ParseUint(string(c.in[c.pos:c.pos+4]), 16, 16)
	if err != nil {
		return 0, c.fail("bad \\u escape")
	}
	c.pos += 4
	return rune(n), nil
}

// number parses a JSON number at pos and writes it canonically.
func (c *canonicalizer) number() error {
	start := c.pos
	digits := func() int {
		n := 0
		for c.pos < len(c.in) && c.in[c.pos] >= '0' && c.in[c.pos] <= '9' {
			c.pos++
			n++
		}
		return n
	}
	if c.in[c.pos] == '-' {
		c.pos++
	}
	if c.pos < len(c.in) && c.in[c.pos] == '0' {
		c.pos++
	} else if digits() == 0 {
		return c.fail("invalid number")
	}
	if c.pos < len(c.in) && c.in[c.pos] == '.' {
		c.pos++
		if digits() == 0 {
			return c.fail("invalid number")
		}
	}
	if c.pos < len(c.in) && (c.in[c.pos] == 'e' || c.in[c.pos] == 'E') {
		c.pos++
		if c.pos < len(c.in) && (c.in[c.pos] == '+' || c.in[c.pos] == '-') {
			c.pos++
		}
		if digits() == 0 {
			return c.fail("invalid number")
		}
	}
	s, err := canonicalInteger(string(c.in[start:c.pos]))
	if err != nil {
		return err
	}
	c.out = append(c.out, s...)
	return nil
}

// compareUTF16 orders strings by their UTF-16 code units (RFC 8785 §3.2.3) without
// converting them: a supplementary character (a surrogate pair, 0xD800–0xDBFF first) sorts
// after U+D7FF and before U+E000.
func compareUTF16(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			return utf16Key(ra) - utf16Key(rb)
		}
		a, b = a[na:], b[nb:]
	}
	return len(a) - len(b)
}

func utf16Key(r rune) int {
	if r >= 0xe000 && r <= 0xffff {
		return int(r) + 0x200000 // above every supplementary character
	}
	return int(r)
}

// appendString appends a string the canonicalizer validated (see AppendCanonicalString).
func appendString(out []byte, s string) []byte { return AppendCanonicalString(out, s) }

// AppendCanonicalString appends s as RFC 8785 §3.2.2.2 requires: " and \ escaped, the
// control characters U+0000–U+001F as \b \t \n \f \r or \u00xx (lowercase hex),
// everything else as is in UTF-8. Invalid UTF-8 is written as U+FFFD (I-JSON has no other
// form for it). The memory event record (package memory) is encoded with it too.
func AppendCanonicalString(out []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	out = append(out, '"')
	for _, r := range s { // invalid UTF-8 yields utf8.RuneError (U+FFFD)
		switch r {
		case '"':
			out = append(out, '\\', '"')
		case '\\':
			out = append(out, '\\', '\\')
		case '\b':
			out = append(out, '\\', 'b')
		case '\t':
			out = append(out, '\\', 't')
		case '\n':
			out = append(out, '\\', 'n')
		case '\f':
			out = append(out, '\\', 'f')
		case '\r':
			out = append(out, '\\', 'r')
		default:
			if r < 0x20 {
				out = append(out, '\\', 'u', '0', '0', hexDigits[r>>4], hexDigits[r&0xf])
			} else {
				out = utf8.AppendRune(out, r)
			}
		}
	}
	return append(out, '"')
}

// canonicalInteger formats a JSON number literal as ECMAScript's Number.prototype.toString
// would, for integers within ±(2^53-1): plain decimal digits, -0 as 0. Any other number is
// refused.
func canonicalInteger(lit string) (string, error) {
	if n, err := strconv.ParseInt(lit, 10, 64); err == nil { // the common case: digits only
		if n < -maxSafeInteger || n > maxSafeInteger {
			return "", fmt.Errorf("%w: integer %s is beyond ±(2^53-1)", ErrNotCanonicalizable, lit)
		}
		return strconv.FormatInt(n, 10), nil
	}
	// A fraction or an exponent ("1E2", "4.0", "-0.0"). Bound the exponent first: big.Rat
	// would otherwise compute 10^exponent in full.
	if i := strings.IndexAny(lit, "eE"); i >= 0 {
		if exp, err := strconv.Atoi(lit[i+1:]); err != nil || exp > 400 || exp < -400 {
			return "", fmt.Errorf("%w: number %s is out of range", ErrNotCanonicalizable, lit)
		}
	}
	r, ok := new(big.Rat).SetString(lit)
	if !ok {
		return "", fmt.Errorf("%w: bad number %q", ErrNotCanonicalizable, lit)
	}
	if !r.IsInt() {
		return "", fmt.Errorf("%w: number %s is not an integer", ErrNotCanonicalizable, lit)
	}
	n := r.Num()
	if n.CmpAbs(big.NewInt(maxSafeInteger)) > 0 {
		return "", fmt.Errorf("%w: integer %s is beyond ±(2^53-1)", ErrNotCanonicalizable, lit)
	}
	return strconv.FormatInt(n.Int64(), 10), nil
}
