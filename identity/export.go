package identity

import (
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"

	"golang.org/x/crypto/chacha20poly1305"
	"golang.org/x/crypto/scrypt"
)

// Errors returned by [Import] and [Seed.Export].
var (
	// ErrBadPassphrase is returned by Import when the blob is well formed but
	// does not decrypt under the passphrase: the passphrase is wrong, or the
	// blob was altered by someone who also fixed its checksum (the two cannot
	// be told apart).
	ErrBadPassphrase = errors.New("identity: wrong passphrase")

	// ErrCorruptBlob is returned by Import when the text is not an export
	// blob this version can read: missing prefix, bad base64, wrong length,
	// checksum mismatch (a mistyped or truncated paste), unknown version or
	// KDF, or KDF parameters out of range.
	ErrCorruptBlob = errors.New("identity: corrupt or unsupported identity blob")

	// ErrEmptyPassphrase is returned by Export for an empty passphrase.
	ErrEmptyPassphrase = errors.New("identity: empty passphrase")
)

// BlobPrefix starts every armored export blob.
const BlobPrefix = "crow-identity-v1:"

// Binary layout of an export blob, version 1 (frozen; pinned by a golden
// test). All offsets in bytes.
//
//	off len
//	0   1   version = 0x01
//	1   1   kdf = 0x01 (scrypt)
//	2   1   log2(N) of scrypt
//	3   1   r of scrypt
//	4   1   p of scrypt
//	5   16  salt (random)
//	21  24  nonce (random), XChaCha20-Poly1305
//	45  48  ciphertext: the 32-byte seed sealed with its 16-byte tag
//	93  4   checksum: SHA-256(bytes 0..92)[:4]
//
// key = scrypt(passphrase, salt, N, r, p, 32 bytes).
// The AEAD's additional data is "crow-identity-v1" || bytes 0..44, binding the
// format version, KDF, its parameters, salt and nonce.
// The checksum only detects accidental damage so that a bad paste is reported
// as ErrCorruptBlob rather than ErrBadPassphrase; it is not a security
// mechanism. The armored form is BlobPrefix followed by the unpadded URL-safe
// base64 (RFC 4648 §5) of the 97 bytes; whitespace anywhere is ignored on
// import so that wrapped pastes work.
const (
	blobVersion   = 1
	kdfScrypt     = 1
	saltSize      = 16
	headerSize    = 5 + saltSize + chacha20poly1305.NonceSizeX
	sealedSize    = SeedSize + chacha20poly1305.Overhead
	checksumSize  = 4
	blobSize      = headerSize + sealedSize + checksumSize
	adDomain      = "crow-identity-v1"
	maxScryptMem  = 256 << 20 // 128*r*N bytes
	maxScryptP    = 4
	maxScryptLogN = 22
)

// kdfParams are scrypt's cost parameters, recorded in the blob.
type kdfParams struct {
	logN, r, p uint8
}

// defaultKDF is scrypt N=2^15, r=8, p=1: 32 MiB and roughly 0.1 s per try.
var defaultKDF = kdfParams{logN: 15, r: 8, p: 1}

func (k kdfParams) valid() error {
	if k.logN < 1 || k.logN > maxScryptLogN || k.r < 1 || k.p < 1 || k.p > maxScryptP {
		return fmt.Errorf("scrypt parameters out of range (log2 N=%d, r=%d, p=%d)", k.logN, k.r, k.p)
	}
	if 128*uint64(k.r)<<k.logN > maxScryptMem {
		return fmt.Errorf("scrypt parameters need more than %d MiB", maxScryptMem>>20)
	}
	return nil
}

// Export encrypts the seed under passphrase and returns the armored blob, one
// line of text starting with BlobPrefix. rand supplies salt and nonce (nil
// means crypto/rand). It uses scrypt with N=2^15, r=8, p=1.
func (s Seed) Export(passphrase []byte, rand io.Reader) (string, error) {
	return s.export(passphrase, rand, defaultKDF)
}

