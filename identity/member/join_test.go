package member

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"strings"
	"testing"
)

// home is the home side of a join, as the wiring will do it: invites filed
// by id, single use, the root key to issue with.
type home struct {
	priv    ed25519.PrivateKey
	invites map[[32]byte][SecretSize]byte
	used    map[[32]byte]bool
}

func newHome(inv Invite) *home {
	return &home{priv: homePriv, invites: map[[32]byte][SecretSize]byte{inv.ID(): inv.Secret}, used: map[[32]byte]bool{}}
}

func (h *home) join(t *testing.T, wire []byte) ([]byte, error) {
	t.Helper()
	req, err := DecodeJoinRequest(wire)
	if err != nil {
		return nil, err
	}
	secret, ok := h.invites[req.InviteID]
	if !ok || h.used[req.InviteID] {
		return nil, ErrInviteMismatch
	}
	if err := VerifyJoinRequest(secret, h.priv.Public().(ed25519.PublicKey), crowID, req); err != nil {
		return nil, err
	}
	h.used[req.InviteID] = true
	cert := must(Issue(rootPriv, Fields{CrowID: crowID, InstanceID: req.InstanceID, PublicKey: req.PublicKey, Role: RoleSatellite, Name: req.Name, IssuedAt: goldenIssued}))
	return must(must(NewJoinAnswer(h.priv, rootPub, req, cert)).Encode()), nil
}

func TestJoin(t *testing.T) {
	inv := must(ParseInvite(goldenInvite().String(), goldenNow))
	h := newHome(inv)
	req := must(NewJoinRequest(inv, satID, satPriv, satName, reader(goldenNonce)))
	wire := must(req.Encode())
	ansWire, err := h.join(t, wire)
	if err != nil {
		t.Fatal(err)
	}
	ans := must(DecodeJoinAnswer(ansWire))
	if err := VerifyJoinAnswer(inv, req, ans); err != nil {
		t.Fatal(err)
	}
	if !ans.RootPublicKey.Equal(rootPub) || !ans.Certificate.PublicKey.Equal(satPub) || Verify(ans.Certificate, crowID, ans.RootPublicKey) != nil {
		t.Error("the joiner did not get a certificate for its key under the root key")
	}
	if _, err := h.join(t, wire); err == nil {
		t.Error("a replayed request joined twice")
	}
}

// TestJoinMITMLearnsNoSecret: everything that crosses the wire (request and
// answer) holds neither the secret nor anything but its hash and a MAC.
func TestJoinMITMLearnsNoSecret(t *testing.T) {
	inv := goldenInvite()
	req := goldenRequest()
	wire := append(must(req.Encode()), must(goldenAnswer().Encode())...)
	text := req.String() + goldenAnswer().String()
	for _, part := range [][]byte{goldenSecret, goldenSecret[:8], goldenSecret[24:]} {
		if bytes.Contains(wire, part) {
			t.Fatalf("the secret (or 8 bytes of it) crosses the wire")
		}
	}
	if strings.Contains(text, strings.TrimPrefix(inv.String(), "crowinv1.")[60:80]) {
		t.Error("the text of the invite crosses the wire")
	}
	id := inv.ID()
	if req.InviteID != id || id == [32]byte(goldenSecret) || id == sha256.Sum256(goldenSecret) {
		t.Error("invite id is not the domain-separated hash of the secret")
	}
}

