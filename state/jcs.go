package state

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
)

// maxSafeInteger is 2^53-1, the largest integer every JSON implementation (IEEE 754 double)
// holds exactly. Canonical JSON refuses integers beyond it rather than round them.
const maxSafeInteger = 1<<53 - 1

// canonicalJSON returns the RFC 8785 (JCS) form of one JSON value: no insignificant
// whitespace, object members sorted by the UTF-16 code units of their names, strings with
// the minimal escaping of RFC 8785 §3.2.2.2, and numbers as ECMAScript prints them. Only
// integers within ±(2^53-1) are accepted (a state holds no other numbers); any other number,
// a duplicate member name or trailing data is an error wrapping ErrNotCanonicalizable.
func canonicalJSON(in []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(in))
	dec.UseNumber()
	var out bytes.Buffer
	out.Grow(len(in))
	if err := writeValue(&out, dec); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: data after the JSON value", ErrNotCanonicalizable)
	}
	return out.Bytes(), nil
}

func writeValue(out *bytes.Buffer, dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotCanonicalizable, err)
	}
	return writeToken(out, dec, tok)
}

func writeToken(out *bytes.Buffer, dec *json.Decoder, tok json.Token) error {
	switch t := tok.(type) {
	case nil:
		out.WriteString("null")
	case bool:
		out.WriteString(strconv.FormatBool(t))
	case string:
		writeString(out, t)
	case json.Number:
		s, err := canonicalInteger(string(t))
		if err != nil {
			return err
		}
		out.WriteString(s)
	case json.Delim:
		switch t {
		case '[':
			out.WriteByte('[')
			for i := 0; dec.More(); i++ {
				if i > 0 {
					out.WriteByte(',')
				}
				if err := writeValue(out, dec); err != nil {
					return err
				}
			}
			out.WriteByte(']')
		case '{':
			if err := writeObject(out, dec); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return fmt.Errorf("%w: %w", ErrNotCanonicalizable, err)
		}
	}
	return nil
}

func writeObject(out *bytes.Buffer, dec *json.Decoder) error {
	type member struct {
		name  string
		key   []uint16
		value []byte
	}
	var members []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("%w: %w", ErrNotCanonicalizable, err)
		}
		name := tok.(string) // the decoder only yields strings as member names
		var v bytes.Buffer
		if err := writeValue(&v, dec); err != nil {
			return err
		}
		members = append(members, member{name, utf16.Encode([]rune(name)), v.Bytes()})
	}
	slices.SortFunc(members, func(a, b member) int { return slices.Compare(a.key, b.key) })
	out.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			if m.name == members[i-1].name {
				return fmt.Errorf("%w: duplicate member name %q", ErrNotCanonicalizable, m.name)
			}
			out.WriteByte(',')
		}
		writeString(out, m.name)
		out.WriteByte(':')
		out.Write(m.value)
	}
	out.WriteByte('}')
	return nil
}

// writeString writes s as RFC 8785 §3.2.2.2 requires: " and \ escaped, the control
// characters U+0000–U+001F as \b \t \n \f \r or \u00xx (lowercase hex), everything else as is
// in UTF-8.
func writeString(out *bytes.Buffer, s string) {
	const hexDigits = "0123456789abcdef"
	out.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			out.WriteString(`\"`)
		case r == '\\':
			out.WriteString(`\\`)
		case r == '\b':
			out.WriteString(`\b`)
		case r == '\t':
			out.WriteString(`\t`)
		case r == '\n':
			out.WriteString(`\n`)
		case r == '\f':
			out.WriteString(`\f`)
		case r == '\r':
			out.WriteString(`\r`)
		case r < 0x20:
			out.WriteString(`\u00`)
			out.WriteByte(hexDigits[r>>4])
			out.WriteByte(hexDigits[r&0xf])
		default:
			out.WriteRune(r) // invalid UTF-8 was already replaced by U+FFFD when decoding
		}
	}
	out.WriteByte('"')
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
