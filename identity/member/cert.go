package member

import (
	"crypto/ed25519"
	"fmt"
	"time"

	"github.com/crow-sync/crow/identity"
)

// Frozen domains and text prefixes of certificates and revocations.
const (
	certDomain   = "crow-member-v1"
	certPrefix   = "crowcert1."
	revokeDomain = "crow-revoke-v1"
	revokePrefix = "crowrev1."
)

// Role is an instance's role in its crow (SPEC §7).
type Role string

// The roles. On the wire a role is one byte: 1 home, 2 satellite.
const (
	RoleHome      Role = "home"
	RoleSatellite Role = "satellite"
)

func (r Role) code() (byte, error) {
	switch r {
	case RoleHome:
		return 1, nil
	case RoleSatellite:
		return 2, nil
	}
	return 0, fmt.Errorf("%w: role %q", ErrMalformed, string(r))
}

func roleOf(code byte) (Role, error) {
	switch code {
	case 1:
		return RoleHome, nil
	case 2:
		return RoleSatellite, nil
	}
	return "", fmt.Errorf("%w: role code %d", ErrMalformed, code)
}

// Fields are what a membership certificate says: the root key of crow CrowID
// admits instance InstanceID, whose Ed25519 key is PublicKey, as Role under
// Name, at IssuedAt (whole Unix seconds; decoded in UTC).
type Fields struct {
	CrowID     string
	InstanceID string
	PublicKey  ed25519.PublicKey
	Role       Role
	Name       string
	IssuedAt   time.Time
}

// Certificate is a membership certificate: Fields signed by the root key
// (SPEC §2).
//
// Binary encoding (frozen, version 1; pinned by testdata/certificate.json):
//
//	u8      version = 1
//	u16     len(crow id)      big-endian, as every length and integer below
//	bytes   crow id           1..MaxIDLen printable ASCII
//	u16     len(instance id)
//	bytes   instance id       1..MaxIDLen printable ASCII
//	[32]    instance public key (Ed25519)
//	u8      role              1 home, 2 satellite
//	u16     len(name)
//	bytes   name              1..MaxNameLen UTF-8, no control characters
//	i64     issued_at         Unix seconds, 0..253402300799
//	[64]    signature         Ed25519 by the root key over
//	                          "crow-member-v1" || 0x00 || every byte above
//
// and nothing after. Text form: "crowcert1." + base64url (no padding, strict)
// of the binary; it is also the JSON form (MarshalText).
//
// Compatibility rules: a record has exactly one encoding (Decode rejects
// trailing bytes, non-canonical base64 and out-of-range values, so
// Encode(Decode(b)) == b). Version 1 is never changed. A new field, role or
// meaning makes version 2 with domain "crow-member-v2"; verifiers of version 1
// reject it (ErrUnknownVersion) and so fail closed, and new verifiers keep
// accepting version 1 for as long as such certificates are in use.
type Certificate struct {
	Fields
	Signature [ed25519.SignatureSize]byte
}

// Issue signs f with rootPriv, the root key of the crow (identity
// Seed.RootKey). It refuses fields that cannot be encoded and a crow id that
// is not rootPriv's (ErrWrongCrow). IssuedAt is truncated to the second.
func Issue(rootPriv ed25519.PrivateKey, f Fields) (Certificate, error) {
	if len(rootPriv) != ed25519.PrivateKeySize {
		return Certificate{}, fmt.Errorf("issuing certificate: %w: root key is %d bytes", ErrMalformed, len(rootPriv))
	}
	f.IssuedAt = time.Unix(f.IssuedAt.Unix(), 0).UTC()
	f.PublicKey = append(ed25519.PublicKey(nil), f.PublicKey...)
	body, err := f.body()
	if err != nil {
		return Certificate{}, fmt.Errorf("issuing certificate: %w", err)
	}
	if own := identity.CrowIDFromPublicKey(rootPriv.Public().(ed25519.PublicKey)); f.CrowID != own {
		return Certificate{}, fmt.Errorf("issuing certificate: %w: crow id %q, the root key's is %q", ErrWrongCrow, f.CrowID, own)
	}
	c := Certificate{Fields: f}
	copy(c.Signature[:], ed25519.Sign(rootPriv, signed(certDomain, body)))
	return c, nil
}

// body is the encoding of f without the signature.
func (f Fields) body() ([]byte, error) {
	for _, err := range []error{checkID("crow id", f.CrowID), checkID("instance id", f.InstanceID),
		checkKey("instance public key", f.PublicKey), checkName(f.Name), checkTime("issued_at", f.IssuedAt)} {
		if err != nil {
			return nil, err
		}
	}
	role, err := f.Role.code()
	if err != nil {
		return nil, err
	}
	e := make(enc, 0, 1+2+len(f.CrowID)+2+len(f.InstanceID)+32+1+2+len(f.Name)+8+ed25519.SignatureSize)
	e.u8(Version)
	e.str(f.CrowID)
	e.str(f.InstanceID)
	e.raw(f.PublicKey)
	e.u8(role)
	e.str(f.Name)
	e.unix(f.IssuedAt)
	return e, nil
}

