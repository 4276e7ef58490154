package member

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"io"
)

// Frozen domains and text prefixes of the join.
const (
	joinDomain       = "crow-join-v1"
	joinAnswerDomain = "crow-join-answer-v1"
	joinPrefix       = "crowjoin1."
	answerPrefix     = "crowjans1."
	// NonceSize is the size of a join request's nonce.
	NonceSize = 32
)

// JoinRequest is what a joiner sends home (step 3 of the join, see the
// package documentation): the invite's id (never its secret), the instance id
// and key it wants certified, its name, a fresh nonce, the MAC under the
// invite secret and the signature under the new key, both over the
// transcript ([Transcript]).
//
// Binary encoding (frozen, version 1; pinned by testdata/join.json):
//
//	u8      version = 1
//	[32]    invite id          InviteID(secret)
//	u16     len(instance id)   big-endian, as every length below
//	bytes   instance id        1..MaxIDLen printable ASCII
//	[32]    public key         the joiner's new Ed25519 key
//	u16     len(name)
//	bytes   name               1..MaxNameLen UTF-8, no control characters
//	[32]    nonce
//	[32]    MAC                HMAC-SHA256(secret, transcript)
//	[64]    signature          Ed25519 by the new key over the transcript
//
// and nothing after. Text form: "crowjoin1." + base64url (also JSON).
// Compatibility rules as for [Certificate] (domain "crow-join-v2" for a
// version 2).
type JoinRequest struct {
	InviteID   [32]byte
	InstanceID string
	PublicKey  ed25519.PublicKey
	Name       string
	Nonce      [NonceSize]byte
	MAC        [sha256.Size]byte
	Signature  [ed25519.SignatureSize]byte
}

// Transcript is the message a join request's MAC and signature cover:
//
//	"crow-join-v1" || 0x00
//	[32]  home public key       from the invite (joiner) / home's own (home)
//	u16   len(crow id) || crow id
//	[32]  invite id
//	u16   len(instance id) || instance id
//	[32]  joiner's public key
//	u16   len(name) || name
//	[32]  nonce
//
// Home's key and the crow id are not sent: each side puts in what it
// believes, so a request relayed to another home or crow fails.
func Transcript(homePub ed25519.PublicKey, crowID string, req JoinRequest) []byte {
	e := make(enc, 0, len(joinDomain)+1+32+2+len(crowID)+32+2+len(req.InstanceID)+32+2+len(req.Name)+NonceSize)
	e.raw([]byte(joinDomain))
	e.u8(0)
	e.raw(homePub)
	e.str(crowID)
	e.raw(req.InviteID[:])
	e.str(req.InstanceID)
	e.raw(req.PublicKey)
	e.str(req.Name)
	e.raw(req.Nonce[:])
	return e
}

func joinMAC(secret [SecretSize]byte, transcript []byte) [sha256.Size]byte {
	m := hmac.New(sha256.New, secret[:])
	m.Write(transcript)
	return [sha256.Size]byte(m.Sum(nil))
}

// NewJoinRequest is the joiner's step: a request to join with key (the
// instance's new Ed25519 key, generated on this machine) as instanceID named
// name, for inv (already parsed with ParseInvite). The nonce is read from
// rand (crypto/rand.Reader in production).
func NewJoinRequest(inv Invite, instanceID string, key ed25519.PrivateKey, name string, rand io.Reader) (JoinRequest, error) {
	if len(key) != ed25519.PrivateKeySize {
		return JoinRequest{}, fmt.Errorf("making join request: %w: key is %d bytes", ErrMalformed, len(key))
	}
	if _, err := inv.Encode(); err != nil {
		return JoinRequest{}, fmt.Errorf("making join request: invite: %w", err)
	}
	req := JoinRequest{InviteID: inv.ID(), InstanceID: instanceID, PublicKey: key.Public().(ed25519.PublicKey), Name: name}
	if _, err := req.body(); err != nil {
		return JoinRequest{}, fmt.Errorf("making join request: %w", err)
	}
	if _, err := io.ReadFull(rand, req.Nonce[:]); err != nil {
		return JoinRequest{}, fmt.Errorf("making join request: reading nonce: %w", err)
	}
	t := Transcript(inv.HomePublicKey, inv.CrowID, req)
	req.MAC = joinMAC(inv.Secret, t)
	copy(req.Signature[:], ed25519.Sign(key, t))
	return req, nil
}

