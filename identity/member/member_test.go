package member

import (
	"crypto/ed25519"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func wantErr(t *testing.T, name string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: error %v, want %v", name, err, want)
	}
}

func TestIssueErrors(t *testing.T) {
	mod := func(f func(*Fields)) Fields { v := goldenFields; f(&v); return v }
	for _, tc := range []struct {
		name string
		priv ed25519.PrivateKey
		f    Fields
		want error
	}{
		{"short root key", rootPriv[:10], goldenFields, ErrMalformed},
		{"other crow's root", otherRootPriv, goldenFields, ErrWrongCrow},
		{"empty crow id", rootPriv, mod(func(f *Fields) { f.CrowID = "" }), ErrMalformed},
		{"empty instance id", rootPriv, mod(func(f *Fields) { f.InstanceID = "" }), ErrMalformed},
		{"instance id with space", rootPriv, mod(func(f *Fields) { f.InstanceID = "a b" }), ErrMalformed},
		{"instance id too long", rootPriv, mod(func(f *Fields) { f.InstanceID = strings.Repeat("a", MaxIDLen+1) }), ErrMalformed},
		{"short key", rootPriv, mod(func(f *Fields) { f.PublicKey = satPub[:31] }), ErrMalformed},
		{"no role", rootPriv, mod(func(f *Fields) { f.Role = "" }), ErrMalformed},
		{"unknown role", rootPriv, mod(func(f *Fields) { f.Role = "admin" }), ErrMalformed},
		{"empty name", rootPriv, mod(func(f *Fields) { f.Name = "" }), ErrMalformed},
		{"name too long", rootPriv, mod(func(f *Fields) { f.Name = strings.Repeat("é", MaxNameLen/2+1) }), ErrMalformed},
		{"name not UTF-8", rootPriv, mod(func(f *Fields) { f.Name = "a\xffb" }), ErrMalformed},
		{"name with newline", rootPriv, mod(func(f *Fields) { f.Name = "a\nb" }), ErrMalformed},
		{"zero issued_at", rootPriv, mod(func(f *Fields) { f.IssuedAt = time.Time{} }), ErrMalformed},
		{"issued_at before 1970", rootPriv, mod(func(f *Fields) { f.IssuedAt = time.Unix(-1, 0) }), ErrMalformed},
		{"issued_at after 9999", rootPriv, mod(func(f *Fields) { f.IssuedAt = time.Unix(maxUnix+1, 0) }), ErrMalformed},
	} {
		_, err := Issue(tc.priv, tc.f)
		wantErr(t, tc.name, err, tc.want)
	}
	if _, err := Issue(rootPriv, mod(func(f *Fields) { f.Name = strings.Repeat("n", MaxNameLen); f.IssuedAt = time.Unix(maxUnix, 0) })); err != nil {
		t.Errorf("limits: %v", err)
	}
}

// certBytes builds a certificate body by hand, for malformed inputs.
func certBytes(version byte, crow, id string, key []byte, role byte, name string, at uint64, sig []byte) []byte {
	b := []byte{version}
	str := func(s string) { b = append(binary.BigEndian.AppendUint16(b, uint16(len(s))), s...) }
	str(crow)
	str(id)
	b = append(b, key...)
	b = append(b, role)
	str(name)
	b = binary.BigEndian.AppendUint64(b, at)
	return append(b, sig...)
}