// Encode returns the binary encoding of c. It fails (ErrMalformed) only for
// a Certificate that Issue or Decode did not make.
func (c Certificate) Encode() ([]byte, error) {
	b, err := c.body()
	if err != nil {
		return nil, err
	}
	return append(b, c.Signature[:]...), nil
}

// DecodeCertificate parses the binary encoding of a certificate. It does not
// check the signature: that is Verify's job.
func DecodeCertificate(b []byte) (Certificate, error) {
	d := dec{b: b}
	d.version("certificate")
	var c Certificate
	c.CrowID = d.str("crow id")
	c.InstanceID = d.str("instance id")
	c.PublicKey = d.key("instance public key")
	role := d.u8("role")
	c.Name = d.str("name")
	c.IssuedAt = d.unix("issued_at")
	copy(c.Signature[:], d.fixed("signature", ed25519.SignatureSize))
	if err := d.end(); err != nil {
		return Certificate{}, fmt.Errorf("decoding certificate: %w", err)
	}
	var err error
	if c.Role, err = roleOf(role); err != nil {
		return Certificate{}, fmt.Errorf("decoding certificate: %w", err)
	}
	if _, err := c.body(); err != nil {
		return Certificate{}, fmt.Errorf("decoding certificate: %w", err)
	}
	return c, nil
}

// Verify checks that c is a certificate of crow crowID signed by rootPub,
// that crow's root key. The checks run in this order and the first failure is
// returned: rootPub is crowID's root key (ErrWrongCrow), c is well formed
// (ErrMalformed), c is of crow crowID (ErrWrongCrow), the root signature
// (ErrBadSignature). It says nothing of revocation: see [Revocation.Revokes].
func Verify(c Certificate, crowID string, rootPub ed25519.PublicKey) error {
	if err := checkRoot(crowID, rootPub); err != nil {
		return fmt.Errorf("verifying certificate: %w", err)
	}
	body, err := c.body()
	if err != nil {
		return fmt.Errorf("verifying certificate: %w", err)
	}
	if c.CrowID != crowID {
		return fmt.Errorf("verifying certificate: %w: certificate of %q, want %q", ErrWrongCrow, c.CrowID, crowID)
	}
	if !ed25519.Verify(rootPub, signed(certDomain, body), c.Signature[:]) {
		return fmt.Errorf("verifying certificate of instance %q: %w", c.InstanceID, ErrBadSignature)
	}
	return nil
}

// checkRoot checks that rootPub is the root key of crowID.
func checkRoot(crowID string, rootPub ed25519.PublicKey) error {
	if err := checkKey("root public key", rootPub); err != nil {
		return err
	}
	if got := identity.CrowIDFromPublicKey(rootPub); got != crowID {
		return fmt.Errorf("%w: root key is crow %q's, want %q", ErrWrongCrow, got, crowID)
	}
	return nil
}

// String returns the text form, "crowcert1." + base64url; "" for a
// Certificate that cannot be encoded.
func (c Certificate) String() string {
	b, err := c.Encode()
	if err != nil {
		return ""
	}
	return toText(certPrefix, b)
}

// ParseCertificate parses the text form of a certificate (no signature check).
func ParseCertificate(s string) (Certificate, error) {
	b, err := fromText(certPrefix, s)
	if err != nil {
		return Certificate{}, fmt.Errorf("parsing certificate: %w", err)
	}
	return DecodeCertificate(b)
}

// MarshalText implements encoding.TextMarshaler with the text form.
func (c Certificate) MarshalText() ([]byte, error) {
	b, err := c.Encode()
	if err != nil {
		return nil, err
	}
	return []byte(toText(certPrefix, b)), nil
}

// UnmarshalText implements encoding.TextUnmarshaler (no signature check).
func (c *Certificate) UnmarshalText(text []byte) error {
	v, err := ParseCertificate(string(text))
	if err != nil {
		return err
	}
	*c = v
	return nil
}

// RevocationFields are what a revocation says: the root key of crow CrowID
// revokes instance InstanceID and its key PublicKey from RevokedAt on.
type RevocationFields struct {
	CrowID     string
	InstanceID string
	PublicKey  ed25519.PublicKey
	RevokedAt  time.Time
}

// Revocation is a root-signed revocation record (SPEC §2).
//
// Binary encoding (frozen, version 1; pinned by testdata/revocation.json):
//
//	u8      version = 1
//	u16     len(crow id)      big-endian, as every length and integer below
//	bytes   crow id           1..MaxIDLen printable ASCII
//	u16     len(instance id)
//	bytes   instance id       1..MaxIDLen printable ASCII
//	[32]    instance public key (Ed25519)
//	i64     revoked_at        Unix seconds, 0..253402300799
//	[64]    signature         Ed25519 by the root key over
//	                          "crow-revoke-v1" || 0x00 || every byte above
//
// and nothing after. Text form: "crowrev1." + base64url (no padding, strict);
// also the JSON form. The compatibility rules are those of [Certificate]
// (domain "crow-revoke-v2" for a version 2).
type Revocation struct {
	RevocationFields
	Signature [ed25519.SignatureSize]byte
}

