package member

import (
	"crypto/ed25519"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/crow-sync/crow/identity"
)

// Frozen domain and text prefix of home records.
const (
	homeDomain = "crow-home-v1"
	homePrefix = "crowhome1."
)

// HomeFields are what a home record says: the root key of crow CrowID names
// instance InstanceID, whose Ed25519 key is PublicKey, home from term Epoch
// on (SPEC §2, failover). Base is the highest memory number the new home
// held when it was promoted: every number up to Base was assigned by an
// earlier home, every number above it by this one (or a later one). Epoch
// only grows: the record with the highest Epoch names the home; the
// original home, named by its certificate alone, is term 0.
type HomeFields struct {
	CrowID     string
	InstanceID string
	PublicKey  ed25519.PublicKey
	Epoch      uint64 // 1.. (0 is the original home, which needs no record)
	Base       uint64 // the last number held at promotion
	IssuedAt   time.Time
}

// HomeRecord is a root-signed home record: HomeFields signed by the root
// key, written by `crow instance promote` on an instance that holds the
// seed and replicated in the registry.
//
// Binary encoding (frozen, version 1; pinned by testdata/home.json):
//
//	u8      version = 1
//	u16     len(crow id)      big-endian, as every length and integer below
//	bytes   crow id           1..MaxIDLen printable ASCII
//	u16     len(instance id)
//	bytes   instance id       1..MaxIDLen printable ASCII
//	[32]    instance public key (Ed25519)
//	u64     epoch             1..2^63-1
//	u64     base              the last memory number held, 0..2^63-1
//	i64     issued_at         Unix seconds, 0..253402300799
//	[64]    signature         Ed25519 by the root key over
//	                          "crow-home-v1" || 0x00 || every byte above
//
// and nothing after. Text form: "crowhome1." + base64url (no padding,
// strict); also the JSON form. The compatibility rules are those of
// [Certificate] (domain "crow-home-v2" for a version 2).
type HomeRecord struct {
	HomeFields
	Signature [ed25519.SignatureSize]byte
}

// maxCounter bounds epoch and base (they travel as JSON numbers too).
const maxCounter = 1<<63 - 1

// IssueHome signs f with rootPriv, the crow's root key; its checks are
// Issue's, and Epoch must be at least 1.
func IssueHome(rootPriv ed25519.PrivateKey, f HomeFields) (HomeRecord, error) {
	if len(rootPriv) != ed25519.PrivateKeySize {
		return HomeRecord{}, fmt.Errorf("signing home record: %w: root key is %d bytes", ErrMalformed, len(rootPriv))
	}
	f.IssuedAt = time.Unix(f.IssuedAt.Unix(), 0).UTC()
	f.PublicKey = append(ed25519.PublicKey(nil), f.PublicKey...)
	body, err := f.body()
	if err != nil {
		return HomeRecord{}, fmt.Errorf("signing home record: %w", err)
	}
	if own := identity.CrowIDFromPublicKey(rootPriv.Public().(ed25519.PublicKey)); f.CrowID != own {
		return HomeRecord{}, fmt.Errorf("signing home record: %w: crow id %q, the root key's is %q", ErrWrongCrow, f.CrowID, own)
	}
	r := HomeRecord{HomeFields: f}
	copy(r.Signature[:], ed25519.Sign(rootPriv, signed(homeDomain, body)))
	return r, nil
}

