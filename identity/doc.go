// Package identity holds a user's master seed and everything derived from it.
//
// One 32-byte master seed per user is the root of trust. Every key below is a
// deterministic function of the seed, so any machine holding the seed can
// re-derive (and therefore check) what any other instance's key must be.
// All derivations use HKDF-SHA256 (RFC 5869) with the seed as input keying
// material. The labels are frozen: changing one changes every key.
//
//	name                    salt                 info                   use
//	root Ed25519 key        (empty)              "crow-root-ed25519-v1" 32-byte Ed25519 seed; crow id
//	instance Ed25519 key    "crow-instance-v1"   instance id (UTF-8)    feed signing, libp2p identity, health challenges
//	anchor secp256k1 key    (empty)              "crow-secp256k1-v1"    on-chain anchoring account (see AnchorKey)
//	memory encryption key   (empty)              "crow-memory-enc-v1"   32-byte key for content anchored on chain
//	project id key          (empty)              "crow-project-id-v1"   HMAC-SHA256 key for on-chain project ids
//	data key wrap key       (empty)              "crow-memory-dek-wrap-v1" wraps home's random per-memory data keys at rest
//
// The crow id is the short public name of a user's chain:
//
//	"crow1" || lowercase(base32-no-padding(SHA-256("crow-id-v1" || rootPub)[:10]))
//
// where rootPub is the 32-byte root Ed25519 public key. It is 21 characters.
//
// Health challenges (SPEC §8) are signed with an instance key over the bytes
// documented on [ChallengeMessage].
//
// A seed leaves a machine only as an export blob: the seed encrypted under a
// passphrase with scrypt and XChaCha20-Poly1305, armored as one line of text
// starting with "crow-identity-v1:". The format is documented on [Seed.Export].
//
// The package depends on nothing else in crow.
package identity