func TestDecodeCertificateErrors(t *testing.T) {
	good := must(goldenCert().Encode())
	sig := good[len(good)-64:]
	at := uint64(goldenIssued.Unix())
	for _, tc := range []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrMalformed},
		{"version 0", append([]byte{0}, good[1:]...), ErrUnknownVersion},
		{"version 2", append([]byte{2}, good[1:]...), ErrUnknownVersion},
		{"truncated", good[:len(good)-1], ErrMalformed},
		{"only version", good[:1], ErrMalformed},
		{"trailing byte", append(append([]byte(nil), good...), 0), ErrMalformed},
		{"crow id length past end", certBytes(1, "", "", nil, 0, "", 0, nil)[:3], ErrMalformed},
		{"empty crow id", certBytes(1, "", satID, satPub, 2, satName, at, sig), ErrMalformed},
		{"empty instance id", certBytes(1, crowID, "", satPub, 2, satName, at, sig), ErrMalformed},
		{"control in id", certBytes(1, crowID, "a\x00", satPub, 2, satName, at, sig), ErrMalformed},
		{"role 0", certBytes(1, crowID, satID, satPub, 0, satName, at, sig), ErrMalformed},
		{"role 3", certBytes(1, crowID, satID, satPub, 3, satName, at, sig), ErrMalformed},
		{"empty name", certBytes(1, crowID, satID, satPub, 2, "", at, sig), ErrMalformed},
		{"bad UTF-8 name", certBytes(1, crowID, satID, satPub, 2, "\xc3", at, sig), ErrMalformed},
		{"issued_at negative", certBytes(1, crowID, satID, satPub, 2, satName, 1<<63, sig), ErrMalformed},
		{"issued_at past 9999", certBytes(1, crowID, satID, satPub, 2, satName, maxUnix+1, sig), ErrMalformed},
		{"short signature", certBytes(1, crowID, satID, satPub, 2, satName, at, sig[:63]), ErrMalformed},
	} {
		_, err := DecodeCertificate(tc.b)
		wantErr(t, tc.name, err, tc.want)
	}
	if c, err := DecodeCertificate(certBytes(1, crowID, satID, satPub, 2, satName, at, sig)); err != nil || Verify(c, crowID, rootPub) != nil {
		t.Errorf("hand-built golden certificate: %v", err)
	}
}

func TestParseTextErrors(t *testing.T) {
	good := goldenCert().String()
	for _, tc := range []struct{ name, s string }{
		{"empty", ""},
		{"wrong prefix", "crowrev1." + strings.TrimPrefix(good, "crowcert1.")},
		{"no prefix", strings.TrimPrefix(good, "crowcert1.")},
		{"upper-case prefix", "CROWCERT1." + strings.TrimPrefix(good, "crowcert1.")},
		{"padding", good + "="},
		{"standard base64", strings.ReplaceAll(strings.ReplaceAll(good, "-", "+"), "_", "/") + "+"},
		{"newline", good[:20] + "\n" + good[20:]},
		{"trailing space", good + " "},
		{"non-canonical last char", good[:len(good)-1] + "5"},
		{"too long", "crowcert1." + strings.Repeat("A", MaxTextLen)},
	} {
		_, err := ParseCertificate(tc.s)
		wantErr(t, tc.name, err, ErrMalformed)
	}
}

