package identity

import (
	"bytes"
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// goldenSeed is 0x00, 0x01, ..., 0x1f.
func goldenSeed() Seed {
	var s Seed
	for i := range s {
		s[i] = byte(i)
	}
	return s
}

const goldenInstanceID = "8d3c2e4a-1f6b-4c8e-9a2d-5b7e0f1c3a9d"

// TestGoldenDerivations freezes every derivation. These values were also
// recomputed independently (Python hmac/hashlib + the cryptography package).
// If this test fails, every existing identity would change: do not update the
// constants, fix the code.
func TestGoldenDerivations(t *testing.T) {
	s := goldenSeed()
	mem, proj, projHash := s.MemoryEncryptionKey(), s.ProjectIDKey(), s.ProjectIDHash("crow")
	wrap := s.DataKeyWrapKey()
	for _, tc := range []struct{ name, got, want string }{
		{"root public key", hex.EncodeToString(s.RootPublicKey()), "775c25e3684b01a391438f743657059d76a6e538605457ad0dd633982e8c351f"},
		{"crow id", s.CrowID(), "crow1jy6dvwsrm4w3sogp"},
		{"instance public key", hex.EncodeToString(s.InstancePublicKey(goldenInstanceID)), "f59cc167edb2678b334d262ca775f75b386f8e615274b9883422ab2a2367aaac"},
		{"anchor private key", hex.EncodeToString(s.AnchorKey().D.FillBytes(make([]byte, 32))), "836c27d984ce794fbceeb138952242914baa5127f8b62ca72ba976bb382d5267"},
		{"anchor address", s.AnchorAddress().Hex(), "0x9A44475bde77b826C4cE7CCC2717935e2880203a"},
		{"memory encryption key", hex.EncodeToString(mem[:]), "326918b185786e2d640487396877a24f90488a755034e64ae7a662c6715cce46"},
		{"data key wrap key", hex.EncodeToString(wrap[:]), "a422470e7da675c1f0bbcf234b112d170da84b43ac73a96a8ed2068657725b8d"},
		{"project id key", hex.EncodeToString(proj[:]), "de7e393e68ad2cfda60ae4cab816696c2b7f3bc87039f6220114c38683b592a8"},
		{"project id hash", hex.EncodeToString(projHash[:]), "f6da74d02fea67cb44f5f7b88958a1f32c88b8988db564f2a18b8339746bd94e"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %s, want %s", tc.name, tc.got, tc.want)
		}
	}
}

// TestDerivationsMatchSpec recomputes the Ed25519 derivations with the
// standard library's HKDF, straight from the SPEC wording.
func TestDerivationsMatchSpec(t *testing.T) {
	s := goldenSeed()
	rootSeed, err := hkdf.Key(sha256.New, s[:], nil, "crow-root-ed25519-v1", 32)
	if err != nil {
		t.Fatal(err)
	}
	if want := ed25519.NewKeyFromSeed(rootSeed); !want.Equal(s.RootKey()) {
		t.Errorf("root key does not match HKDF-SHA256(seed, info crow-root-ed25519-v1)")
	}
	instSeed, err := hkdf.Key(sha256.New, s[:], []byte("crow-instance-v1"), goldenInstanceID, 32)
	if err != nil {
		t.Fatal(err)
	}
	if want := ed25519.NewKeyFromSeed(instSeed); !want.Equal(s.InstanceKey(goldenInstanceID)) {
		t.Errorf("instance key does not match HKDF-SHA256(seed, salt crow-instance-v1, info id)")
	}
	if got := CrowIDFromPublicKey(s.RootPublicKey()); len(got) != 21 {
		t.Errorf("crow id %q has length %d, want 21", got, len(got))
	}
}

func TestGoldenChallenge(t *testing.T) {
	s := goldenSeed()
	challenge, _ := hex.DecodeString("000102030405060708090a0b0c0d0e0f")
	const wantMsg = "63726f772d6865616c74682d7631" + // "crow-health-v1"
		"00" + // separator
		"00000010" + // len(challenge) = 16
		"000102030405060708090a0b0c0d0e0f" + // challenge
		"38643363326534612d316636622d346338652d396132642d356237653066316333613964" // instance id
	if got := hex.EncodeToString(ChallengeMessage(challenge, goldenInstanceID)); got != wantMsg {
		t.Errorf("challenge message = %s, want %s", got, wantMsg)
	}
	const wantSig = "44613722cd54e9aa077a0a65beae52fef2cb3c3e338d384761370b46056bfa2c9517d225327cc75af7493945c62c4659e7a8b0d37dec4d604ad1450b5772cf0c"
	sig := SignChallenge(s.InstanceKey(goldenInstanceID), challenge, goldenInstanceID)
	if got := hex.EncodeToString(sig); got != wantSig {
		t.Errorf("challenge signature = %s, want %s", got, wantSig)
	}
	if err := VerifyChallenge(s.InstancePublicKey(goldenInstanceID), challenge, goldenInstanceID, sig); err != nil {
		t.Errorf("VerifyChallenge(golden) = %v", err)
	}
	if !bytes.HasPrefix(ChallengeMessage(nil, ""), []byte("crow-health-v1\x00")) {
		t.Error("message does not start with the domain")
	}
}
