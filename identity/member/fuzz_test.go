package member

import (
	"bytes"
	"errors"
	"testing"
)

// Each decoder gets one fuzz target. It is fed bytes, tried both as the
// binary encoding and as the text form. It must never panic, fail only with
// the documented sentinels, and accept only canonical input: what it accepts
// re-encodes to exactly the same bytes (a record has one spelling).

func checkDecodeErr(t *testing.T, err error, allowed ...error) {
	t.Helper()
	for _, s := range append(allowed, ErrMalformed, ErrUnknownVersion) {
		if errors.Is(err, s) {
			return
		}
	}
	t.Fatalf("error %v is none of the sentinels", err)
}

func seedCorpus(f *testing.F, binary []byte, text string) {
	f.Add(binary)
	f.Add([]byte(text))
	f.Add(binary[:len(binary)/2])
	f.Add(append([]byte{2}, binary[1:]...))
	f.Add([]byte{})
	f.Add([]byte{1})
}

func FuzzDecodeCertificate(f *testing.F) {
	c := goldenCert()
	seedCorpus(f, must(c.Encode()), c.String())
	f.Fuzz(func(t *testing.T, b []byte) {
		if c, err := DecodeCertificate(b); err != nil {
			checkDecodeErr(t, err)
		} else {
			if again := must(c.Encode()); !bytes.Equal(again, b) {
				t.Fatalf("accepted a second spelling: %x re-encodes to %x", b, again)
			}
			if err := Verify(c, crowID, rootPub); err != nil && !errors.Is(err, ErrBadSignature) && !errors.Is(err, ErrWrongCrow) {
				t.Fatalf("Verify of a decoded certificate: %v", err)
			}
		}
		if c, err := ParseCertificate(string(b)); err != nil {
			checkDecodeErr(t, err)
		} else if c.String() != string(b) {
			t.Fatalf("accepted a second text spelling %q", b)
		}
	})
}

func FuzzDecodeRevocation(f *testing.F) {
	r := goldenRevocation()
	seedCorpus(f, must(r.Encode()), r.String())
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := DecodeRevocation(b); err != nil {
			checkDecodeErr(t, err)
		} else {
			if again := must(r.Encode()); !bytes.Equal(again, b) {
				t.Fatalf("accepted a second spelling: %x re-encodes to %x", b, again)
			}
			if err := VerifyRevocation(r, crowID, rootPub); err != nil && !errors.Is(err, ErrBadSignature) && !errors.Is(err, ErrWrongCrow) {
				t.Fatalf("VerifyRevocation of a decoded revocation: %v", err)
			}
		}
		if r, err := ParseRevocation(string(b)); err != nil {
			checkDecodeErr(t, err)
		} else if r.String() != string(b) {
			t.Fatalf("accepted a second text spelling %q", b)
		}
	})
}

func FuzzParseInvite(f *testing.F) {
	inv := goldenInvite()
	seedCorpus(f, must(inv.Encode()), inv.String())
	f.Fuzz(func(t *testing.T, b []byte) {
		if inv, err := DecodeInvite(b); err != nil {
			checkDecodeErr(t, err)
		} else if again := must(inv.Encode()); !bytes.Equal(again, b) {
			t.Fatalf("accepted a second spelling: %x re-encodes to %x", b, again)
		}
		inv, err := ParseInvite(string(b), goldenNow)
		if err != nil {
			checkDecodeErr(t, err, ErrExpired)
			return
		}
		if inv.String() != string(b) {
			t.Fatalf("accepted a second text spelling %q", b)
		}
		if !goldenNow.Before(inv.ExpiresAt) {
			t.Fatalf("accepted an expired invite %q", b)
		}
	})
}

func FuzzDecodeJoinRequest(f *testing.F) {
	req := goldenRequest()
	seedCorpus(f, must(req.Encode()), req.String())
	f.Fuzz(func(t *testing.T, b []byte) {
		if req, err := DecodeJoinRequest(b); err != nil {
			checkDecodeErr(t, err)
		} else {
			if again := must(req.Encode()); !bytes.Equal(again, b) {
				t.Fatalf("accepted a second spelling: %x re-encodes to %x", b, again)
			}
			err := VerifyJoinRequest([SecretSize]byte(goldenSecret), homePub, crowID, req)
			if err == nil && !bytes.Equal(b, must(goldenRequest().Encode())) {
				t.Fatalf("a request other than the golden one verifies: %x", b)
			}
			if err != nil && !errors.Is(err, ErrInviteMismatch) && !errors.Is(err, ErrBadMAC) && !errors.Is(err, ErrBadSignature) {
				t.Fatalf("VerifyJoinRequest of a decoded request: %v", err)
			}
		}
		if req, err := ParseJoinRequest(string(b)); err != nil {
			checkDecodeErr(t, err)
		} else if req.String() != string(b) {
			t.Fatalf("accepted a second text spelling %q", b)
		}
	})
}

func FuzzDecodeJoinAnswer(f *testing.F) {
	a := goldenAnswer()
	seedCorpus(f, must(a.Encode()), a.String())
	inv, req := goldenInvite(), goldenRequest()
	f.Fuzz(func(t *testing.T, b []byte) {
		if a, err := DecodeJoinAnswer(b); err != nil {
			checkDecodeErr(t, err)
		} else {
			if again := must(a.Encode()); !bytes.Equal(again, b) {
				t.Fatalf("accepted a second spelling: %x re-encodes to %x", b, again)
			}
			if err := VerifyJoinAnswer(inv, req, a); err == nil && !bytes.Equal(b, must(goldenAnswer().Encode())) {
				t.Fatalf("an answer other than the golden one verifies: %x", b)
			}
		}
		if a, err := ParseJoinAnswer(string(b)); err != nil {
			checkDecodeErr(t, err)
		} else if a.String() != string(b) {
			t.Fatalf("accepted a second text spelling %q", b)
		}
	})
}
