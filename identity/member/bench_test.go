package member

import "testing"

// The cost of certificate checks (issue 10): what the gater, the token
// verifier and registration pay per check.

func BenchmarkVerifyCertificate(b *testing.B) {
	c := goldenCert()
	for b.Loop() {
		if err := Verify(c, crowID, rootPub); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeVerifyCertificate(b *testing.B) {
	enc := must(goldenCert().Encode())
	b.SetBytes(int64(len(enc)))
	for b.Loop() {
		c, err := DecodeCertificate(enc)
		if err != nil {
			b.Fatal(err)
		}
		if err := Verify(c, crowID, rootPub); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseVerifyCertificate(b *testing.B) {
	text := goldenCert().String()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		c, err := ParseCertificate(text)
		if err != nil {
			b.Fatal(err)
		}
		if err := Verify(c, crowID, rootPub); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeCertificate(b *testing.B) {
	enc := must(goldenCert().Encode())
	for b.Loop() {
		if _, err := DecodeCertificate(enc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerifyRevocation(b *testing.B) {
	r := goldenRevocation()
	for b.Loop() {
		if err := VerifyRevocation(r, crowID, rootPub); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerifyJoinRequest(b *testing.B) {
	req := goldenRequest()
	for b.Loop() {
		if err := VerifyJoinRequest([SecretSize]byte(goldenSecret), homePub, crowID, req); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerifyJoinAnswer(b *testing.B) {
	inv, req, a := goldenInvite(), goldenRequest(), goldenAnswer()
	for b.Loop() {
		if err := VerifyJoinAnswer(inv, req, a); err != nil {
			b.Fatal(err)
		}
	}
}
