package anchor

import (
	"crypto/rand"
	"errors"
	"fmt"

	"golang.org/x/crypto/chacha20poly1305"
)

// Project ids on chain are identity.Seed.ProjectIDHash (HMAC-SHA256 of the
// name under a seed-derived key): the chain never sees a project name.
// Only home, which holds the seed, computes them (SeedProjectID); it records
// each in its replicated state records, where instances without the seed
// read it (RecordsProjectID, RecordedProjectID).

// Memory ciphertext format (frozen; TestEncryptMemoryGolden pins it):
//
//	nonce (24 bytes, random) ‖ XChaCha20-Poly1305(key, nonce, plaintext,
//	                                              ad = eventHash)
//
// so a ciphertext is len(plaintext)+40 bytes. The key is the seed's
// identity.Seed.MemoryEncryptionKey. Binding the event hash as associated
// data means a ciphertext only decrypts under the event it was anchored
// with: copying it into another memory's event fails.
const (
	nonceSize = chacha20poly1305.NonceSizeX
	// Overhead is how many bytes EncryptMemory adds to the plaintext.
	Overhead = nonceSize + chacha20poly1305.Overhead
)

// ErrDecrypt is returned by DecryptMemory when the ciphertext is not one
// EncryptMemory made with this key and event hash.
var ErrDecrypt = errors.New("anchor: memory ciphertext does not decrypt with this key and event hash")

// EncryptMemory seals plaintext for the chain (see the format above).
func EncryptMemory(key [32]byte, eventHash [32]byte, plaintext []byte) ([]byte, error) {
	var nonce [nonceSize]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, fmt.Errorf("reading nonce: %w", err)
	}
	return encryptMemory(key, eventHash, nonce, plaintext)
}

func encryptMemory(key, eventHash [32]byte, nonce [nonceSize]byte, plaintext []byte) ([]byte, error) {
	aead, err := chacha20poly1305.NewX(key[:])
	if err != nil {
		return nil, fmt.Errorf("making cipher: %w", err)
	}
	out := make([]byte, nonceSize, nonceSize+len(plaintext)+chacha20poly1305.Overhead)
	copy(out, nonce[:])
	return aead.Seal(out, nonce[:], plaintext, eventHash[:]), nil
}

// DecryptMemory opens a ciphertext made by EncryptMemory with the same key
// and event hash. It returns an error wrapping ErrDecrypt otherwise.
func DecryptMemory(key [32]byte, eventHash [32]byte, ciphertext []byte) ([]byte, error) {
	if len(ciphertext) < Overhead {
		return nil, fmt.Errorf("%w: %d bytes is shorter than the %d-byte overhead", ErrDecrypt, len(ciphertext), Overhead)
	}
	aead, err := chacha20poly1305.NewX(key[:])
	if err != nil {
		return nil, fmt.Errorf("making cipher: %w", err)
	}
	pt, err := aead.Open(nil, ciphertext[:nonceSize], ciphertext[nonceSize:], eventHash[:])
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDecrypt, err)
	}
	return pt, nil
}