// Revoke signs f with rootPriv, the crow's root key; its checks are Issue's.
func Revoke(rootPriv ed25519.PrivateKey, f RevocationFields) (Revocation, error) {
	if len(rootPriv) != ed25519.PrivateKeySize {
		return Revocation{}, fmt.Errorf("signing revocation: %w: root key is %d bytes", ErrMalformed, len(rootPriv))
	}
	f.RevokedAt = time.Unix(f.RevokedAt.Unix(), 0).UTC()
	f.PublicKey = append(ed25519.PublicKey(nil), f.PublicKey...)
	body, err := f.body()
	if err != nil {
		return Revocation{}, fmt.Errorf("signing revocation: %w", err)
	}
	if own := identity.CrowIDFromPublicKey(rootPriv.Public().(ed25519.PublicKey)); f.CrowID != own {
		return Revocation{}, fmt.Errorf("signing revocation: %w: crow id %q, the root key's is %q", ErrWrongCrow, f.CrowID, own)
	}
	r := Revocation{RevocationFields: f}
	copy(r.Signature[:], ed25519.Sign(rootPriv, signed(revokeDomain, body)))
	return r, nil
}

func (f RevocationFields) body() ([]byte, error) {
	for _, err := range []error{checkID("crow id", f.CrowID), checkID("instance id", f.InstanceID),
		checkKey("instance public key", f.PublicKey), checkTime("revoked_at", f.RevokedAt)} {
		if err != nil {
			return nil, err
		}
	}
	e := make(enc, 0, 1+2+len(f.CrowID)+2+len(f.InstanceID)+32+8+ed25519.SignatureSize)
	e.u8(Version)
	e.str(f.CrowID)
	e.str(f.InstanceID)
	e.raw(f.PublicKey)
	e.unix(f.RevokedAt)
	return e, nil
}

// Encode returns the binary encoding of r.
func (r Revocation) Encode() ([]byte, error) {
	b, err := r.body()
	if err != nil {
		return nil, err
	}
	return append(b, r.Signature[:]...), nil
}

// DecodeRevocation parses the binary encoding of a revocation (no signature
// check).
func DecodeRevocation(b []byte) (Revocation, error) {
	d := dec{b: b}
	d.version("revocation")
	var r Revocation
	r.CrowID = d.str("crow id")
	r.InstanceID = d.str("instance id")
	r.PublicKey = d.key("instance public key")
	r.RevokedAt = d.unix("revoked_at")
	copy(r.Signature[:], d.fixed("signature", ed25519.SignatureSize))
	if err := d.end(); err != nil {
		return Revocation{}, fmt.Errorf("decoding revocation: %w", err)
	}
	if _, err := r.body(); err != nil {
		return Revocation{}, fmt.Errorf("decoding revocation: %w", err)
	}
	return r, nil
}

// VerifyRevocation checks r against crow crowID and its root key rootPub, in
// Verify's order and with its errors.
func VerifyRevocation(r Revocation, crowID string, rootPub ed25519.PublicKey) error {
	if err := checkRoot(crowID, rootPub); err != nil {
		return fmt.Errorf("verifying revocation: %w", err)
	}
	body, err := r.body()
	if err != nil {
		return fmt.Errorf("verifying revocation: %w", err)
	}
	if r.CrowID != crowID {
		return fmt.Errorf("verifying revocation: %w: revocation of %q, want %q", ErrWrongCrow, r.CrowID, crowID)
	}
	if !ed25519.Verify(rootPub, signed(revokeDomain, body), r.Signature[:]) {
		return fmt.Errorf("verifying revocation of instance %q: %w", r.InstanceID, ErrBadSignature)
	}
	return nil
}

// Revokes reports whether r (already verified) applies to c: same crow and
// the same instance id or the same key. A revoked key stays refused under any
// instance id, and a revoked id under any key (SPEC §7).
func (r Revocation) Revokes(c Certificate) bool {
	return r.CrowID == c.CrowID && (r.InstanceID == c.InstanceID || r.PublicKey.Equal(c.PublicKey))
}

// String returns the text form, "crowrev1." + base64url; "" for a Revocation
// that cannot be encoded.
func (r Revocation) String() string {
	b, err := r.Encode()
	if err != nil {
		return ""
	}
	return toText(revokePrefix, b)
}

// ParseRevocation parses the text form of a revocation (no signature check).
func ParseRevocation(s string) (Revocation, error) {
	b, err := fromText(revokePrefix, s)
	if err != nil {
		return Revocation{}, fmt.Errorf("parsing revocation: %w", err)
	}
	return DecodeRevocation(b)
}

// MarshalText implements encoding.TextMarshaler with the text form.
func (r Revocation) MarshalText() ([]byte, error) {
	b, err := r.Encode()
	if err != nil {
		return nil, err
	}
	return []byte(toText(revokePrefix, b)), nil
}

// UnmarshalText implements encoding.TextUnmarshaler (no signature check).
func (r *Revocation) UnmarshalText(text []byte) error {
	v, err := ParseRevocation(string(text))
	if err != nil {
		return err
	}
	*r = v
	return nil
}
