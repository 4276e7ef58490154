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

// Memory ciphertext formats (frozen; TestEncryptMemoryGolden and
// TestSealMemoryGolden pin them). Both use XChaCha20-Poly1305 with a random
// 24-byte nonce and the event hash as associated data, which means a
// ciphertext only decrypts under the event it was anchored with: copying it
// into another memory's event fails.
//
// Format 1 (EncryptMemory; memories anchored before per-memory keys):
//
//	nonce (24 bytes) ‖ XChaCha20-Poly1305(MemoryEncryptionKey, nonce, plaintext,
//	                                      ad = eventHash)
//
// len(plaintext)+40 bytes, under identity.Seed.MemoryEncryptionKey: anyone
// with the seed decrypts it for ever. It has no version byte; it is never
// written any more, and is still read (DecryptMemory) so that old anchors
// keep their proofs.
//
// Format 2 (SealMemory; every memory anchored since):
//
//	0x02 ‖ nonce (24 bytes) ‖ XChaCha20-Poly1305(data key, nonce, plaintext,
//	                                             ad = eventHash)
//
// len(plaintext)+41 bytes, under the memory's random data key (DataKeys),
// which is not derivable from the seed: once it is shredded the ciphertext
// decrypts with nothing. A reader knows the format from the anchor record
// (Record.Encryption) or, failing that, tries format 2 with the data key,
// then format 1 with the seed key: authentication makes a wrong guess fail,
// never decrypt to something else.
const (
	nonceSize = chacha20poly1305.NonceSizeX
	// Overhead is how many bytes EncryptMemory (format 1) adds to the plaintext.
	Overhead = nonceSize + chacha20poly1305.Overhead
	// SealOverhead is how many bytes SealMemory (format 2) adds.
	SealOverhead = 1 + Overhead
	// sealFormat is format 2's version byte.
	sealFormat = 0x02
)

// ErrDecrypt is returned by DecryptMemory and OpenMemory when the
// ciphertext is not one EncryptMemory (SealMemory) made with this key and
// event hash.
var ErrDecrypt = errors.New("anchor: memory ciphertext does not decrypt with this key and event hash")

// EncryptMemory seals plaintext in format 1 under the seed's memory key
// (see above). The anchor worker no longer uses it (SealMemory); it stays
// for tests, benchmarks and tools that make format-1 ciphertexts.
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

// DecryptMemory opens a format-1 ciphertext made by EncryptMemory with the
// same key and event hash. It returns an error wrapping ErrDecrypt otherwise.
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

// SealMemory seals plaintext for the chain in format 2 under a memory's
// data key (see above).
func SealMemory(dataKey [32]byte, eventHash [32]byte, plaintext []byte) ([]byte, error) {
	var nonce [nonceSize]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, fmt.Errorf("reading nonce: %w", err)
	}
	return sealMemory(dataKey, eventHash, nonce, plaintext)
}

func sealMemory(dataKey, eventHash [32]byte, nonce [nonceSize]byte, plaintext []byte) ([]byte, error) {
	aead, err := chacha20poly1305.NewX(dataKey[:])
	if err != nil {
		return nil, fmt.Errorf("making cipher: %w", err)
	}
	out := make([]byte, 1+nonceSize, 1+nonceSize+len(plaintext)+chacha20poly1305.Overhead)
	out[0] = sealFormat
	copy(out[1:], nonce[:])
	return aead.Seal(out, nonce[:], plaintext, eventHash[:]), nil
}

// OpenMemory opens a format-2 ciphertext made by SealMemory with the same
// data key and event hash. It returns an error wrapping ErrDecrypt
// otherwise (a format-1 ciphertext included).
func OpenMemory(dataKey [32]byte, eventHash [32]byte, ciphertext []byte) ([]byte, error) {
	if len(ciphertext) < SealOverhead || ciphertext[0] != sealFormat {
		return nil, fmt.Errorf("%w: not a format-2 ciphertext (%d bytes)", ErrDecrypt, len(ciphertext))
	}
	return DecryptMemory(dataKey, eventHash, ciphertext[1:])
}
