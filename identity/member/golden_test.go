package member

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden vectors in testdata/")

// vector is one golden record: what it is made of (enough to recompute it in
// another language), its binary encoding and its text form.
type vector struct {
	Comment string            `json:"comment"`
	Inputs  map[string]string `json:"inputs"`
	Hex     string            `json:"hex"`
	Text    string            `json:"text"`
}

func hx(b []byte) string { return hex.EncodeToString(b) }

func commonInputs() map[string]string {
	return map[string]string{
		"master_seed":     hx(goldenSeed[:]),
		"root_public_key": hx(rootPub),
		"crow_id":         crowID,
	}
}

func with(m map[string]string, kv ...string) map[string]string {
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

type encoder interface {
	Encode() ([]byte, error)
	String() string
}

func makeVector(t *testing.T, comment string, in map[string]string, r encoder) vector {
	t.Helper()
	b, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return vector{Comment: comment, Inputs: in, Hex: hx(b), Text: r.String()}
}

// goldenVectors are the frozen records, one file each.
func goldenVectors(t *testing.T) map[string][]vector {
	satIn := func() map[string]string {
		return with(commonInputs(), "instance_id", satID, "instance_ed25519_seed", hx(satSeed), "instance_public_key", hx(satPub))
	}
	inviteIn := with(commonInputs(), "gateway_url", goldenURL, "home_instance_id", homeID, "home_public_key", hx(homePub),
		"secret", hx(goldenSecret), "expires_at", goldenExpires.Format("2006-01-02T15:04:05Z"))
	id := goldenInvite().ID()
	inviteIn["invite_id"] = hx(id[:])
	homeCert := must(Issue(rootPriv, Fields{CrowID: crowID, InstanceID: homeID, PublicKey: homePub, Role: RoleHome, Name: "home", IssuedAt: goldenIssued}))
	req := goldenRequest()
	return map[string][]vector{
		"certificate.json": {
			makeVector(t, "satellite certificate signed by the root key (crow-member-v1)",
				with(satIn(), "role", "satellite", "name", satName, "issued_at", "2026-01-02T03:04:05Z"), goldenCert()),
			makeVector(t, "home certificate (role byte 1); home's key derives from the seed",
				with(commonInputs(), "instance_id", homeID, "instance_public_key", hx(homePub), "role", "home", "name", "home", "issued_at", "2026-01-02T03:04:05Z"), homeCert),
		},
		"revocation.json": {
			makeVector(t, "revocation of the golden satellite signed by the root key (crow-revoke-v1)",
				with(satIn(), "revoked_at", "2026-06-01T00:00:00Z"), goldenRevocation()),
		},
		"invite.json": {
			makeVector(t, "invite; invite_id = SHA-256(\"crow-invite-id-v1\" || 0x00 || secret)", inviteIn, goldenInvite()),
		},
		"join.json": {
			makeVector(t, "join request for the golden invite; MAC = HMAC-SHA256(secret, transcript), signature by the instance key over the transcript",
				with(satIn(), "name", satName, "nonce", hx(goldenNonce), "secret", hx(goldenSecret), "home_public_key", hx(homePub),
					"transcript", hx(Transcript(homePub, crowID, req))), req),
			makeVector(t, "join answer: home's signature (key of home_instance_id) over crow-join-answer-v1 || SHA-256(transcript) || root key || certificate",
				with(commonInputs(), "home_instance_id", homeID, "home_public_key", hx(homePub), "certificate", goldenCert().String(),
					"signed_message", hx(AnswerMessage(Transcript(homePub, crowID, req), rootPub, must(goldenCert().Encode())))), goldenAnswer()),
		},
	}
}

// TestGolden pins every format. If it fails, a format changed and old
// instances will refuse the new records (or the reverse): fix the code, do not
// run -update, unless the change is a new version with its own domain.
// The stored vectors were also checked independently of this code (Python,
// hashlib/hmac and the cryptography package): root key from the seed by
// HKDF, every signature over domain || 0x00 || body, the invite id, the
// transcript rebuilt from the documented layout, its MAC and signature, and
// the answer's signed message.
func TestGolden(t *testing.T) {
	for name, want := range goldenVectors(t) {
		path := filepath.Join("testdata", name)
		got, err := json.MarshalIndent(want, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, '\n')
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		file, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(file, got) {
			t.Errorf("%s changed; got\n%s", path, got)
		}
	}
}

// TestGoldenFilesDecode reads the stored vectors (not the encoder's output)
// and checks that they decode, re-encode identically and verify.
func TestGoldenFilesDecode(t *testing.T) {
	load := func(name string) []vector {
		var v []vector
		if err := json.Unmarshal(must(os.ReadFile(filepath.Join("testdata", name))), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	same := func(v vector, r encoder) {
		t.Helper()
		if b := must(r.Encode()); hx(b) != v.Hex || r.String() != v.Text {
			t.Errorf("%s: does not re-encode to the stored bytes", v.Comment)
		}
	}
	for _, v := range load("certificate.json") {
		c := must(ParseCertificate(v.Text))
		if err := Verify(c, crowID, rootPub); err != nil {
			t.Errorf("%s: %v", v.Comment, err)
		}
		if c2 := must(DecodeCertificate(must(hex.DecodeString(v.Hex)))); c2.String() != v.Text {
			t.Errorf("%s: hex and text disagree", v.Comment)
		}
		same(v, c)
	}
	for _, v := range load("revocation.json") {
		r := must(ParseRevocation(v.Text))
		if err := VerifyRevocation(r, crowID, rootPub); err != nil || !r.Revokes(goldenCert()) {
			t.Errorf("%s: %v", v.Comment, err)
		}
		same(v, r)
	}
	inv := must(ParseInvite(load("invite.json")[0].Text, goldenNow))
	same(load("invite.json")[0], inv)
	j := load("join.json")
	req := must(ParseJoinRequest(j[0].Text))
	same(j[0], req)
	if err := VerifyJoinRequest(inv.Secret, homePub, crowID, req); err != nil {
		t.Error(err)
	}
	ans := must(ParseJoinAnswer(j[1].Text))
	same(j[1], ans)
	if err := VerifyJoinAnswer(inv, req, ans); err != nil {
		t.Error(err)
	}
}

// TestCertificateLayout rebuilds the golden certificate byte by byte from
// the layout documented on Certificate, independently of the encoder.
func TestCertificateLayout(t *testing.T) {
	c := goldenCert()
	var body strings.Builder
	body.WriteString("01")                         // version
	body.WriteString("0015" + hx([]byte(crowID)))  // crow id (21 bytes)
	body.WriteString("0024" + hx([]byte(satID)))   // instance id (36 bytes)
	body.WriteString(hx(satPub))                   // instance public key
	body.WriteString("02")                         // role satellite
	body.WriteString("0010" + hx([]byte(satName))) // name (16 bytes of UTF-8)
	body.WriteString("00000000695735a5")           // issued_at 2026-01-02T03:04:05Z = 1767323045
	if got := hx(must(c.Encode())); got != body.String()+hx(c.Signature[:]) {
		t.Errorf("encoding = %s\nlayout   = %s + signature", got, body.String())
	}
	msg := append([]byte("crow-member-v1\x00"), must(hex.DecodeString(body.String()))...)
	if !edVerify(rootPub, msg, c.Signature[:]) {
		t.Error("the signature does not cover domain || 0x00 || body")
	}
	if !strings.HasPrefix(c.String(), "crowcert1.") {
		t.Error("text form prefix")
	}
}

// TestInviteLayout does the same for the invite.
func TestInviteLayout(t *testing.T) {
	want := "01" + "0019" + hx([]byte(goldenURL)) + hx(homePub) + "0015" + hx([]byte(crowID)) + hx(goldenSecret) + "00000000695743b5"
	if got := hx(must(goldenInvite().Encode())); got != want {
		t.Errorf("encoding = %s\nlayout   = %s", got, want)
	}
}