// TestJoinMITMCannotSwapKey: a man in the middle who sees the request and
// replaces the joiner's key by its own (keeping or recomputing what it can)
// is refused by home.
func TestJoinMITMCannotSwapKey(t *testing.T) {
	inv := goldenInvite()
	req := goldenRequest()
	secret := [SecretSize]byte(goldenSecret)

	swapped := req
	swapped.PublicKey = malloryPub
	wantErr(t, "key swapped, MAC and signature kept", VerifyJoinRequest(secret, homePub, crowID, swapped), ErrBadMAC)

	resigned := swapped
	copy(resigned.Signature[:], ed25519.Sign(malloryPriv, Transcript(homePub, crowID, resigned)))
	wantErr(t, "key swapped and re-signed by the attacker", VerifyJoinRequest(secret, homePub, crowID, resigned), ErrBadMAC)

	guessed := resigned
	wrongSecret := [SecretSize]byte(seq(1, 32))
	guessed.MAC = joinMAC(wrongSecret, Transcript(homePub, crowID, guessed))
	wantErr(t, "MAC recomputed under a guessed secret", VerifyJoinRequest(secret, homePub, crowID, guessed), ErrBadMAC)

	hashAsKey := resigned
	hashAsKey.MAC = joinMAC([SecretSize]byte(req.InviteID), Transcript(homePub, crowID, hashAsKey))
	wantErr(t, "MAC keyed with the invite id seen on the wire", VerifyJoinRequest(secret, homePub, crowID, hashAsKey), ErrBadMAC)

	renamed := req
	renamed.Name = "mallory"
	wantErr(t, "name changed", VerifyJoinRequest(secret, homePub, crowID, renamed), ErrBadMAC)
	reid := req
	reid.InstanceID = "home-3f1c"
	wantErr(t, "instance id changed", VerifyJoinRequest(secret, homePub, crowID, reid), ErrBadMAC)

	// Someone holding the secret (a leaked invite) but not the joiner's key
	// still cannot present the joiner's key: the signature fails.
	insider := req
	insider.Nonce[0] ^= 1
	insider.MAC = joinMAC(secret, Transcript(homePub, crowID, insider))
	wantErr(t, "MAC right, signature not by the key", VerifyJoinRequest(secret, homePub, crowID, insider), ErrBadSignature)

	// Relayed to another home or another crow.
	wantErr(t, "relayed to another home", VerifyJoinRequest(secret, malloryPub, crowID, req), ErrBadMAC)
	wantErr(t, "relayed to another crow", VerifyJoinRequest(secret, homePub, otherCrowID, req), ErrBadMAC)
	// Checked against another invite's secret.
	wantErr(t, "another invite", VerifyJoinRequest([SecretSize]byte(seq(9, 32)), homePub, crowID, req), ErrInviteMismatch)

	if err := VerifyJoinRequest(secret, homePub, crowID, req); err != nil {
		t.Errorf("the untouched request: %v", err)
	}
	_ = inv
}

// TestJoinMITMCannotForgeAnswer: the joiner accepts only an answer signed by
// the home key pinned from the invite, for its own request, carrying a
// certificate of its key under the crow's root.
func TestJoinMITMCannotForgeAnswer(t *testing.T) {
	inv := goldenInvite()
	req := goldenRequest()
	good := goldenAnswer()
	if err := VerifyJoinAnswer(inv, req, good); err != nil {
		t.Fatal(err)
	}
	malloryCert := must(Issue(otherRootPriv, Fields{CrowID: otherCrowID, InstanceID: satID, PublicKey: satPub, Role: RoleSatellite, Name: satName, IssuedAt: goldenIssued}))
	// The attacker runs its own crow and signs answers with its own key.
	forged := JoinAnswer{RootPublicKey: otherRootPub, Certificate: malloryCert}
	copy(forged.Signature[:], ed25519.Sign(malloryPriv, AnswerMessage(Transcript(malloryPub, crowID, req), otherRootPub, must(malloryCert.Encode()))))
	wantErr(t, "answer signed by another key", VerifyJoinAnswer(inv, req, forged), ErrBadSignature)

	// An invite tampered to pin the attacker's key: the certificate is still
	// of the wrong crow.
	tampered := inv
	tampered.HomePublicKey = malloryPub
	copy(forged.Signature[:], ed25519.Sign(malloryPriv, AnswerMessage(Transcript(malloryPub, crowID, req), otherRootPub, must(malloryCert.Encode()))))
	wantErr(t, "attacker's root for our crow id", VerifyJoinAnswer(tampered, req, forged), ErrWrongCrow)

	// Home's genuine answer to another request (another nonce), replayed.
	other := must(NewJoinRequest(inv, satID, satPriv, satName, reader(seq(0x10, 32))))
	replayed := must(NewJoinAnswer(homePriv, rootPub, other, goldenCert()))
	wantErr(t, "answer to another request", VerifyJoinAnswer(inv, req, replayed), ErrBadSignature)

	// The certificate or root key swapped inside a genuine answer.
	swapCert := good
	swapCert.Certificate = must(Issue(rootPriv, Fields{CrowID: crowID, InstanceID: satID, PublicKey: malloryPub, Role: RoleSatellite, Name: satName, IssuedAt: goldenIssued}))
	wantErr(t, "certificate swapped", VerifyJoinAnswer(inv, req, swapCert), ErrBadSignature)
	swapRoot := good
	swapRoot.RootPublicKey = otherRootPub
	wantErr(t, "root key swapped", VerifyJoinAnswer(inv, req, swapRoot), ErrBadSignature)
	flipped := good
	flipped.Signature[10] ^= 4
	wantErr(t, "signature flipped", VerifyJoinAnswer(inv, req, flipped), ErrBadSignature)

	// Home itself answering with a certificate for something else: refused
	// by NewJoinAnswer, and by the joiner if signed anyway.
	wrongKey := swapCert.Certificate
	_, err := NewJoinAnswer(homePriv, rootPub, req, wrongKey)
	wantErr(t, "NewJoinAnswer for another key", err, ErrAnswerMismatch)
	signedAnyway := JoinAnswer{RootPublicKey: rootPub, Certificate: wrongKey}
	copy(signedAnyway.Signature[:], ed25519.Sign(homePriv, AnswerMessage(Transcript(homePub, crowID, req), rootPub, must(wrongKey.Encode()))))
	wantErr(t, "home-signed answer for another key", VerifyJoinAnswer(inv, req, signedAnyway), ErrAnswerMismatch)
	renamed := must(Issue(rootPriv, Fields{CrowID: crowID, InstanceID: satID, PublicKey: satPub, Role: RoleSatellite, Name: "other", IssuedAt: goldenIssued}))
	_, err = NewJoinAnswer(homePriv, rootPub, req, renamed)
	wantErr(t, "NewJoinAnswer for another name", err, ErrAnswerMismatch)
	_, err = NewJoinAnswer(homePriv, otherRootPub, req, goldenCert())
	wantErr(t, "NewJoinAnswer under the wrong root", err, ErrWrongCrow)
	_, err = NewJoinAnswer(homePriv[:4], rootPub, req, goldenCert())
	wantErr(t, "NewJoinAnswer short key", err, ErrMalformed)
}

