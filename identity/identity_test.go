package identity

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestNewSeed(t *testing.T) {
	a, err := NewSeed(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewSeed(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Fatal("two random seeds are equal")
	}
	if _, err := NewSeed(bytes.NewReader(make([]byte, 10))); err == nil {
		t.Error("NewSeed with a short reader succeeded")
	}
	if _, err := NewSeed(bytes.NewReader(make([]byte, 32))); !errors.Is(err, ErrBadSeed) {
		t.Errorf("NewSeed(all zero) = %v, want ErrBadSeed", err)
	}
}

func TestSeedFromBytes(t *testing.T) {
	g := goldenSeed()
	s, err := SeedFromBytes(g[:])
	if err != nil || s != g {
		t.Fatalf("SeedFromBytes(golden) = %v, %v", s, err)
	}
	for _, b := range [][]byte{nil, make([]byte, 31), make([]byte, 33), make([]byte, 32)} {
		if _, err := SeedFromBytes(b); !errors.Is(err, ErrBadSeed) {
			t.Errorf("SeedFromBytes(%d bytes) = %v, want ErrBadSeed", len(b), err)
		}
	}
}

func TestSeedIsRedacted(t *testing.T) {
	s := goldenSeed()
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%x", "%q"} {
		out := fmt.Sprintf(verb, s)
		if strings.Contains(out, "0102") || strings.Contains(out, "1f") || !strings.Contains(out, "REDACTED") {
			t.Errorf("Sprintf(%s, seed) = %q leaks or lacks redaction", verb, out)
		}
	}
}

func TestInstanceKeys(t *testing.T) {
	s := goldenSeed()
	other, _ := NewSeed(rand.Reader)
	a, b := "instance-a", "instance-b"
	if s.InstancePublicKey(a).Equal(s.InstancePublicKey(b)) {
		t.Fatal("two instance ids derive the same key")
	}
	if !s.InstancePublicKey(a).Equal(s.InstancePublicKey(a)) {
		t.Fatal("derivation is not deterministic")
	}
	if s.InstancePublicKey(a).Equal(s.RootPublicKey()) {
		t.Fatal("instance key equals root key")
	}
	if err := VerifyInstanceKey(s, a, s.InstancePublicKey(a)); err != nil {
		t.Errorf("VerifyInstanceKey(own key) = %v", err)
	}
	for name, tc := range map[string]struct {
		id  string
		pub ed25519.PublicKey
	}{
		"other id":       {b, s.InstancePublicKey(a)},
		"other identity": {a, other.InstancePublicKey(a)},
		"empty id":       {"", s.InstancePublicKey("")},
		"short key":      {a, s.InstancePublicKey(a)[:31]},
		"nil key":        {a, nil},
	} {
		if err := VerifyInstanceKey(s, tc.id, tc.pub); !errors.Is(err, ErrInstanceKeyMismatch) {
			t.Errorf("%s: VerifyInstanceKey = %v, want ErrInstanceKeyMismatch", name, err)
		}
	}
}

func TestDerivedKeysAreDistinct(t *testing.T) {
	s := goldenSeed()
	seen := map[string]string{}
	mem, proj := s.MemoryEncryptionKey(), s.ProjectIDKey()
	for name, k := range map[string][]byte{
		"root":     s.RootKey().Seed(),
		"instance": s.InstanceKey("x").Seed(),
		"anchor":   s.AnchorKey().D.FillBytes(make([]byte, 32)),
		"memory":   mem[:],
		"project":  proj[:],
	} {
		if prev, ok := seen[string(k)]; ok {
			t.Errorf("%s key equals %s key", name, prev)
		}
		seen[string(k)] = name
	}
	if s.ProjectIDHash("a") == s.ProjectIDHash("b") {
		t.Error("project id hash ignores the name")
	}
}

func TestVerifyChallenge(t *testing.T) {
	s := goldenSeed()
	id := "inst"
	pub := s.InstancePublicKey(id)
	ch := []byte("fresh challenge")
	sig := SignChallenge(s.InstanceKey(id), ch, id)
	if err := VerifyChallenge(pub, ch, id, sig); err != nil {
		t.Fatalf("VerifyChallenge = %v", err)
	}
	bad := bytes.Clone(sig)
	bad[3] ^= 1
	for name, tc := range map[string]struct {
		pub ed25519.PublicKey
		ch  []byte
		id  string
		sig []byte
	}{
		"other challenge": {pub, []byte("fresh challengf"), id, sig},
		"other instance":  {pub, ch, "inst2", sig},
		"other key":       {s.InstancePublicKey("inst2"), ch, id, sig},
		"flipped sig":     {pub, ch, id, bad},
		"short sig":       {pub, ch, id, sig[:63]},
		"bad key":         {pub[:5], ch, id, sig},
		// Moving bytes between challenge and id must not verify.
		"shifted split": {pub, []byte("fresh challeng"), "e" + id, sig},
	} {
		if err := VerifyChallenge(tc.pub, tc.ch, tc.id, tc.sig); !errors.Is(err, ErrBadSignature) {
			t.Errorf("%s: VerifyChallenge = %v, want ErrBadSignature", name, err)
		}
	}
}