func (s Seed) export(passphrase []byte, rnd io.Reader, kp kdfParams) (string, error) {
	if len(passphrase) == 0 {
		return "", ErrEmptyPassphrase
	}
	if err := kp.valid(); err != nil {
		return "", fmt.Errorf("exporting identity: %s", err)
	}
	if rnd == nil {
		rnd = rand.Reader
	}
	blob := make([]byte, headerSize, blobSize)
	blob[0], blob[1], blob[2], blob[3], blob[4] = blobVersion, kdfScrypt, kp.logN, kp.r, kp.p
	if _, err := io.ReadFull(rnd, blob[5:headerSize]); err != nil {
		return "", fmt.Errorf("exporting identity: reading random salt and nonce: %w", err)
	}
	aead, err := blobAEAD(passphrase, blob[:headerSize])
	if err != nil {
		return "", fmt.Errorf("exporting identity: %w", err)
	}
	blob = aead.Seal(blob, blob[5+saltSize:headerSize], s[:], blobAD(blob[:headerSize]))
	sum := sha256.Sum256(blob)
	blob = append(blob, sum[:checksumSize]...)
	return BlobPrefix + base64.RawURLEncoding.EncodeToString(blob), nil
}

// Import decrypts an armored export blob. It returns an error wrapping
// ErrCorruptBlob if text is not a readable blob and ErrBadPassphrase if it
// does not decrypt under passphrase.
func Import(text string, passphrase []byte) (Seed, error) {
	blob, err := decodeBlob(text)
	if err != nil {
		return Seed{}, err
	}
	aead, err := blobAEAD(passphrase, blob[:headerSize])
	if err != nil {
		return Seed{}, fmt.Errorf("importing identity: %w", err)
	}
	var out [SeedSize]byte
	plain, err := aead.Open(out[:0], blob[5+saltSize:headerSize], blob[headerSize:headerSize+sealedSize], blobAD(blob[:headerSize]))
	if err != nil {
		return Seed{}, ErrBadPassphrase
	}
	s, err := SeedFromBytes(plain)
	if err != nil {
		return Seed{}, fmt.Errorf("%w: %s", ErrCorruptBlob, err)
	}
	return s, nil
}

// decodeBlob parses the armor and checks everything that can be checked
// without the passphrase. The returned slice is blobSize bytes long.
func decodeBlob(text string) ([]byte, error) {
	text = strings.Map(func(r rune) rune {
		switch r {
		case ' ', '\t', '\r', '\n':
			return -1
		}
		return r
	}, text)
	body, ok := strings.CutPrefix(text, BlobPrefix)
	if !ok {
		if strings.HasPrefix(text, "crow-identity-") {
			return nil, fmt.Errorf("%w: unsupported version prefix", ErrCorruptBlob)
		}
		return nil, fmt.Errorf("%w: missing %q prefix", ErrCorruptBlob, BlobPrefix)
	}
	if base64.RawURLEncoding.DecodedLen(len(body)) != blobSize {
		return nil, fmt.Errorf("%w: wrong length (truncated?)", ErrCorruptBlob)
	}
	blob, err := base64.RawURLEncoding.Strict().DecodeString(body)
	if err != nil || len(blob) != blobSize {
		return nil, fmt.Errorf("%w: bad base64", ErrCorruptBlob)
	}
	sum := sha256.Sum256(blob[:blobSize-checksumSize])
	if string(sum[:checksumSize]) != string(blob[blobSize-checksumSize:]) {
		return nil, fmt.Errorf("%w: checksum mismatch (damaged or incomplete paste)", ErrCorruptBlob)
	}
	if blob[0] != blobVersion {
		return nil, fmt.Errorf("%w: unsupported version %d", ErrCorruptBlob, blob[0])
	}
	if blob[1] != kdfScrypt {
		return nil, fmt.Errorf("%w: unsupported kdf %d", ErrCorruptBlob, blob[1])
	}
	if err := (kdfParams{logN: blob[2], r: blob[3], p: blob[4]}).valid(); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrCorruptBlob, err)
	}
	return blob, nil
}

// blobAEAD derives the key from the passphrase and the header's salt and
// parameters. The header must already have been validated.
func blobAEAD(passphrase, header []byte) (cipher.AEAD, error) {
	logN, r, p := header[2], int(header[3]), int(header[4])
	key, err := scrypt.Key(passphrase, header[5:5+saltSize], 1<<logN, r, p, chacha20poly1305.KeySize)
	if err != nil {
		return nil, fmt.Errorf("deriving key: %w", err)
	}
	aead, err := chacha20poly1305.NewX(key)
	if err != nil {
		return nil, fmt.Errorf("creating cipher: %w", err)
	}
	return aead, nil
}

func blobAD(header []byte) []byte {
	return append([]byte(adDomain), header...)
}
