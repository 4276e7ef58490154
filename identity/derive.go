package identity

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	ethcrypto "github.com/ethereum/go-ethereum/crypto"
	"golang.org/x/crypto/hkdf"
)

// Frozen derivation labels. See the package documentation.
const (
	infoRoot        = "crow-root-ed25519-v1"
	saltInstance    = "crow-instance-v1"
	infoAnchor      = "crow-secp256k1-v1"
	infoMemoryEnc   = "crow-memory-enc-v1"
	infoDataKeyWrap = "crow-memory-dek-wrap-v1"
	infoProjectID   = "crow-project-id-v1"
	crowIDDomain    = "crow-id-v1"
	crowIDPrefix    = "crow1"
	crowIDHashSize  = 10
)

// ErrInstanceKeyMismatch is returned by [VerifyInstanceKey] when a public key
// is not the one the seed derives for the instance id: the instance belongs to
// another identity (or claims someone else's id).
var ErrInstanceKeyMismatch = errors.New("identity: instance public key does not derive from this seed")

// derive returns n bytes of HKDF-SHA256(seed, salt, info).
func (s Seed) derive(salt, info string, n int) []byte {
	out := make([]byte, n)
	r := hkdf.New(sha256.New, s[:], []byte(salt), []byte(info))
	if _, err := io.ReadFull(r, out); err != nil {
		// Only possible when n > 255*32, which no caller asks for.
		panic("identity: hkdf: " + err.Error())
	}
	return out
}

// RootKey is the root Ed25519 key: HKDF-SHA256(seed, salt empty,
// info "crow-root-ed25519-v1") used as an Ed25519 seed.
func (s Seed) RootKey() ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(s.derive("", infoRoot, ed25519.SeedSize))
}

// RootPublicKey is the public half of RootKey.
func (s Seed) RootPublicKey() ed25519.PublicKey {
	return s.RootKey().Public().(ed25519.PublicKey)
}

// CrowID is the short public identifier of this seed's chain; see
// [CrowIDFromPublicKey].
func (s Seed) CrowID() string { return CrowIDFromPublicKey(s.RootPublicKey()) }

var crowIDEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// CrowIDFromPublicKey computes the crow id of a root public key:
// "crow1" followed by the lowercase, unpadded base32 of the first 10 bytes of
// SHA-256("crow-id-v1" || rootPub). The result is 21 characters.
func CrowIDFromPublicKey(rootPub ed25519.PublicKey) string {
	h := sha256.New()
	h.Write([]byte(crowIDDomain))
	h.Write(rootPub)
	sum := h.Sum(nil)
	return crowIDPrefix + strings.ToLower(crowIDEncoding.EncodeToString(sum[:crowIDHashSize]))
}

// InstanceKey is the Ed25519 key of instance id: HKDF-SHA256(seed,
// salt "crow-instance-v1", info = the bytes of id) used as an Ed25519 seed.
// It is the instance's feed-signing key and its libp2p identity.
func (s Seed) InstanceKey(id string) ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(s.derive(saltInstance, id, ed25519.SeedSize))
}

// InstancePublicKey is the public half of InstanceKey(id): the key any holder
// of the seed expects instance id to present.
func (s Seed) InstancePublicKey(id string) ed25519.PublicKey {
	return s.InstanceKey(id).Public().(ed25519.PublicKey)
}

// VerifyInstanceKey checks that pub is the key seed derives for instance id.
// It returns an error wrapping ErrInstanceKeyMismatch if not (including for an
// empty id or a key of the wrong length).
func VerifyInstanceKey(seed Seed, id string, pub ed25519.PublicKey) error {
	if id == "" {
		return fmt.Errorf("%w: empty instance id", ErrInstanceKeyMismatch)
	}
	if len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("%w: public key is %d bytes", ErrInstanceKeyMismatch, len(pub))
	}
	if !hmac.Equal(seed.InstancePublicKey(id), pub) {
		return fmt.Errorf("%w: instance %q", ErrInstanceKeyMismatch, id)
	}
	return nil
}

// AnchorKey is the secp256k1 key of the on-chain anchoring account.
//
// It is derived by reading HKDF-SHA256(seed, salt empty, info
// "crow-secp256k1-v1") as a stream of 32-byte big-endian candidates and taking
// the first one in [1, n-1], n being the secp256k1 group order. (Rejection
// sampling rather than reduction keeps the key uniform; a first candidate out
// of range has probability about 2^-128, so in practice the key is the first
// 32 bytes of the HKDF output.)
func (s Seed) AnchorKey() *ecdsa.PrivateKey {
	const maxTries = 255 // HKDF-SHA256 yields at most 255*32 bytes
	r := hkdf.New(sha256.New, s[:], nil, []byte(infoAnchor))
	buf := make([]byte, 32)
	for range maxTries {
		if _, err := io.ReadFull(r, buf); err != nil {
			break
		}
		if k, err := ethcrypto.ToECDSA(buf); err == nil {
			return k
		}
	}
	panic("identity: no valid secp256k1 key in HKDF output") // probability ~2^-32000
}

// AnchorAddress is the Ethereum address of AnchorKey.
func (s Seed) AnchorAddress() common.Address {
	return ethcrypto.PubkeyToAddress(s.AnchorKey().PublicKey)
}

// MemoryEncryptionKey is the 32-byte symmetric key for memory content
// anchored on chain: HKDF-SHA256(seed, salt empty, info "crow-memory-enc-v1").
// It is meant for an AEAD such as XChaCha20-Poly1305; the cipher and nonce
// scheme are the anchoring package's to define.
func (s Seed) MemoryEncryptionKey() [32]byte {
	return [32]byte(s.derive("", infoMemoryEnc, 32))
}

// DataKeyWrapKey is the 32-byte key that wraps, at rest on home, the random
// per-memory data keys the anchoring package encrypts memory content with:
// HKDF-SHA256(seed, salt empty, info "crow-memory-dek-wrap-v1"). A stolen
// home database without the seed does not reveal the data keys; a data key
// deleted from the database is gone even for the holder of the seed (it is
// random, not derived), which is what makes forgetting a memory final.
func (s Seed) DataKeyWrapKey() [32]byte {
	return [32]byte(s.derive("", infoDataKeyWrap, 32))
}

// ProjectIDKey is the 32-byte key for hiding project names on chain:
// HKDF-SHA256(seed, salt empty, info "crow-project-id-v1").
func (s Seed) ProjectIDKey() [32]byte {
	return [32]byte(s.derive("", infoProjectID, 32))
}

// ProjectIDHash is the on-chain id of a project: HMAC-SHA256(ProjectIDKey,
// UTF-8 project name). Without the seed it reveals nothing about the name.
func (s Seed) ProjectIDHash(project string) [32]byte {
	key := s.ProjectIDKey()
	m := hmac.New(sha256.New, key[:])
	m.Write([]byte(project))
	return [32]byte(m.Sum(nil))
}