func TestVerifyErrors(t *testing.T) {
	c := goldenCert()
	other := must(Issue(otherRootPriv, Fields{CrowID: otherCrowID, InstanceID: satID, PublicKey: satPub, Role: RoleSatellite, Name: satName, IssuedAt: goldenIssued}))
	flip := func(f func(*Certificate)) Certificate {
		v := goldenCert()
		f(&v)
		return v
	}
	for _, tc := range []struct {
		name   string
		c      Certificate
		crow   string
		root   ed25519.PublicKey
		want   error
		wantOK bool
	}{
		{"golden", c, crowID, rootPub, nil, true},
		{"root key of another crow", c, crowID, otherRootPub, ErrWrongCrow, false},
		{"short root key", c, crowID, rootPub[:5], ErrMalformed, false},
		{"certificate of another crow", other, crowID, rootPub, ErrWrongCrow, false},
		{"other crow's cert for its own crow", other, otherCrowID, otherRootPub, nil, true},
		{"other crow's cert under the wrong root", other, otherCrowID, rootPub, ErrWrongCrow, false},
		{"signature flipped", flip(func(c *Certificate) { c.Signature[0] ^= 1 }), crowID, rootPub, ErrBadSignature, false},
		{"instance id changed", flip(func(c *Certificate) { c.InstanceID = "other" }), crowID, rootPub, ErrBadSignature, false},
		{"key swapped", flip(func(c *Certificate) { c.PublicKey = malloryPub }), crowID, rootPub, ErrBadSignature, false},
		{"role raised", flip(func(c *Certificate) { c.Role = RoleHome }), crowID, rootPub, ErrBadSignature, false},
		{"name changed", flip(func(c *Certificate) { c.Name = "x" }), crowID, rootPub, ErrBadSignature, false},
		{"issued_at changed", flip(func(c *Certificate) { c.IssuedAt = c.IssuedAt.Add(time.Second) }), crowID, rootPub, ErrBadSignature, false},
		{"role unknown", flip(func(c *Certificate) { c.Role = "admin" }), crowID, rootPub, ErrMalformed, false},
		{"zero certificate", Certificate{}, crowID, rootPub, ErrMalformed, false},
		{"signed by the satellite's own key", func() Certificate {
			v := goldenCert()
			copy(v.Signature[:], ed25519.Sign(satPriv, signed(certDomain, must(v.body()))))
			return v
		}(), crowID, rootPub, ErrBadSignature, false},
		{"revocation signature passed off as certificate (domain separation)", func() Certificate {
			v := goldenCert()
			v.Signature = goldenRevocation().Signature
			return v
		}(), crowID, rootPub, ErrBadSignature, false},
	} {
		err := Verify(tc.c, tc.crow, tc.root)
		if tc.wantOK {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		wantErr(t, tc.name, err, tc.want)
	}
}

func TestRevocation(t *testing.T) {
	r := goldenRevocation()
	if err := VerifyRevocation(r, crowID, rootPub); err != nil {
		t.Fatal(err)
	}
	c := goldenCert()
	newID := must(Issue(rootPriv, Fields{CrowID: crowID, InstanceID: "fresh-id", PublicKey: satPub, Role: RoleSatellite, Name: "x", IssuedAt: goldenIssued}))
	newKey := must(Issue(rootPriv, Fields{CrowID: crowID, InstanceID: satID, PublicKey: malloryPub, Role: RoleSatellite, Name: "x", IssuedAt: goldenIssued}))
	unrelated := must(Issue(rootPriv, Fields{CrowID: crowID, InstanceID: "fresh-id", PublicKey: malloryPub, Role: RoleSatellite, Name: "x", IssuedAt: goldenIssued}))
	for _, tc := range []struct {
		name string
		c    Certificate
		want bool
	}{{"same", c, true}, {"same key, new id", newID, true}, {"same id, new key", newKey, true}, {"unrelated", unrelated, false}} {
		if got := r.Revokes(tc.c); got != tc.want {
			t.Errorf("Revokes(%s) = %v", tc.name, got)
		}
	}
	mod := func(f func(*Revocation)) Revocation { v := goldenRevocation(); f(&v); return v }
	for _, tc := range []struct {
		name string
		r    Revocation
		crow string
		root ed25519.PublicKey
		want error
	}{
		{"wrong root", r, crowID, otherRootPub, ErrWrongCrow},
		{"other crow", must(Revoke(otherRootPriv, RevocationFields{CrowID: otherCrowID, InstanceID: satID, PublicKey: satPub, RevokedAt: goldenRevoked})), crowID, rootPub, ErrWrongCrow},
		{"flipped signature", mod(func(r *Revocation) { r.Signature[63] ^= 0x80 }), crowID, rootPub, ErrBadSignature},
		{"other key", mod(func(r *Revocation) { r.PublicKey = malloryPub }), crowID, rootPub, ErrBadSignature},
		{"later time", mod(func(r *Revocation) { r.RevokedAt = r.RevokedAt.Add(time.Hour) }), crowID, rootPub, ErrBadSignature},
		{"certificate signature passed off as revocation", mod(func(r *Revocation) { r.Signature = goldenCert().Signature }), crowID, rootPub, ErrBadSignature},
		{"empty id", mod(func(r *Revocation) { r.InstanceID = "" }), crowID, rootPub, ErrMalformed},
	} {
		wantErr(t, tc.name, VerifyRevocation(tc.r, tc.crow, tc.root), tc.want)
	}
	for _, tc := range []struct {
		name string
		priv ed25519.PrivateKey
		f    RevocationFields
		want error
	}{
		{"other crow's root", otherRootPriv, goldenRevFields, ErrWrongCrow},
		{"short root", rootPriv[:3], goldenRevFields, ErrMalformed},
		{"no key", rootPriv, RevocationFields{CrowID: crowID, InstanceID: satID, RevokedAt: goldenRevoked}, ErrMalformed},
		{"no time", rootPriv, RevocationFields{CrowID: crowID, InstanceID: satID, PublicKey: satPub}, ErrMalformed},
	} {
		_, err := Revoke(tc.priv, tc.f)
		wantErr(t, "Revoke "+tc.name, err, tc.want)
	}
	good := must(r.Encode())
	for _, tc := range []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrMalformed},
		{"version 9", append([]byte{9}, good[1:]...), ErrUnknownVersion},
		{"truncated", good[:len(good)-2], ErrMalformed},
		{"trailing", append(append([]byte(nil), good...), 1), ErrMalformed},
		{"a certificate", must(goldenCert().Encode()), ErrMalformed},
	} {
		_, err := DecodeRevocation(tc.b)
		wantErr(t, "DecodeRevocation "+tc.name, err, tc.want)
	}
	_, err := ParseRevocation(goldenCert().String())
	wantErr(t, "ParseRevocation(certificate)", err, ErrMalformed)
}

