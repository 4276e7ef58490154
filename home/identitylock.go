package home

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/crow-sync/crow/identity"
)

// Errors of the locked identity (see LockIdentity).
var (
	// ErrLocked is returned by LockIdentity when the identity is already
	// locked, and wrapped by the daemon's start when Home.Decrypt was not
	// called on a locked home.
	ErrLocked = errors.New("home: the identity is locked (encrypted with a passphrase)")

	// ErrNotLocked is returned by UnlockIdentity and Home.Decrypt when the
	// identity is stored in clear.
	ErrNotLocked = errors.New("home: the identity is not locked")
)

// PublicName is the file that holds the public data of the identity, in
// clear, where the seed is not: on a locked home (so that commands which only
// show or check the identity work without the passphrase; it exists only
// while the identity is locked) and on a satellite that joined by invitation
// (written by InitJoined, without anchor_address).
const PublicName = "identity.pub"

// PublicFile is the path of identity.pub.
func (p Paths) PublicFile() string { return p.join(PublicName) }

// publicFormat tags identity.pub, version 1 (frozen).
const publicFormat = "crow-identity-pub-v1"

// Public is the public data of an identity: what `crow identity show`
// prints. It never holds a secret.
type Public struct {
	CrowID            string `json:"crow_id"`
	RootPublicKey     string `json:"root_public_key"`          // lowercase hex Ed25519
	AnchorAddress     string `json:"anchor_address,omitempty"` // 0x-prefixed, EIP-55; "" without the seed (joined satellite)
	InstanceID        string `json:"instance_id"`
	InstancePublicKey string `json:"instance_public_key"` // lowercase hex Ed25519
}

// publicFile is the JSON shape of identity.pub.
type publicFile struct {
	Format string `json:"format"`
	Public
}

func publicOf(seed identity.Seed, instanceID string) Public {
	return Public{
		CrowID:            seed.CrowID(),
		RootPublicKey:     hex.EncodeToString(seed.RootPublicKey()),
		AnchorAddress:     seed.AnchorAddress().Hex(),
		InstanceID:        instanceID,
		InstancePublicKey: hex.EncodeToString(seed.InstancePublicKey(instanceID)),
	}
}

// LockedAtRest reports whether the identity file of p holds an encrypted
// blob (the seed is locked at rest, whether or not a running daemon
// decrypted it); false when there is none or it cannot be read.
func (p Paths) LockedAtRest() bool {
	b, err := os.ReadFile(p.IdentityFile())
	return err == nil && isLockedText(b)
}

// isLockedText reports whether the identity file's content is an encrypted
// blob rather than the hex seed.
func isLockedText(text []byte) bool {
	return bytes.HasPrefix(bytes.TrimSpace(text), []byte(identity.BlobPrefix))
}

// encodePublic is the content of identity.pub for pub.
func encodePublic(pub Public) ([]byte, error) {
	b, err := json.MarshalIndent(publicFile{Format: publicFormat, Public: pub}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", PublicName, err)
	}
	return append(b, '\n'), nil
}

// loadPublic reads identity.pub of instance id: of a locked identity, or,
// if joined, of a satellite that joined by invitation (which has no anchor
// address, and whose crow id must be its root key's: nothing else vouches
// for it).
func loadPublic(p Paths, id string, joined bool) (Public, error) {
	text, err := os.ReadFile(p.PublicFile())
	if errors.Is(err, fs.ErrNotExist) && joined {
		return Public{}, fmt.Errorf("%w: this instance joined by invitation but %s is missing (restore it from a backup)", ErrCorrupt, p.PublicFile())
	} else if errors.Is(err, fs.ErrNotExist) {
		return Public{}, fmt.Errorf("%w: the identity is locked but %s is missing (restore it, or run 'crow identity unlock')", ErrCorrupt, p.PublicFile())
	} else if err != nil {
		return Public{}, fmt.Errorf("reading %s: %w", PublicName, err)
	}
	var pf publicFile
	if err := json.Unmarshal(text, &pf); err != nil {
		return Public{}, fmt.Errorf("%w: %s: %w", ErrCorrupt, p.PublicFile(), err)
	}
	if pf.Format != publicFormat {
		return Public{}, fmt.Errorf("%w: %s: unknown format %q", ErrCorrupt, p.PublicFile(), pf.Format)
	}
	if pf.InstanceID != id {
		return Public{}, fmt.Errorf("%w: %s is for instance %s, not %s", ErrCorrupt, p.PublicFile(), pf.InstanceID, id)
	}
	if k, err := hex.DecodeString(pf.InstancePublicKey); err != nil || len(k) != 32 {
		return Public{}, fmt.Errorf("%w: %s: bad instance_public_key", ErrCorrupt, p.PublicFile())
	}
	root, err := hex.DecodeString(pf.RootPublicKey)
	if err != nil || len(root) != 32 {
		return Public{}, fmt.Errorf("%w: %s: bad root_public_key", ErrCorrupt, p.PublicFile())
	}
	if pf.CrowID == "" || (!joined && pf.AnchorAddress == "") {
		return Public{}, fmt.Errorf("%w: %s: incomplete", ErrCorrupt, p.PublicFile())
	}
	if joined && pf.CrowID != identity.CrowIDFromPublicKey(root) {
		return Public{}, fmt.Errorf("%w: %s: crow_id is not the root key's", ErrCorrupt, p.PublicFile())
	}
	return pf.Public, nil
}

