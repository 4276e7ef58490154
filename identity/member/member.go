package member

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Version is the binary format version of every record of this package
// (its first byte). Decoders return ErrUnknownVersion for any other value.
const Version = 1

// Field limits, part of the frozen formats: encoders refuse and decoders
// reject anything outside them.
const (
	// MaxIDLen bounds a crow id or an instance id (bytes). Ids are 1 to
	// MaxIDLen bytes of printable ASCII without space (0x21–0x7e).
	MaxIDLen = 128
	// MaxNameLen bounds an instance name (bytes). Names are 1 to MaxNameLen
	// bytes of UTF-8 with no control characters.
	MaxNameLen = 256
	// MaxURLLen bounds the home gateway URL of an invite (bytes).
	MaxURLLen = 2048
	// MaxTextLen bounds the text form of any record; parsers reject longer
	// input before decoding anything.
	MaxTextLen = 8192

	// maxUnix is 9999-12-31T23:59:59Z: times are whole Unix seconds in
	// [0, maxUnix], so that every encoded time has exactly one meaning.
	maxUnix = 253402300799
)

// Errors, each wrapped with detail; test with errors.Is.
var (
	// ErrMalformed: bytes or text that are not a record of the expected
	// kind (prefix, base64, lengths, field syntax, trailing bytes), or
	// fields that cannot be encoded.
	ErrMalformed = errors.New("member: malformed")
	// ErrUnknownVersion: a well-framed record of a format version this
	// code does not know.
	ErrUnknownVersion = errors.New("member: unknown format version")
	// ErrBadSignature: a signature that does not verify under the key it
	// must verify under (root key, joiner's key, home's pinned key).
	ErrBadSignature = errors.New("member: bad signature")
	// ErrWrongCrow: a record of another crow id, or a root key that is not
	// the given crow id's.
	ErrWrongCrow = errors.New("member: wrong crow id")
	// ErrExpired: an invite at or past its expiry.
	ErrExpired = errors.New("member: invite expired")
	// ErrInviteMismatch: a join request whose invite id is not the hash of
	// the secret it is checked against.
	ErrInviteMismatch = errors.New("member: join request is for another invite")
	// ErrBadMAC: a join request whose MAC does not verify under the invite
	// secret (the sender does not know the secret, or a field was changed).
	ErrBadMAC = errors.New("member: join request MAC does not verify")
	// ErrAnswerMismatch: a join answer whose certificate is not for the
	// request (another key, instance id or name).
	ErrAnswerMismatch = errors.New("member: join answer does not match the request")
)

// textEncoding rejects non-zero padding bits, so a record has one spelling.
var textEncoding = base64.RawURLEncoding.Strict()

func toText(prefix string, b []byte) string {
	return prefix + textEncoding.EncodeToString(b)
}

// fromText checks the prefix and the alphabet and decodes the base64url part.
func fromText(prefix, s string) ([]byte, error) {
	if len(s) > MaxTextLen {
		return nil, fmt.Errorf("%w: %d bytes of text, max %d", ErrMalformed, len(s), MaxTextLen)
	}
	rest, ok := strings.CutPrefix(s, prefix)
	if !ok {
		return nil, fmt.Errorf("%w: does not start with %q", ErrMalformed, prefix)
	}
	// encoding/base64 skips \r and \n; the text form has none.
	if i := strings.IndexFunc(rest, notBase64URL); i >= 0 {
		return nil, fmt.Errorf("%w: byte %q is not base64url", ErrMalformed, rest[i])
	}
	b, err := textEncoding.DecodeString(rest)
	if err != nil {
		return nil, fmt.Errorf("%w: base64url: %v", ErrMalformed, err)
	}
	return b, nil
}

