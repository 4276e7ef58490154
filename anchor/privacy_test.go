package anchor

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/crow-sync/crow/identity"
)

// goldenSeed is 0x00, 0x01, ..., 0x1f, as in identity's golden test.
func goldenSeed() identity.Seed {
	var s identity.Seed
	for i := range s {
		s[i] = byte(i)
	}
	return s
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestProjectIDGolden freezes ProjectID. The values were computed
// independently with Python's hmac/hashlib. If this fails, every project id
// already on chain would stop matching: fix the code, not the constants.
func TestProjectIDGolden(t *testing.T) {
	key := goldenSeed().ProjectIDKey()
	for name, want := range map[string]string{
		"crow":          "f5d0c76806b575349f184cc0fc48e9beb42c1fc4cdc008ac182438d7dd6a9b91",
		"sistema-pagos": "3ac68d039c37c5d73e5fd3750d9053e535b80ea0ad75015afc966e67e2258c91",
		"":              "f7e2750174561cf59f26c323d78073e87e8b5e52ba5b669f65df1f8fd11115b5",
	} {
		if got := ProjectID(key, name); hex.EncodeToString(got[:]) != want {
			t.Errorf("ProjectID(%q) = %x, want %s", name, got, want)
		}
	}
	var other [32]byte
	if ProjectID(other, "crow") == ProjectID(key, "crow") {
		t.Error("ProjectID does not depend on the key")
	}
}

// TestEncryptMemoryGolden freezes the ciphertext format: nonce ‖
// XChaCha20-Poly1305 with the event hash as associated data. The value was
// computed independently (Python: an HChaCha20 written from the draft, checked
// against its test vector, then the cryptography package's
// ChaCha20Poly1305).
func TestEncryptMemoryGolden(t *testing.T) {
	key := goldenSeed().MemoryEncryptionKey()
	var event [32]byte
	var nonce [nonceSize]byte
	for i := range event {
		event[i] = byte(0x20 + i)
	}
	for i := range nonce {
		nonce[i] = byte(0x40 + i)
	}
	pt := []byte("Usar consenso Clique PoA")
	want := mustHex(t, "404142434445464748494a4b4c4d4e4f505152535455565777e7f395ac37ac95f5280520b71232dd643e83343e68d87c379cb95f5e4b5796be0aa9aff128f346")
	got, err := encryptMemory(key, event, nonce, pt)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("ciphertext\n got %x\nwant %x", got, want)
	}
	back, err := DecryptMemory(key, event, want)
	if err != nil || !bytes.Equal(back, pt) {
		t.Fatalf("DecryptMemory(golden) = %q, %v", back, err)
	}
}

func TestEncryptMemoryRoundTrip(t *testing.T) {
	key := goldenSeed().MemoryEncryptionKey()
	event := [32]byte{1, 2, 3}
	for _, pt := range [][]byte{nil, []byte("x"), bytes.Repeat([]byte("memoria "), 8192)} {
		ct, err := EncryptMemory(key, event, pt)
		if err != nil {
			t.Fatal(err)
		}
		if len(ct) != len(pt)+Overhead {
			t.Errorf("len(ciphertext) = %d, want %d", len(ct), len(pt)+Overhead)
		}
		ct2, _ := EncryptMemory(key, event, pt)
		if bytes.Equal(ct, ct2) {
			t.Error("two encryptions are identical: the nonce is not random")
		}
		got, err := DecryptMemory(key, event, ct)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, pt) {
			t.Fatalf("round trip of %d bytes changed them", len(pt))
		}
	}
}

func TestDecryptMemoryRefuses(t *testing.T) {
	key := goldenSeed().MemoryEncryptionKey()
	event := [32]byte{1}
	ct, err := EncryptMemory(key, event, []byte("secreto"))
	if err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Clone(ct)
	flipped[len(flipped)-1] ^= 1
	var otherKey [32]byte
	for name, tc := range map[string]struct {
		key   [32]byte
		event [32]byte
		ct    []byte
	}{
		"other event hash": {key, [32]byte{2}, ct},
		"other key":        {otherKey, event, ct},
		"tampered":         {key, event, flipped},
		"truncated":        {key, event, ct[:Overhead-1]},
		"empty":            {key, event, nil},
	} {
		if _, err := DecryptMemory(tc.key, tc.event, tc.ct); !errors.Is(err, ErrDecrypt) {
			t.Errorf("%s: err = %v, want ErrDecrypt", name, err)
		}
	}
}