func TestInvite(t *testing.T) {
	inv := goldenInvite()
	s := inv.String()
	if !strings.HasPrefix(s, "crowinv1.") || strings.ContainsAny(s, " \n=") {
		t.Fatalf("invite text %q", s)
	}
	got, err := ParseInvite(s, goldenNow)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != s || got.ID() != inv.ID() || !got.HomePublicKey.Equal(homePub) || got.CrowID != crowID || got.GatewayURL != goldenURL {
		t.Errorf("round trip: %+v", got)
	}
	for _, tc := range []struct {
		name string
		now  time.Time
		want error
	}{
		{"one second before expiry", goldenExpires.Add(-time.Second), nil},
		{"at expiry", goldenExpires, ErrExpired},
		{"after expiry", goldenExpires.Add(time.Hour), ErrExpired},
	} {
		_, err := ParseInvite(s, tc.now)
		if tc.want == nil {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		wantErr(t, tc.name, err, tc.want)
	}
	good := must(inv.Encode())
	for _, tc := range []struct {
		name, s string
		want    error
	}{
		{"empty", "", ErrMalformed},
		{"certificate", goldenCert().String(), ErrMalformed},
		{"prefix only", "crowinv1.", ErrMalformed},
		{"truncated", s[:len(s)-3], ErrMalformed},
		{"pasted twice", s + s, ErrMalformed},
		{"wrapped line", s[:40] + "\n" + s[40:], ErrMalformed},
		{"version 2", toText(invitePrefix, append([]byte{2}, good[1:]...)), ErrUnknownVersion},
		{"trailing byte", toText(invitePrefix, append(append([]byte(nil), good...), 0)), ErrMalformed},
	} {
		_, err := ParseInvite(tc.s, goldenNow)
		wantErr(t, tc.name, err, tc.want)
	}
	for _, tc := range []struct {
		name string
		url  string
		home ed25519.PublicKey
		crow string
		exp  time.Time
	}{
		{"empty URL", "", homePub, crowID, goldenExpires},
		{"relative URL", "/v1/join", homePub, crowID, goldenExpires},
		{"ftp URL", "ftp://home.example", homePub, crowID, goldenExpires},
		{"URL without host", "https://", homePub, crowID, goldenExpires},
		{"URL with space", "https://home example", homePub, crowID, goldenExpires},
		{"URL too long", "https://h/" + strings.Repeat("a", MaxURLLen), homePub, crowID, goldenExpires},
		{"no home key", goldenURL, nil, crowID, goldenExpires},
		{"no crow id", goldenURL, homePub, "", goldenExpires},
		{"zero expiry", goldenURL, homePub, crowID, time.Time{}},
	} {
		_, err := NewInvite(tc.url, tc.home, tc.crow, tc.exp, reader(goldenSecret))
		wantErr(t, "NewInvite "+tc.name, err, ErrMalformed)
	}
	if _, err := NewInvite(goldenURL, homePub, crowID, goldenExpires, reader(goldenSecret[:31])); err == nil {
		t.Error("NewInvite with a short random source succeeded")
	}
	if _, err := NewInvite("http://[::1]:7777", homePub, crowID, goldenExpires, reader(goldenSecret)); err != nil {
		t.Errorf("IPv6 URL: %v", err)
	}
}

func TestJSON(t *testing.T) {
	type doc struct {
		Cert    Certificate `json:"certificate"`
		Rev     Revocation  `json:"revocation"`
		Request JoinRequest `json:"request"`
		Answer  JoinAnswer  `json:"answer"`
	}
	in := doc{goldenCert(), goldenRevocation(), goldenRequest(), goldenAnswer()}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"certificate":"crowcert1.`) || !strings.Contains(string(b), `"revocation":"crowrev1.`) {
		t.Errorf("JSON %s", b)
	}
	var out doc
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out.Cert.String() != in.Cert.String() || out.Rev.String() != in.Rev.String() || out.Request.String() != in.Request.String() || out.Answer.String() != in.Answer.String() {
		t.Error("JSON round trip changed a record")
	}
	err = json.Unmarshal([]byte(`{"certificate":"crowcert1.AQ"}`), &out)
	wantErr(t, "bad certificate in JSON", err, ErrMalformed)
}

// randomFields draws valid fields, lengths up to the limits.
func randomFields(r *rand.Rand) Fields {
	id := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(0x21 + r.IntN(0x7e-0x21+1))
		}
		return string(b)
	}
	names := []rune("aZ09 -_.ñé漢😀")
	var name []rune
	for n := 1 + r.IntN(40); len(name) < n; {
		name = append(name, names[r.IntN(len(names))])
	}
	key := make([]byte, 32)
	for i := range key {
		key[i] = byte(r.Uint32())
	}
	roles := []Role{RoleHome, RoleSatellite}
	return Fields{CrowID: crowID, InstanceID: id(1 + r.IntN(MaxIDLen)), PublicKey: key, Role: roles[r.IntN(2)],
		Name: string(name), IssuedAt: time.Unix(r.Int64N(maxUnix+1), 0)}
}

// TestPropertyRoundTrip: issue → encode → decode → verify, for random
// fields, holds and reproduces the same bytes; flipping any one bit of the
// encoding makes Decode or Verify fail.
func TestPropertyRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 100
	if testing.Short() {
		n = 20
	}
	for range n {
		f := randomFields(r)
		c, err := Issue(rootPriv, f)
		if err != nil {
			t.Fatalf("Issue(%+v): %v", f, err)
		}
		b := must(c.Encode())
		d, err := DecodeCertificate(b)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if err := Verify(d, crowID, rootPub); err != nil {
			t.Fatalf("verify: %v", err)
		}
		if d.String() != c.String() || must(ParseCertificate(c.String())).String() != c.String() {
			t.Fatal("round trip changed the record")
		}
		if d.InstanceID != f.InstanceID || d.Name != f.Name || d.Role != f.Role || !d.IssuedAt.Equal(f.IssuedAt) || !d.PublicKey.Equal(f.PublicKey) {
			t.Fatalf("fields changed: %+v vs %+v", d.Fields, f)
		}
		for i := range b {
			bit := byte(1) << r.IntN(8)
			b[i] ^= bit
			if x, err := DecodeCertificate(b); err == nil && Verify(x, crowID, rootPub) == nil {
				t.Fatalf("flipped bit %d of byte %d still verifies", bit, i)
			}
			b[i] ^= bit
		}
	}
	// The same for every byte of revocations, invites, join requests and
	// answers, under their own checks.
	rev := must(goldenRevocation().Encode())
	inv := must(goldenInvite().Encode())
	req := must(goldenRequest().Encode())
	ans := must(goldenAnswer().Encode())
	for i := range rev {
		rev[i] ^= 0x01
		if x, err := DecodeRevocation(rev); err == nil && VerifyRevocation(x, crowID, rootPub) == nil {
			t.Fatalf("revocation: flipped byte %d still verifies", i)
		}
		rev[i] ^= 0x01
	}
	for i := range req {
		req[i] ^= 0x01
		if x, err := DecodeJoinRequest(req); err == nil && VerifyJoinRequest([32]byte(goldenSecret), homePub, crowID, x) == nil {
			t.Fatalf("join request: flipped byte %d still verifies", i)
		}
		req[i] ^= 0x01
	}
	for i := range ans {
		ans[i] ^= 0x01
		if x, err := DecodeJoinAnswer(ans); err == nil && VerifyJoinAnswer(goldenInvite(), goldenRequest(), x) == nil {
			t.Fatalf("join answer: flipped byte %d still verifies", i)
		}
		ans[i] ^= 0x01
	}
	// An invite is unsigned: a flipped byte in the home key, crow id or
	// secret must make the join fail at home. The URL only routes and the
	// expiry home enforces from its own records, so neither is in the
	// transcript.
	for i := range inv {
		inv[i] ^= 0x01
		x, err := DecodeInvite(inv)
		if err == nil && x.GatewayURL == goldenURL && x.ExpiresAt.Equal(goldenExpires) {
			q, err := NewJoinRequest(x, satID, satPriv, satName, reader(goldenNonce))
			if err == nil && VerifyJoinRequest([32]byte(goldenSecret), homePub, crowID, q) == nil {
				t.Fatalf("invite: flipped byte %d still joins", i)
			}
		}
		inv[i] ^= 0x01
	}
}