// VerifyJoinRequest is home's check of req against the invite whose secret
// home filed under req.InviteID, with homePub (home's own key, the one in the
// invite) and crowID (home's crow). In order: req is well formed
// (ErrMalformed), req.InviteID is InviteID(secret) (ErrInviteMismatch), the
// MAC, compared in constant time (ErrBadMAC), the signature under
// req.PublicKey (ErrBadSignature). Whether the invite is still unused and
// unexpired is home's store's business: check it, and mark the invite used,
// in the same transaction.
func VerifyJoinRequest(secret [SecretSize]byte, homePub ed25519.PublicKey, crowID string, req JoinRequest) error {
	if _, err := req.body(); err != nil {
		return fmt.Errorf("verifying join request: %w", err)
	}
	if err := checkKey("home public key", homePub); err != nil {
		return fmt.Errorf("verifying join request: %w", err)
	}
	if id := InviteID(secret); !hmac.Equal(id[:], req.InviteID[:]) {
		return fmt.Errorf("verifying join request: %w", ErrInviteMismatch)
	}
	t := Transcript(homePub, crowID, req)
	if mac := joinMAC(secret, t); !hmac.Equal(mac[:], req.MAC[:]) {
		return fmt.Errorf("verifying join request of %q: %w", req.InstanceID, ErrBadMAC)
	}
	if !ed25519.Verify(req.PublicKey, t, req.Signature[:]) {
		return fmt.Errorf("verifying join request of %q: %w", req.InstanceID, ErrBadSignature)
	}
	return nil
}

func (req JoinRequest) body() ([]byte, error) {
	for _, err := range []error{checkID("instance id", req.InstanceID), checkKey("public key", req.PublicKey), checkName(req.Name)} {
		if err != nil {
			return nil, err
		}
	}
	e := make(enc, 0, 1+32+2+len(req.InstanceID)+32+2+len(req.Name)+NonceSize+sha256.Size+ed25519.SignatureSize)
	e.u8(Version)
	e.raw(req.InviteID[:])
	e.str(req.InstanceID)
	e.raw(req.PublicKey)
	e.str(req.Name)
	e.raw(req.Nonce[:])
	return e, nil
}

// Encode returns the binary encoding of req.
func (req JoinRequest) Encode() ([]byte, error) {
	b, err := req.body()
	if err != nil {
		return nil, err
	}
	b = append(b, req.MAC[:]...)
	return append(b, req.Signature[:]...), nil
}

// DecodeJoinRequest parses the binary encoding of a join request (no check
// of MAC or signature: that is VerifyJoinRequest's job).
func DecodeJoinRequest(b []byte) (JoinRequest, error) {
	d := dec{b: b}
	d.version("join request")
	var req JoinRequest
	copy(req.InviteID[:], d.fixed("invite id", 32))
	req.InstanceID = d.str("instance id")
	req.PublicKey = d.key("public key")
	req.Name = d.str("name")
	copy(req.Nonce[:], d.fixed("nonce", NonceSize))
	copy(req.MAC[:], d.fixed("MAC", sha256.Size))
	copy(req.Signature[:], d.fixed("signature", ed25519.SignatureSize))
	if err := d.end(); err != nil {
		return JoinRequest{}, fmt.Errorf("decoding join request: %w", err)
	}
	if _, err := req.body(); err != nil {
		return JoinRequest{}, fmt.Errorf("decoding join request: %w", err)
	}
	return req, nil
}

// String returns the text form, "crowjoin1." + base64url.
func (req JoinRequest) String() string {
	b, err := req.Encode()
	if err != nil {
		return ""
	}
	return toText(joinPrefix, b)
}

// ParseJoinRequest parses the text form of a join request.
func ParseJoinRequest(s string) (JoinRequest, error) {
	b, err := fromText(joinPrefix, s)
	if err != nil {
		return JoinRequest{}, fmt.Errorf("parsing join request: %w", err)
	}
	return DecodeJoinRequest(b)
}

