// Package hashpack stores the hex hashes and long base64 strings of JSON text
// in binary, reversibly.
//
// A JSON string of exactly 64 lowercase hex digits (a SHA-256 content hash) or
// "0x" and 64 of them (an event hash) takes 66 or 68 bytes that Snappy,
// badger's block compression, cannot shorten: it finds repeats, and a hash
// does not repeat. A memory's rows and feed entries hold several. Append
// writes each as 34 bytes (Escape, its form, the 32 bytes). A JSON string of
// standard base64 (with padding, as encoding/json writes a []byte) of at least
// 64 characters, such as an anchor's batch of leaf hashes, is written as the
// bytes it encodes (Escape, its form, uvarint(n), the n bytes): a quarter
// smaller, and just as incompressible. Any Escape byte of the input (JSON text
// holds none when it is UTF-8) is written as Escape 0x00; every other byte is
// kept, so text stays as it was (a scan of the files for a text finds it as
// before). AppendUnpacked gives back the input exactly, whatever it was: JSON,
// other text or binary.
package hashpack

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
)

// Escape starts every packed sequence; input without it is its own packed form.
const Escape = 0xFF

const (
	formLiteral = 0x00 // Escape 0x00: an Escape byte of the input
	formHash    = 0x01 // Escape 0x01 + 32 bytes: "<64 hex digits>"
	formHash0x  = 0x02 // Escape 0x02 + 32 bytes: "0x<64 hex digits>"
	formBase64  = 0x03 // Escape 0x03 + uvarint(n) + n bytes: "<their standard base64>"
	hexLen      = 64
	hashLen     = 32
	// minBase64 is the shortest base64 string packed (48 bytes encoded).
	minBase64 = 64
)

// Append appends data packed to b.
func Append(b, data []byte) []byte {
	hasEscape := bytes.IndexByte(data, Escape) >= 0
	for len(data) > 0 {
		i := 0
		if hasEscape {
			for i < len(data) && data[i] != '"' && data[i] != Escape {
				i++
			}
		} else if i = bytes.IndexByte(data, '"'); i < 0 {
			i = len(data)
		}
		b = append(b, data[:i]...)
		if data = data[i:]; len(data) == 0 {
			break
		}
		if data[0] == Escape {
			b = append(b, Escape, formLiteral)
			data = data[1:]
			continue
		}
		if n := hashString(data, 1); n > 0 {
			b = append(b, Escape, formHash)
			b, _ = hex.AppendDecode(b, data[1:1+hexLen])
			data = data[n:]
			continue
		}
		if len(data) > 3 && data[1] == '0' && data[2] == 'x' {
			if n := hashString(data, 3); n > 0 {
				b = append(b, Escape, formHash0x)
				b, _ = hex.AppendDecode(b, data[3:3+hexLen])
				data = data[n:]
				continue
			}
		}
		if n, size := base64String(data); n > 0 {
			b = append(b, Escape, formBase64)
			b = binary.AppendUvarint(b, uint64(size))
			b, _ = base64.StdEncoding.AppendDecode(b, data[1:n-1])
			data = data[n:]
			continue
		}
		b = append(b, '"')
		data = data[1:]
	}
	return b
}

// base64String returns the length n of the string that starts at data[0] (a
// quote) and the size of the bytes it encodes if it is canonical standard
// base64 of at least minBase64 characters (what encoding/json writes for a
// []byte: re-encoding its bytes gives it back); n is 0 if it is not.
func base64String(data []byte) (n, size int) {
	i := 1
	for i < len(data) && isBase64(data[i]) {
		i++
	}
	pad := 0
	for ; pad < 2 && i < len(data) && data[i] == '='; pad++ {
		i++
	}
	enc := data[1:i]
	if i >= len(data) || data[i] != '"' || len(enc) < minBase64 || len(enc)%4 != 0 {
		return 0, 0
	}
	// Canonical: the bits the padding leaves over are zero, and '=' only
	// ends the string. Decoding and encoding again says both.
	var buf [3]byte
	last := enc[len(enc)-4:]
	k, err := base64.StdEncoding.Decode(buf[:], last)
	if err != nil || base64.StdEncoding.EncodeToString(buf[:k]) != string(last) {
		return 0, 0
	}
	return i + 1, len(enc)/4*3 - pad
}

func isBase64(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '+' || c == '/'
}

// hashString returns the length of the hash string that starts at data[0] (a
// quote), its digits at data[from:]; 0 if there is none.
func hashString(data []byte, from int) int {
	end := from + hexLen
	if len(data) <= end || data[end] != '"' {
		return 0
	}
	for _, c := range data[from:end] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return 0
		}
	}
	return end + 1
}

// Packed reports whether p holds packed sequences (else Append's input was p).
func Packed(p []byte) bool { return bytes.IndexByte(p, Escape) >= 0 }

// AppendUnpacked appends to b the input Append packed into p; false if p is
// not Append's output.
func AppendUnpacked(b, p []byte) ([]byte, bool) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, Escape)
		if i < 0 {
			return append(b, p...), true
		}
		b = append(b, p[:i]...)
		p = p[i:]
		if len(p) < 2 {
			return nil, false
		}
		switch p[1] {
		case formLiteral:
			b = append(b, Escape)
			p = p[2:]
			continue
		case formHash:
			b = append(b, '"')
		case formHash0x:
			b = append(b, `"0x`...)
		case formBase64:
			n, w := binary.Uvarint(p[2:])
			if w <= 0 || n == 0 || n > uint64(len(p)-2-w) {
				return nil, false
			}
			b = append(b, '"')
			b = base64.StdEncoding.AppendEncode(b, p[2+w:2+w+int(n)])
			b = append(b, '"')
			p = p[2+w+int(n):]
			continue
		default:
			return nil, false
		}
		if len(p) < 2+hashLen {
			return nil, false
		}
		b = hex.AppendEncode(b, p[2:2+hashLen])
		b = append(b, '"')
		p = p[2+hashLen:]
	}
	return b, true
}
