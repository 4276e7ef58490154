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
