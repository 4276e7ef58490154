package feed

import (
	"crypto/ed25519"
	"encoding/binary"
	"encoding/hex"
	"fmt"
)

// Domain is the signing domain of feed heads. Frozen.
const Domain = "crow-feed-v1"

// PublicKey identifies a feed: the author's Ed25519 public key.
type PublicKey [ed25519.PublicKeySize]byte

// String returns the key in lower-case hex.
func (k PublicKey) String() string { return hex.EncodeToString(k[:]) }

// Head is a signed statement by a feed's author: "my feed has Length entries
// and its tree hash is TreeHash". One head is signed per append batch.
//
// Compatibility: the signable bytes (SignableBytes) and the encoding
// (MarshalBinary, version 1) are frozen and pinned by golden tests. A new
// layout gets a new version byte; decoders keep accepting version 1.
type Head struct {
	Key       PublicKey
	Length    uint64
	TreeHash  [HashSize]byte
	Signature [ed25519.SignatureSize]byte
}

const (
	// SignableSize is the length of SignableBytes: domain ‖ key ‖ tree hash ‖ length.
	SignableSize = len(Domain) + 32 + HashSize + 8
	// HeadSize is the length of an encoded head (version 1).
	HeadSize     = 1 + 32 + 8 + HashSize + ed25519.SignatureSize
	headVersion1 = 1
)

// SignableBytes returns the exact bytes the author signs (84 bytes, frozen):
//
//	"crow-feed-v1" (12 ASCII bytes) ‖ feed public key (32) ‖ tree hash (32) ‖ uint64BE(length)
//
// Every field has a fixed size, so no separators are needed.
func (h *Head) SignableBytes() []byte {
	var b [SignableSize]byte
	h.putSignable(&b)
	return b[:]
}

func (h *Head) putSignable(b *[SignableSize]byte) {
	n := copy(b[:], Domain)
	n += copy(b[n:], h.Key[:])
	n += copy(b[n:], h.TreeHash[:])
	binary.BigEndian.PutUint64(b[n:], h.Length)
}

// Verify checks the head's signature against its key. It returns
// ErrBadSignature if the signature does not verify.
func (h *Head) Verify() error {
	var b [SignableSize]byte
	h.putSignable(&b)
	if !ed25519.Verify(h.Key[:], b[:], h.Signature[:]) {
		return fmt.Errorf("verifying head of %s at length %d: %w", h.Key, h.Length, ErrBadSignature)
	}
	return nil
}

// sign fills h.Signature.
func (h *Head) sign(priv ed25519.PrivateKey) {
	var b [SignableSize]byte
	h.putSignable(&b)
	copy(h.Signature[:], ed25519.Sign(priv, b[:]))
}

// MarshalBinary encodes the head (137 bytes, frozen):
//
//	0x01 (version) ‖ key (32) ‖ uint64BE(length) ‖ tree hash (32) ‖ signature (64)
func (h *Head) MarshalBinary() ([]byte, error) { return h.AppendBinary(make([]byte, 0, HeadSize)) }

// AppendBinary appends the encoding of MarshalBinary to b.
func (h *Head) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, headVersion1)
	b = append(b, h.Key[:]...)
	b = binary.BigEndian.AppendUint64(b, h.Length)
	b = append(b, h.TreeHash[:]...)
	return append(b, h.Signature[:]...), nil
}

// UnmarshalBinary decodes a head encoded by MarshalBinary. It returns
// ErrMalformed for any other input. It does not verify the signature.
func (h *Head) UnmarshalBinary(b []byte) error {
	if len(b) != HeadSize {
		return fmt.Errorf("decoding head: %d bytes, want %d: %w", len(b), HeadSize, ErrMalformed)
	}
	if b[0] != headVersion1 {
		return fmt.Errorf("decoding head: version %d: %w", b[0], ErrMalformed)
	}
	var out Head
	copy(out.Key[:], b[1:33])
	out.Length = binary.BigEndian.Uint64(b[33:41])
	copy(out.TreeHash[:], b[41:73])
	copy(out.Signature[:], b[73:])
	if out.Length > maxLength {
		return fmt.Errorf("decoding head: length %d too large: %w", out.Length, ErrMalformed)
	}
	*h = out
	return nil
}