// MarshalText implements encoding.TextMarshaler with the text form.
func (req JoinRequest) MarshalText() ([]byte, error) {
	b, err := req.Encode()
	if err != nil {
		return nil, err
	}
	return []byte(toText(joinPrefix, b)), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (req *JoinRequest) UnmarshalText(text []byte) error {
	v, err := ParseJoinRequest(string(text))
	if err != nil {
		return err
	}
	*req = v
	return nil
}

// JoinAnswer is home's answer to a verified join request (step 5): the
// crow's root public key, the joiner's certificate, and home's signature
// binding both to the request.
//
// Binary encoding (frozen, version 1; pinned by testdata/join.json):
//
//	u8      version = 1
//	[32]    root public key
//	u16     len(certificate)    big-endian
//	bytes   certificate         its binary encoding
//	[64]    signature           Ed25519 by home's key over AnswerMessage
//
// and nothing after. Text form: "crowjans1." + base64url (also JSON).
// Compatibility rules as for [Certificate] (domain "crow-join-answer-v2").
type JoinAnswer struct {
	RootPublicKey ed25519.PublicKey
	Certificate   Certificate
	Signature     [ed25519.SignatureSize]byte
}

// AnswerMessage is what home signs in a join answer:
//
//	"crow-join-answer-v1" || 0x00
//	[32]  SHA-256(Transcript(homePub, crowID, req))
//	[32]  root public key
//	u16   len(certificate) || certificate (binary encoding)
func AnswerMessage(transcript []byte, rootPub ed25519.PublicKey, cert []byte) []byte {
	h := sha256.Sum256(transcript)
	e := make(enc, 0, len(joinAnswerDomain)+1+32+32+2+len(cert))
	e.raw([]byte(joinAnswerDomain))
	e.u8(0)
	e.raw(h[:])
	e.raw(rootPub)
	e.u8(byte(len(cert) >> 8))
	e.u8(byte(len(cert)))
	e.raw(cert)
	return e
}

// certMatches checks that cert is what req asked for.
func certMatches(cert Certificate, req JoinRequest) error {
	switch {
	case !cert.PublicKey.Equal(req.PublicKey):
		return fmt.Errorf("%w: certificate is for another key", ErrAnswerMismatch)
	case cert.InstanceID != req.InstanceID:
		return fmt.Errorf("%w: certificate is for instance %q, asked %q", ErrAnswerMismatch, cert.InstanceID, req.InstanceID)
	case cert.Name != req.Name:
		return fmt.Errorf("%w: certificate names %q, asked %q", ErrAnswerMismatch, cert.Name, req.Name)
	}
	return nil
}

// NewJoinAnswer is home's step after VerifyJoinRequest: it signs, with
// homePriv (home's key, the one its invites carry), the answer carrying
// rootPub and cert (issued by the root key for req). It refuses a
// certificate that is not for req (ErrAnswerMismatch) or does not verify
// under rootPub.
func NewJoinAnswer(homePriv ed25519.PrivateKey, rootPub ed25519.PublicKey, req JoinRequest, cert Certificate) (JoinAnswer, error) {
	if len(homePriv) != ed25519.PrivateKeySize {
		return JoinAnswer{}, fmt.Errorf("making join answer: %w: home key is %d bytes", ErrMalformed, len(homePriv))
	}
	if err := Verify(cert, cert.CrowID, rootPub); err != nil {
		return JoinAnswer{}, fmt.Errorf("making join answer: %w", err)
	}
	if err := certMatches(cert, req); err != nil {
		return JoinAnswer{}, fmt.Errorf("making join answer: %w", err)
	}
	cb, err := cert.Encode()
	if err != nil {
		return JoinAnswer{}, fmt.Errorf("making join answer: %w", err)
	}
	t := Transcript(homePriv.Public().(ed25519.PublicKey), cert.CrowID, req)
	a := JoinAnswer{RootPublicKey: append(ed25519.PublicKey(nil), rootPub...), Certificate: cert}
	copy(a.Signature[:], ed25519.Sign(homePriv, AnswerMessage(t, rootPub, cb)))
	return a, nil
}

// VerifyJoinAnswer is the joiner's last step: it checks a, received for req
// made from inv. In order: a is well formed (ErrMalformed), home's signature
// under inv.HomePublicKey, the key pinned from the invite (ErrBadSignature),
// the root key is inv.CrowID's (ErrWrongCrow), the certificate verifies
// (Verify's errors), and it is for req's key, instance id and name
// (ErrAnswerMismatch). On success the joiner keeps a.Certificate and
// a.RootPublicKey.
func VerifyJoinAnswer(inv Invite, req JoinRequest, a JoinAnswer) error {
	cb, err := a.Certificate.Encode()
	if err != nil {
		return fmt.Errorf("verifying join answer: %w", err)
	}
	if err := checkKey("root public key", a.RootPublicKey); err != nil {
		return fmt.Errorf("verifying join answer: %w", err)
	}
	if err := checkKey("home public key", inv.HomePublicKey); err != nil {
		return fmt.Errorf("verifying join answer: invite: %w", err)
	}
	t := Transcript(inv.HomePublicKey, inv.CrowID, req)
	if !ed25519.Verify(inv.HomePublicKey, AnswerMessage(t, a.RootPublicKey, cb), a.Signature[:]) {
		return fmt.Errorf("verifying join answer: home's signature: %w", ErrBadSignature)
	}
	if err := Verify(a.Certificate, inv.CrowID, a.RootPublicKey); err != nil {
		return fmt.Errorf("verifying join answer: %w", err)
	}
	if err := certMatches(a.Certificate, req); err != nil {
		return fmt.Errorf("verifying join answer: %w", err)
	}
	return nil
}

// Encode returns the binary encoding of a.
func (a JoinAnswer) Encode() ([]byte, error) {
	cb, err := a.Certificate.Encode()
	if err != nil {
		return nil, err
	}
	if err := checkKey("root public key", a.RootPublicKey); err != nil {
		return nil, err
	}
	e := make(enc, 0, 1+32+2+len(cb)+ed25519.SignatureSize)
	e.u8(Version)
	e.raw(a.RootPublicKey)
	e.u8(byte(len(cb) >> 8))
	e.u8(byte(len(cb)))
	e.raw(cb)
	e.raw(a.Signature[:])
	return e, nil
}

// DecodeJoinAnswer parses the binary encoding of a join answer (no signature
// check: that is VerifyJoinAnswer's job).
func DecodeJoinAnswer(b []byte) (JoinAnswer, error) {
	d := dec{b: b}
	d.version("join answer")
	var a JoinAnswer
	a.RootPublicKey = d.key("root public key")
	cb := []byte(d.str("certificate"))
	copy(a.Signature[:], d.fixed("signature", ed25519.SignatureSize))
	if err := d.end(); err != nil {
		return JoinAnswer{}, fmt.Errorf("decoding join answer: %w", err)
	}
	c, err := DecodeCertificate(cb)
	if err != nil {
		return JoinAnswer{}, fmt.Errorf("decoding join answer: %w", err)
	}
	a.Certificate = c
	return a, nil
}

// String returns the text form, "crowjans1." + base64url.
func (a JoinAnswer) String() string {
	b, err := a.Encode()
	if err != nil {
		return ""
	}
	return toText(answerPrefix, b)
}

// ParseJoinAnswer parses the text form of a join answer.
func ParseJoinAnswer(s string) (JoinAnswer, error) {
	b, err := fromText(answerPrefix, s)
	if err != nil {
		return JoinAnswer{}, fmt.Errorf("parsing join answer: %w", err)
	}
	return DecodeJoinAnswer(b)
}

// MarshalText implements encoding.TextMarshaler with the text form.
func (a JoinAnswer) MarshalText() ([]byte, error) {
	b, err := a.Encode()
	if err != nil {
		return nil, err
	}
	return []byte(toText(answerPrefix, b)), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (a *JoinAnswer) UnmarshalText(text []byte) error {
	v, err := ParseJoinAnswer(string(text))
	if err != nil {
		return err
	}
	*a = v
	return nil
}
