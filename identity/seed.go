package identity

import (
	"errors"
	"fmt"
	"io"
)

// SeedSize is the length of a master seed in bytes.
const SeedSize = 32

// Seed is the user's master seed. It is secret: it formats as
// "identity.Seed(REDACTED)" under every fmt verb so that it cannot leak
// through logs; use s[:] to get at the bytes deliberately.
type Seed [SeedSize]byte

// ErrBadSeed is returned by [SeedFromBytes] when the input is not a valid seed.
var ErrBadSeed = errors.New("identity: invalid seed")

// NewSeed reads a fresh seed from rand (normally crypto/rand.Reader).
func NewSeed(rand io.Reader) (Seed, error) {
	var s Seed
	if _, err := io.ReadFull(rand, s[:]); err != nil {
		return Seed{}, fmt.Errorf("reading random seed: %w", err)
	}
	if s.isZero() {
		return Seed{}, fmt.Errorf("reading random seed: %w: all zero", ErrBadSeed)
	}
	return s, nil
}

// SeedFromBytes copies b into a Seed. b must be exactly SeedSize bytes and not
// all zero; otherwise it returns an error wrapping ErrBadSeed.
func SeedFromBytes(b []byte) (Seed, error) {
	var s Seed
	if len(b) != SeedSize {
		return Seed{}, fmt.Errorf("%w: %d bytes, want %d", ErrBadSeed, len(b), SeedSize)
	}
	copy(s[:], b)
	if s.isZero() {
		return Seed{}, fmt.Errorf("%w: all zero", ErrBadSeed)
	}
	return s, nil
}

func (s Seed) isZero() bool {
	var acc byte
	for _, b := range s {
		acc |= b
	}
	return acc == 0
}

// String redacts the seed.
func (s Seed) String() string { return "identity.Seed(REDACTED)" }

// GoString redacts the seed.
func (s Seed) GoString() string { return s.String() }

// Format redacts the seed under every verb, including %x.
func (s Seed) Format(f fmt.State, _ rune) { io.WriteString(f, s.String()) }