// Locked reports whether the identity is encrypted at rest and Decrypt has
// not been called: the public data (Info, Public) is available, the seed
// and the instance key are not.
func (h *Home) Locked() bool { return h.locked }

// Public returns the public data of the identity; it needs no passphrase.
// AnchorAddress is "" on a joined satellite.
func (h *Home) Public() Public { return h.public }

// RootPublicKey returns the crow's root public key, in every layout (from
// the seed, or from identity.pub where the seed is locked or absent).
func (h *Home) RootPublicKey() ed25519.PublicKey {
	k, _ := hex.DecodeString(h.public.RootPublicKey) // checked by Load
	return ed25519.PublicKey(k)
}

// Decrypt decrypts a locked identity with passphrase and makes the seed
// available (Seed, InstanceKey). It returns an error wrapping
// identity.ErrBadPassphrase for a wrong passphrase, ErrCorrupt if the blob
// is damaged or does not match identity.pub, and ErrNotLocked on a home
// whose seed is in clear, and an error wrapping both ErrNotLocked and
// ErrNoSeed on a joined satellite. Call it before the Home is shared.
func (h *Home) Decrypt(passphrase []byte) error {
	if h.joined {
		return fmt.Errorf("%w: %w", ErrNotLocked, ErrNoSeed)
	}
	if !h.locked {
		return ErrNotLocked
	}
	seed, err := identity.Import(string(h.blob), passphrase)
	switch {
	case errors.Is(err, identity.ErrBadPassphrase):
		return fmt.Errorf("%s: %w", h.IdentityFile(), identity.ErrBadPassphrase)
	case err != nil:
		return fmt.Errorf("%w: %s: %w", ErrCorrupt, h.IdentityFile(), err)
	}
	if publicOf(seed, h.InstanceID) != h.public {
		return fmt.Errorf("%w: %s does not match %s", ErrCorrupt, h.IdentityFile(), h.PublicFile())
	}
	h.seed, h.locked, h.blob = seed, false, nil
	return nil
}

// LockIdentity encrypts the master seed of dir at rest under passphrase,
// with the format of `crow identity export` (identity.Seed.Export: scrypt
// and XChaCha20-Poly1305), and writes identity.pub, the public data, in
// clear. Order: identity.pub, then identity (each atomically), so that a
// crash leaves either the clear seed (identity.pub is ignored) or the
// complete locked pair. It holds serve.lock meanwhile, so it fails with
// ErrRunning while a daemon serves dir, with ErrLocked if the identity is
// already locked, and with an error wrapping ErrNoSeed on a joined
// satellite.
func LockIdentity(dir string, passphrase []byte) error {
	if len(passphrase) == 0 {
		return identity.ErrEmptyPassphrase
	}
	return rewriteIdentity(dir, func(h *Home) error {
		if h.joined {
			return fmt.Errorf("locking the identity of %s: %w", dir, ErrNoSeed)
		}
		if h.locked {
			return ErrLocked
		}
		blob, err := h.seed.Export(passphrase, nil)
		if err != nil {
			return err
		}
		pub, err := encodePublic(h.public)
		if err != nil {
			return err
		}
		if err := AtomicWrite(h.PublicFile(), pub, 0o600); err != nil {
			return err
		}
		return AtomicWrite(h.IdentityFile(), []byte(blob+"\n"), 0o600)
	})
}

// UnlockIdentity decrypts the locked seed of dir with passphrase and stores
// it in clear again, as Init wrote it; then it removes identity.pub. It
// fails with ErrNotLocked if the seed is in clear, with an error wrapping
// identity.ErrBadPassphrase (changing nothing) for a wrong passphrase, with
// ErrRunning while a daemon serves dir, and with an error wrapping ErrNoSeed
// on a joined satellite.
func UnlockIdentity(dir string, passphrase []byte) error {
	return rewriteIdentity(dir, func(h *Home) error {
		if h.joined {
			return fmt.Errorf("unlocking the identity of %s: %w", dir, ErrNoSeed)
		}
		if err := h.Decrypt(passphrase); err != nil {
			return err
		}
		if err := AtomicWrite(h.IdentityFile(), []byte(hex.EncodeToString(h.seed[:])+"\n"), 0o600); err != nil {
			return err
		}
		if err := os.Remove(h.PublicFile()); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing %s: %w", h.PublicFile(), err)
		}
		return syncDir(dir)
	})
}

func rewriteIdentity(dir string, f func(*Home) error) error {
	p := PathsOf(dir)
	if _, err := Load(dir); err != nil { // report a bad directory before creating serve.lock in it
		return err
	}
	unlock, err := p.Lock()
	if err != nil {
		return err
	}
	defer unlock()
	h, err := Load(dir) // again, under the lock
	if err != nil {
		return err
	}
	return f(h)
}

// trimBlob returns the armored blob of a locked identity file.
func trimBlob(text []byte) []byte { return []byte(strings.TrimSpace(string(text))) }