func notBase64URL(r rune) bool {
	return !('A' <= r && r <= 'Z' || 'a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '-' || r == '_')
}

// checkID reports whether s is a valid crow id or instance id.
func checkID(what, s string) error {
	if s == "" || len(s) > MaxIDLen {
		return fmt.Errorf("%w: %s is %d bytes, want 1 to %d", ErrMalformed, what, len(s), MaxIDLen)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return fmt.Errorf("%w: %s has byte 0x%02x at %d", ErrMalformed, what, s[i], i)
		}
	}
	return nil
}

// checkName reports whether s is a valid instance name.
func checkName(s string) error {
	if s == "" || len(s) > MaxNameLen {
		return fmt.Errorf("%w: name is %d bytes, want 1 to %d", ErrMalformed, len(s), MaxNameLen)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: name is not UTF-8", ErrMalformed)
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return fmt.Errorf("%w: name has control character %U", ErrMalformed, r)
		}
	}
	return nil
}

func checkKey(what string, k ed25519.PublicKey) error {
	if len(k) != ed25519.PublicKeySize {
		return fmt.Errorf("%w: %s is %d bytes, want %d", ErrMalformed, what, len(k), ed25519.PublicKeySize)
	}
	return nil
}

func checkTime(what string, t time.Time) error {
	if u := t.Unix(); t.IsZero() || u < 0 || u > maxUnix {
		return fmt.Errorf("%w: %s %v out of range", ErrMalformed, what, t)
	}
	return nil
}

// enc appends the frozen field encodings.
type enc []byte

func (e *enc) u8(v byte)        { *e = append(*e, v) }
func (e *enc) raw(b []byte)     { *e = append(*e, b...) }
func (e *enc) str(s string)     { *e = append(binary.BigEndian.AppendUint16(*e, uint16(len(s))), s...) }
func (e *enc) unix(t time.Time) { *e = binary.BigEndian.AppendUint64(*e, uint64(t.Unix())) }

// dec reads the frozen field encodings; the first failure sticks.
type dec struct {
	b   []byte
	err error
}

func (d *dec) fail(format string, a ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, a...)...)
	}
}

// version reads the version byte.
func (d *dec) version(kind string) {
	if len(d.b) == 0 {
		d.fail("empty %s", kind)
		return
	}
	if v := d.b[0]; v != Version {
		d.err = fmt.Errorf("%w: %s version %d (this code knows %d)", ErrUnknownVersion, kind, v, Version)
		return
	}
	d.b = d.b[1:]
}

func (d *dec) fixed(what string, n int) []byte {
	if d.err != nil {
		return nil
	}
	if len(d.b) < n {
		d.fail("%s: %d bytes left, want %d", what, len(d.b), n)
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *dec) u8(what string) byte {
	if b := d.fixed(what, 1); b != nil {
		return b[0]
	}
	return 0
}

func (d *dec) str(what string) string {
	n := d.fixed(what+" length", 2)
	if n == nil {
		return ""
	}
	return string(d.fixed(what, int(binary.BigEndian.Uint16(n))))
}

func (d *dec) key(what string) ed25519.PublicKey {
	if b := d.fixed(what, ed25519.PublicKeySize); b != nil {
		return ed25519.PublicKey(append([]byte(nil), b...))
	}
	return nil
}

func (d *dec) unix(what string) time.Time {
	b := d.fixed(what, 8)
	if b == nil {
		return time.Time{}
	}
	u := binary.BigEndian.Uint64(b)
	if u > maxUnix {
		d.fail("%s %d out of range", what, int64(u))
		return time.Time{}
	}
	return time.Unix(int64(u), 0).UTC()
}

// end fails on trailing bytes and returns the first failure.
func (d *dec) end() error {
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
	return d.err
}

// signed is domain || 0x00 || body: the bytes a record's signature covers.
func signed(domain string, body []byte) []byte {
	m := make([]byte, 0, len(domain)+1+len(body))
	m = append(m, domain...)
	m = append(m, 0)
	return append(m, body...)
}

// CheckName reports whether s is a valid instance name for a certificate
// (1 to MaxNameLen bytes of UTF-8, no control characters).
func CheckName(s string) error { return checkName(s) }