func TestJoinRequestErrors(t *testing.T) {
	inv := goldenInvite()
	for _, tc := range []struct {
		name, id, nm string
		key          ed25519.PrivateKey
	}{
		{"no instance id", "", satName, satPriv},
		{"bad name", satID, "a\tb", satPriv},
		{"short key", satID, satName, satPriv[:32]},
	} {
		_, err := NewJoinRequest(inv, tc.id, tc.key, tc.nm, reader(goldenNonce))
		wantErr(t, tc.name, err, ErrMalformed)
	}
	bad := inv
	bad.HomePublicKey = nil
	_, err := NewJoinRequest(bad, satID, satPriv, satName, reader(goldenNonce))
	wantErr(t, "invite without home key", err, ErrMalformed)
	if _, err := NewJoinRequest(inv, satID, satPriv, satName, reader(goldenNonce[:3])); err == nil {
		t.Error("short random source accepted")
	}
	wantErr(t, "VerifyJoinRequest zero request", VerifyJoinRequest([32]byte(goldenSecret), homePub, crowID, JoinRequest{}), ErrMalformed)
	wantErr(t, "VerifyJoinRequest short home key", VerifyJoinRequest([32]byte(goldenSecret), homePub[:3], crowID, goldenRequest()), ErrMalformed)

	good := must(goldenRequest().Encode())
	for _, tc := range []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrMalformed},
		{"version 2", append([]byte{2}, good[1:]...), ErrUnknownVersion},
		{"truncated", good[:len(good)-1], ErrMalformed},
		{"trailing", append(append([]byte(nil), good...), 0), ErrMalformed},
	} {
		_, err := DecodeJoinRequest(tc.b)
		wantErr(t, "DecodeJoinRequest "+tc.name, err, tc.want)
	}
	ans := must(goldenAnswer().Encode())
	for _, tc := range []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrMalformed},
		{"version 2", append([]byte{2}, ans[1:]...), ErrUnknownVersion},
		{"truncated", ans[:len(ans)-1], ErrMalformed},
		{"trailing", append(append([]byte(nil), ans...), 0), ErrMalformed},
		{"inner certificate of version 2", func() []byte {
			b := append([]byte(nil), ans...)
			b[1+32+2] = 2
			return b
		}(), ErrUnknownVersion},
	} {
		_, err := DecodeJoinAnswer(tc.b)
		wantErr(t, "DecodeJoinAnswer "+tc.name, err, tc.want)
	}
	_, err = ParseJoinRequest(goldenAnswer().String())
	wantErr(t, "ParseJoinRequest(answer)", err, ErrMalformed)
	_, err = ParseJoinAnswer(goldenRequest().String())
	wantErr(t, "ParseJoinAnswer(request)", err, ErrMalformed)
	wantErr(t, "VerifyJoinAnswer zero answer", VerifyJoinAnswer(inv, goldenRequest(), JoinAnswer{}), ErrMalformed)
}
