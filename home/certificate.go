package home

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/crow-sync/crow/identity"
	"github.com/crow-sync/crow/identity/member"
)

// ErrNoSeed is returned (wrapped) by what needs the master seed on an
// instance that joined by invitation and so never had it: LockIdentity,
// UnlockIdentity, Home.Decrypt, and Home.EnsureCertificate when the
// certificate would have to be re-issued.
var ErrNoSeed = errors.New("home: this instance holds no master seed (it joined by invitation)")

// issueCertificate issues the membership certificate of instance id, named
// name with role role, signed by seed's root key.
func issueCertificate(seed identity.Seed, id, name, role string, now time.Time) (member.Certificate, error) {
	c, err := member.Issue(seed.RootKey(), member.Fields{
		CrowID:     seed.CrowID(),
		InstanceID: id,
		PublicKey:  seed.InstancePublicKey(id),
		Role:       member.Role(role),
		Name:       name,
		IssuedAt:   now,
	})
	if err != nil {
		return member.Certificate{}, fmt.Errorf("issuing the certificate of %s: %w", id, err)
	}
	return c, nil
}

// certificateText is the content of the certificate file.
func certificateText(c member.Certificate) []byte { return []byte(c.String() + "\n") }

// loadCertificate reads the certificate file of p, if any, and verifies it
// under the crow's root key rootPub (for that key's crow id). A missing file
// is (zero, false, nil); a malformed one, or one that does not verify, is
// ErrCorrupt.
func loadCertificate(p Paths, rootPub ed25519.PublicKey) (member.Certificate, bool, error) {
	text, err := os.ReadFile(p.CertificateFile())
	if errors.Is(err, fs.ErrNotExist) {
		return member.Certificate{}, false, nil
	} else if err != nil {
		return member.Certificate{}, false, fmt.Errorf("reading %s: %w", CertificateName, err)
	}
	c, err := member.ParseCertificate(strings.TrimSpace(string(text)))
	if err != nil {
		return member.Certificate{}, false, fmt.Errorf("%w: %s: %w", ErrCorrupt, p.CertificateFile(), err)
	}
	if err := member.Verify(c, identity.CrowIDFromPublicKey(rootPub), rootPub); err != nil {
		return member.Certificate{}, false, fmt.Errorf("%w: %s: %w", ErrCorrupt, p.CertificateFile(), err)
	}
	return c, true, nil
}

// certifiesKey reports whether c is for this instance's crow, id and key.
func (h *Home) certifiesKey(c member.Certificate) bool {
	return c.CrowID == h.CrowID && c.InstanceID == h.InstanceID && c.PublicKey.Equal(h.PublicKey)
}

// certifies reports whether c is this instance's current certificate: its
// id, key, name and role.
func (h *Home) certifies(c member.Certificate) bool {
	return h.certifiesKey(c) && c.Name == h.Name && string(c.Role) == h.Role
}

// Certificate returns this instance's membership certificate, as loaded or
// issued by EnsureCertificate. ok is false when there is none, or when the
// one on disk no longer matches the instance (its name or role was
// changed): EnsureCertificate re-issues it where the seed is at hand.
func (h *Home) Certificate() (c member.Certificate, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.hasCert || !h.certifies(h.cert) {
		return member.Certificate{}, false
	}
	return h.cert, true
}

// EnsureCertificate returns this instance's membership certificate. If the
// directory has none (it was initialised before certificates existed) or
// the one it has no longer matches the instance (name, role, id or key),
// it issues one with the seed's root key (IssuedAt now; role h.Role, name
// h.Name), writes the certificate file atomically and returns it; a second
// call returns the same certificate and writes nothing.
//
// Without a usable seed it cannot issue: it returns an error wrapping
// ErrLocked on a locked home not yet decrypted, ErrNoSeed on a joined
// satellite whose certificate no longer matches, and ErrCorrupt on a joined
// satellite without a certificate (which Load already refuses).
func (h *Home) EnsureCertificate(now time.Time) (member.Certificate, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.hasCert && h.certifies(h.cert) {
		return h.cert, nil
	}
	what := "has no certificate"
	switch {
	case h.hasCert && !h.certifiesKey(h.cert):
		what = fmt.Sprintf("has a certificate for another instance or key (%s)", h.cert.InstanceID)
	case h.hasCert:
		what = fmt.Sprintf("has a certificate for %q as %s, not %q as %s", h.cert.Name, h.cert.Role, h.Name, h.Role)
	}
	switch {
	case h.joined && !h.hasCert:
		return member.Certificate{}, fmt.Errorf("%w: %s %s", ErrCorrupt, h.Root, what)
	case h.joined:
		return member.Certificate{}, fmt.Errorf("%s %s and cannot issue one: %w", h.Root, what, ErrNoSeed)
	case h.locked:
		return member.Certificate{}, fmt.Errorf("%s %s and cannot issue one before Home.Decrypt: %w", h.Root, what, ErrLocked)
	}
	c, err := issueCertificate(h.seed, h.InstanceID, h.Name, h.Role, now)
	if err != nil {
		return member.Certificate{}, err
	}
	if err := AtomicWrite(h.CertificateFile(), certificateText(c), 0o600); err != nil {
		return member.Certificate{}, fmt.Errorf("writing the certificate: %w", err)
	}
	h.cert, h.hasCert = c, true
	return c, nil
}