func (f HomeFields) body() ([]byte, error) {
	for _, err := range []error{checkID("crow id", f.CrowID), checkID("instance id", f.InstanceID),
		checkKey("instance public key", f.PublicKey), checkTime("issued_at", f.IssuedAt)} {
		if err != nil {
			return nil, err
		}
	}
	if f.Epoch == 0 || f.Epoch > maxCounter {
		return nil, fmt.Errorf("%w: epoch %d, want 1 to %d", ErrMalformed, f.Epoch, uint64(maxCounter))
	}
	if f.Base > maxCounter {
		return nil, fmt.Errorf("%w: base %d, want at most %d", ErrMalformed, f.Base, uint64(maxCounter))
	}
	e := make(enc, 0, 1+2+len(f.CrowID)+2+len(f.InstanceID)+32+8+8+8+ed25519.SignatureSize)
	e.u8(Version)
	e.str(f.CrowID)
	e.str(f.InstanceID)
	e.raw(f.PublicKey)
	e = binary.BigEndian.AppendUint64(e, f.Epoch)
	e = binary.BigEndian.AppendUint64(e, f.Base)
	e.unix(f.IssuedAt)
	return e, nil
}

// Encode returns the binary encoding of r.
func (r HomeRecord) Encode() ([]byte, error) {
	b, err := r.body()
	if err != nil {
		return nil, err
	}
	return append(b, r.Signature[:]...), nil
}

// DecodeHomeRecord parses the binary encoding of a home record (no
// signature check).
func DecodeHomeRecord(b []byte) (HomeRecord, error) {
	d := dec{b: b}
	d.version("home record")
	var r HomeRecord
	r.CrowID = d.str("crow id")
	r.InstanceID = d.str("instance id")
	r.PublicKey = d.key("instance public key")
	if v := d.fixed("epoch", 8); v != nil {
		r.Epoch = binary.BigEndian.Uint64(v)
	}
	if v := d.fixed("base", 8); v != nil {
		r.Base = binary.BigEndian.Uint64(v)
	}
	r.IssuedAt = d.unix("issued_at")
	copy(r.Signature[:], d.fixed("signature", ed25519.SignatureSize))
	if err := d.end(); err != nil {
		return HomeRecord{}, fmt.Errorf("decoding home record: %w", err)
	}
	if _, err := r.body(); err != nil {
		return HomeRecord{}, fmt.Errorf("decoding home record: %w", err)
	}
	return r, nil
}

// VerifyHome checks r against crow crowID and its root key rootPub, in
// Verify's order and with its errors.
func VerifyHome(r HomeRecord, crowID string, rootPub ed25519.PublicKey) error {
	if err := checkRoot(crowID, rootPub); err != nil {
		return fmt.Errorf("verifying home record: %w", err)
	}
	body, err := r.body()
	if err != nil {
		return fmt.Errorf("verifying home record: %w", err)
	}
	if r.CrowID != crowID {
		return fmt.Errorf("verifying home record: %w: record of %q, want %q", ErrWrongCrow, r.CrowID, crowID)
	}
	if !ed25519.Verify(rootPub, signed(homeDomain, body), r.Signature[:]) {
		return fmt.Errorf("verifying home record of instance %q: %w", r.InstanceID, ErrBadSignature)
	}
	return nil
}

// String returns the text form, "crowhome1." + base64url; "" for a record
// that cannot be encoded.
func (r HomeRecord) String() string {
	b, err := r.Encode()
	if err != nil {
		return ""
	}
	return toText(homePrefix, b)
}

// ParseHomeRecord parses the text form of a home record (no signature
// check).
func ParseHomeRecord(s string) (HomeRecord, error) {
	b, err := fromText(homePrefix, s)
	if err != nil {
		return HomeRecord{}, fmt.Errorf("parsing home record: %w", err)
	}
	return DecodeHomeRecord(b)
}

// MarshalText implements encoding.TextMarshaler with the text form.
func (r HomeRecord) MarshalText() ([]byte, error) {
	b, err := r.Encode()
	if err != nil {
		return nil, err
	}
	return []byte(toText(homePrefix, b)), nil
}

// UnmarshalText implements encoding.TextUnmarshaler (no signature check).
func (r *HomeRecord) UnmarshalText(text []byte) error {
	v, err := ParseHomeRecord(string(text))
	if err != nil {
		return err
	}
	*r = v
	return nil
}
