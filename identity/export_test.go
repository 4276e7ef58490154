package identity

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

// testKDF keeps tests fast; the real parameters are exercised once in
// TestExportDefaultParams.
var testKDF = kdfParams{logN: 4, r: 1, p: 1}

var pass = []byte("correct horse battery staple")

func exportForTest(t testing.TB, s Seed) string {
	t.Helper()
	blob, err := s.export(pass, rand.Reader, testKDF)
	if err != nil {
		t.Fatal(err)
	}
	return blob
}

// TestGoldenBlob freezes the v1 blob format: fixed seed, passphrase,
// parameters, salt and nonce give these exact bytes (also reproduced by an
// independent Python implementation: hashlib.scrypt, HChaCha20 +
// cryptography's ChaCha20Poly1305), and they still import.
func TestGoldenBlob(t *testing.T) {
	const want = "crow-identity-v1:AQEEAQEAAQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyAhIiMkJSYn3zrXnqPuHuCBFOHXOU_4AjxxmTcuFwqAE-Mrx5rwJnk__pRTusfBOnF4yRLMU-dmwCHOog"
	randomness := make([]byte, saltSize+24)
	for i := range randomness {
		randomness[i] = byte(i)
	}
	got, err := goldenSeed().export(pass, bytes.NewReader(randomness), testKDF)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("golden blob =\n%s\nwant\n%s", got, want)
	}
	s, err := Import(want, pass)
	if err != nil || s != goldenSeed() {
		t.Fatalf("Import(golden) = %v, %v", s, err)
	}
}

