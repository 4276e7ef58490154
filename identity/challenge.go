package identity

import (
	"crypto/ed25519"
	"encoding/binary"
	"errors"
	"fmt"
)

const challengeDomain = "crow-health-v1"

// ErrBadSignature is returned by [VerifyChallenge] when a signature does not
// verify.
var ErrBadSignature = errors.New("identity: bad signature")

// ChallengeMessage returns the exact bytes signed for a health challenge
// (SPEC §8). The format is frozen (pinned by a golden test):
//
//	"crow-health-v1"                 14 ASCII bytes, the domain
//	0x00                             separator
//	uint32 big-endian len(challenge)
//	challenge                        the verifier's random bytes, as given
//	instance id                      UTF-8, to the end of the message
//
// The length prefix makes the split between challenge and instance id
// unambiguous.
func ChallengeMessage(challenge []byte, instanceID string) []byte {
	msg := make([]byte, 0, len(challengeDomain)+1+4+len(challenge)+len(instanceID))
	msg = append(msg, challengeDomain...)
	msg = append(msg, 0)
	msg = binary.BigEndian.AppendUint32(msg, uint32(len(challenge)))
	msg = append(msg, challenge...)
	msg = append(msg, instanceID...)
	return msg
}

// SignChallenge signs ChallengeMessage(challenge, instanceID) with priv, the
// instance's key. Ed25519 is deterministic: the same inputs give the same
// signature.
func SignChallenge(priv ed25519.PrivateKey, challenge []byte, instanceID string) []byte {
	return ed25519.Sign(priv, ChallengeMessage(challenge, instanceID))
}

// VerifyChallenge checks sig against pub for (challenge, instanceID). It
// returns an error wrapping ErrBadSignature on failure.
func VerifyChallenge(pub ed25519.PublicKey, challenge []byte, instanceID string, sig []byte) error {
	if len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("%w: public key is %d bytes", ErrBadSignature, len(pub))
	}
	if uint64(len(challenge)) > 1<<32-1 {
		return fmt.Errorf("%w: challenge too long", ErrBadSignature)
	}
	if !ed25519.Verify(pub, ChallengeMessage(challenge, instanceID), sig) {
		return fmt.Errorf("%w: health challenge for instance %q", ErrBadSignature, instanceID)
	}
	return nil
}