func TestExportDefaultParams(t *testing.T) {
	s, _ := NewSeed(rand.Reader)
	blob, err := s.Export(pass, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := decodeBlob(blob)
	if err != nil {
		t.Fatal(err)
	}
	if raw[2] != 15 || raw[3] != 8 || raw[4] != 1 {
		t.Errorf("recorded params log2N=%d r=%d p=%d, want 15 8 1", raw[2], raw[3], raw[4])
	}
	got, err := Import(blob, pass)
	if err != nil || got != s {
		t.Fatalf("round trip: %v", err)
	}
}

func TestExportRoundTrip(t *testing.T) {
	s, _ := NewSeed(rand.Reader)
	blob := exportForTest(t, s)
	if !strings.HasPrefix(blob, BlobPrefix) || strings.ContainsAny(blob, " \n=+/") {
		t.Errorf("blob %q is not one clean pasteable line", blob)
	}
	got, err := Import(blob, pass)
	if err != nil || got != s {
		t.Fatalf("Import = %v", err)
	}
	// Wrapped and padded pastes still import.
	wrapped := "  " + blob[:30] + "\n" + blob[30:60] + "\r\n\t" + blob[60:] + "\n"
	if got, err := Import(wrapped, pass); err != nil || got != s {
		t.Errorf("Import(wrapped) = %v", err)
	}
	// Fresh salt and nonce each time.
	if exportForTest(t, s) == blob {
		t.Error("two exports are identical")
	}
	if _, err := s.export(nil, rand.Reader, testKDF); !errors.Is(err, ErrEmptyPassphrase) {
		t.Errorf("export with empty passphrase = %v", err)
	}
}

func TestImportWrongPassphrase(t *testing.T) {
	s, _ := NewSeed(rand.Reader)
	blob := exportForTest(t, s)
	for _, p := range [][]byte{[]byte("correct horse battery stapl"), nil, []byte("Correct horse battery staple")} {
		if _, err := Import(blob, p); !errors.Is(err, ErrBadPassphrase) {
			t.Errorf("Import(passphrase %q) = %v, want ErrBadPassphrase", p, err)
		}
	}
}

// Every single-byte change to the text, every truncation and every bad prefix
// is reported as ErrCorruptBlob.
func TestImportCorruptText(t *testing.T) {
	s, _ := NewSeed(rand.Reader)
	blob := exportForTest(t, s)
	for i := range len(blob) {
		for _, mask := range []byte{0x01, 0x20, 0x80} {
			b := []byte(blob)
			b[i] ^= mask
			if _, err := Import(string(b), pass); !errors.Is(err, ErrCorruptBlob) {
				t.Fatalf("flip byte %d with %#x: Import = %v, want ErrCorruptBlob", i, mask, err)
			}
		}
	}
	for n := range len(blob) {
		if _, err := Import(blob[:n], pass); !errors.Is(err, ErrCorruptBlob) {
			t.Fatalf("truncated to %d: Import = %v, want ErrCorruptBlob", n, err)
		}
	}
	for _, text := range []string{
		"", "crow-identity-v2:" + blob[len(BlobPrefix):], "CROW-IDENTITY-V1:" + blob[len(BlobPrefix):],
		blob[len(BlobPrefix):], blob + "A", blob + "AAAA", blob + blob,
	} {
		if _, err := Import(text, pass); !errors.Is(err, ErrCorruptBlob) {
			t.Errorf("Import(%.30q…) = %v, want ErrCorruptBlob", text, err)
		}
	}
}

// rearmor re-encodes a modified binary blob with a valid checksum, as an
// attacker (not a bad paste) would.
func rearmor(raw []byte) string {
	raw = bytes.Clone(raw[:blobSize-checksumSize])
	sum := sha256.Sum256(raw)
	return BlobPrefix + base64.RawURLEncoding.EncodeToString(append(raw, sum[:checksumSize]...))
}

func TestImportTamperedWithValidChecksum(t *testing.T) {
	s, _ := NewSeed(rand.Reader)
	raw, err := decodeBlob(exportForTest(t, s))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := Import(rearmor(raw), pass); err != nil || got != s {
		t.Fatalf("rearmor round trip: %v", err)
	}
	for i := range blobSize - checksumSize {
		b := bytes.Clone(raw)
		b[i] ^= 0x01
		_, err := Import(rearmor(b), pass)
		switch {
		case i == 0 || i == 1: // version, kdf
			if !errors.Is(err, ErrCorruptBlob) {
				t.Errorf("byte %d: Import = %v, want ErrCorruptBlob", i, err)
			}
		case i <= 4: // KDF parameters: either rejected or bound by the AD
			if !errors.Is(err, ErrCorruptBlob) && !errors.Is(err, ErrBadPassphrase) {
				t.Errorf("byte %d: Import = %v, want ErrCorruptBlob or ErrBadPassphrase", i, err)
			}
		default: // salt, nonce, ciphertext: authentication fails
			if !errors.Is(err, ErrBadPassphrase) {
				t.Errorf("byte %d: Import = %v, want ErrBadPassphrase", i, err)
			}
		}
	}
}

func TestKDFParamLimits(t *testing.T) {
	for _, kp := range []kdfParams{{0, 8, 1}, {23, 1, 1}, {15, 0, 1}, {15, 8, 0}, {15, 8, 5}, {20, 8, 1}} {
		if kp.valid() == nil {
			t.Errorf("%+v accepted", kp)
		}
	}
	for _, kp := range []kdfParams{defaultKDF, testKDF, {18, 8, 1}} {
		if err := kp.valid(); err != nil {
			t.Errorf("%+v rejected: %v", kp, err)
		}
	}
}

func FuzzImport(f *testing.F) {
	s := goldenSeed()
	blob, err := s.export(pass, rand.Reader, testKDF)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(blob)
	f.Add(blob[:40])
	f.Add(BlobPrefix)
	f.Add("crow-identity-v1:AAAA")
	f.Add("")
	f.Fuzz(func(t *testing.T, text string) {
		got, err := Import(text, pass)
		if err != nil {
			if !errors.Is(err, ErrCorruptBlob) && !errors.Is(err, ErrBadPassphrase) {
				t.Fatalf("Import error %v is neither ErrCorruptBlob nor ErrBadPassphrase", err)
			}
			return
		}
		// Anything that imports must re-export and import to the same seed.
		again, err := Import(exportForTest(t, got), pass)
		if err != nil || again != got {
			t.Fatalf("re-export round trip failed: %v", err)
		}
	})
}
