package home

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"strings"
	"sync"

	"github.com/crow-sync/crow/identity"
	"github.com/crow-sync/crow/identity/member"
)

// Errors returned by Load.
var (
	// ErrNotInitialized means the directory holds no identity and no
	// instance id: run `crow init`.
	ErrNotInitialized = errors.New("home: not initialised (run 'crow init')")

	// ErrCorrupt means a file of an initialised directory is missing or
	// malformed (for example an init interrupted by a crash).
	ErrCorrupt = errors.New("home: corrupt data directory")

	// ErrInsecurePermissions means a secret file (identity, api-key) is
	// readable or writable by group or others.
	ErrInsecurePermissions = errors.New("home: insecure file permissions")
)

// Home is a loaded data directory. Its methods are safe for concurrent use.
//
// A directory has one of three layouts (see the package documentation):
// the master seed in clear, the seed locked (encrypted; identity.pub holds
// the public data), or a satellite joined by invitation (no seed: its own
// instance.key, identity.pub and certificate).
type Home struct {
	Paths
	Info

	seed   identity.Seed
	locked bool               // the identity file holds an encrypted blob; seed is zero
	blob   []byte             // the armored blob while locked
	joined bool               // no identity file: ownKey is the instance key, seed is zero
	ownKey ed25519.PrivateKey // from instance.key; nil unless joined
	public Public

	mu      sync.Mutex
	apiKey  string             // guarded by mu; "" if the api-key file is absent
	keyHash [32]byte           // guarded by mu
	cert    member.Certificate // guarded by mu; verified under the root key
	hasCert bool               // guarded by mu; cert was loaded or issued
	join    *Enrollment        // guarded by mu; join.json, nil if absent
}

// Load reads an initialised data directory, in any of its three layouts. It
// returns errors wrapping ErrNotInitialized, ErrCorrupt or
// ErrInsecurePermissions, or the underlying fs error (errors.Is(err,
// fs.ErrPermission) when a file cannot be read).
//
// A certificate file, where present, must verify under the crow's root key
// (else ErrCorrupt); one that no longer matches the instance's name or role
// is kept for EnsureCertificate to re-issue. A joined satellite must have a
// certificate for its own instance id and key.
func Load(dir string) (*Home, error) {
	p := PathsOf(dir)
	if st, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s does not exist", ErrNotInitialized, dir)
	} else if err != nil {
		return nil, fmt.Errorf("opening %s: %w", dir, err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("%w: %s is not a directory", ErrCorrupt, dir)
	}
	seedText, seedErr := readSecret(p.IdentityFile())
	keyText, keyErr := readSecret(p.InstanceKeyFile())
	idText, idErr := os.ReadFile(p.InstanceIDFile())
	noSeed, noKey := errors.Is(seedErr, fs.ErrNotExist), errors.Is(keyErr, fs.ErrNotExist)
	if noSeed && noKey && errors.Is(idErr, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: no %s in %s", ErrNotInitialized, IdentityName, dir)
	}
	for _, e := range []struct {
		name string
		err  error
	}{{IdentityName, seedErr}, {InstanceKeyName, keyErr}, {InstanceIDName, idErr}} {
		if e.err != nil && !errors.Is(e.err, fs.ErrNotExist) {
			return nil, fmt.Errorf("reading %s: %w", e.name, e.err)
		}
	}
	switch {
	case noSeed && noKey:
		return nil, fmt.Errorf("%w: neither %s nor %s is in %s (incomplete init?)", ErrCorrupt, IdentityName, InstanceKeyName, dir)
	case !noSeed && !noKey:
		return nil, fmt.Errorf("%w: %s holds both %s and %s; an instance has one or the other", ErrCorrupt, dir, IdentityName, InstanceKeyName)
	case errors.Is(idErr, fs.ErrNotExist):
		return nil, fmt.Errorf("%w: %s is missing from %s (incomplete init?)", ErrCorrupt, InstanceIDName, dir)
	}

	id := strings.TrimSpace(string(idText))
	if !validUUID(id) {
		return nil, fmt.Errorf("%w: %s does not hold a UUID", ErrCorrupt, p.InstanceIDFile())
	}
	h := &Home{Paths: p, joined: noSeed}
	switch {
	case h.joined:
		var err error
		if h.ownKey, err = loadInstanceKey(p, keyText); err != nil {
			return nil, err
		}
		if h.public, err = loadPublic(p, id, true); err != nil {
			return nil, err
		}
		if h.public.InstancePublicKey != hex.EncodeToString(h.ownKey.Public().(ed25519.PublicKey)) {
			return nil, fmt.Errorf("%w: %s: instance_public_key is not the key of %s", ErrCorrupt, p.PublicFile(), p.InstanceKeyFile())
		}
	case isLockedText(seedText):
		h.locked, h.blob = true, trimBlob(seedText)
		var err error
		if h.public, err = loadPublic(p, id, false); err != nil {
			return nil, err
		}
	default:
		raw, err := hex.DecodeString(strings.TrimSpace(string(seedText)))
		if err != nil {
			return nil, fmt.Errorf("%w: %s is not hex", ErrCorrupt, p.IdentityFile())
		}
		if h.seed, err = identity.SeedFromBytes(raw); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, p.IdentityFile(), err)
		}
		h.public = publicOf(h.seed, id)
	}
	instPub, _ := hex.DecodeString(h.public.InstancePublicKey) // checked by loadPublic

	instText, err := os.ReadFile(p.InstanceFile())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s is missing", ErrCorrupt, p.InstanceFile())
	} else if err != nil {
		return nil, fmt.Errorf("reading %s: %w", InstanceName, err)
	}
	var inst instanceFile
	if err := json.Unmarshal(instText, &inst); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, p.InstanceFile(), err)
	}
	if err := checkName(inst.Name); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, p.InstanceFile(), err)
	}
	if inst.Role != RoleHome && inst.Role != RoleSatellite {
		return nil, fmt.Errorf("%w: %s: invalid role %q", ErrCorrupt, p.InstanceFile(), inst.Role)
	}
	if h.joined && inst.Role != RoleSatellite {
		return nil, fmt.Errorf("%w: %s: role %q, but an instance without the master seed is a %s", ErrCorrupt, p.InstanceFile(), inst.Role, RoleSatellite)
	}
	h.Info = Info{
		InstanceID: id,
		Name:       inst.Name,
		Role:       inst.Role,
		CrowID:     h.public.CrowID,
		PublicKey:  ed25519.PublicKey(instPub),
	}

	if h.cert, h.hasCert, err = loadCertificate(p, h.RootPublicKey()); err != nil {
		return nil, err
	}
	if h.joined && !h.hasCert {
		return nil, fmt.Errorf("%w: this instance joined by invitation but %s is missing (restore it from a backup)", ErrCorrupt, p.CertificateFile())
	}
	if h.joined && !h.certifiesKey(h.cert) {
		return nil, fmt.Errorf("%w: %s is not for this instance (id %s and its key)", ErrCorrupt, p.CertificateFile(), id)
	}
	if h.join, err = loadEnrollment(p); err != nil {
		return nil, err
	}
	if err := h.loadAPIKey(); err != nil {
		return nil, err
	}
	return h, nil
}

// loadAPIKey reads api-key (optional) and api-key.sha256. The hash of the
// plaintext wins when both exist: the files are written key-first, so after
// an interrupted rotation the plaintext is the newer of the two.
func (h *Home) loadAPIKey() error {
	keyText, keyErr := readSecret(h.APIKeyFile())
	if keyErr == nil {
		key := strings.TrimSpace(string(keyText))
		if key == "" {
			return fmt.Errorf("%w: %s is empty", ErrCorrupt, h.APIKeyFile())
		}
		h.apiKey, h.keyHash = key, sha256.Sum256([]byte(key))
		return nil
	}
	if !errors.Is(keyErr, fs.ErrNotExist) {
		return fmt.Errorf("reading %s: %w", APIKeyName, keyErr)
	}
	hashText, err := os.ReadFile(h.APIKeyHashFile())
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: neither %s nor %s exists", ErrCorrupt, APIKeyName, APIKeyHashName)
	} else if err != nil {
		return fmt.Errorf("reading %s: %w", APIKeyHashName, err)
	}
	sum, err := hex.DecodeString(strings.TrimSpace(string(hashText)))
	if err != nil || len(sum) != sha256.Size {
		return fmt.Errorf("%w: %s is not a hex SHA-256", ErrCorrupt, h.APIKeyHashFile())
	}
	h.keyHash = [32]byte(sum)
	return nil
}

// readSecret reads a file that must not be accessible to group or others.
func readSecret(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if runtime.GOOS != "windows" && st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s has mode %04o, want 0600 (chmod 600 %s)", ErrInsecurePermissions, path, st.Mode().Perm(), path)
	}
	return io.ReadAll(f)
}

func validUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !strings.ContainsRune("0123456789abcdef", c) {
				return false
			}
		}
	}
	return true
}

// HasSeed reports whether the directory holds the master seed, in clear or
// locked: false on a satellite that joined by invitation.
func (h *Home) HasSeed() bool { return !h.joined }

// Seed returns the master seed. It panics on a joined satellite (HasSeed is
// false) and on a locked home (Locked): call Decrypt first.
func (h *Home) Seed() identity.Seed {
	h.mustHaveSeed()
	return h.seed
}

// InstanceKey returns this instance's Ed25519 private key: instance.key on a
// joined satellite, else derived from the seed. It panics on a locked home
// (Locked): call Decrypt first.
func (h *Home) InstanceKey() ed25519.PrivateKey {
	if h.joined {
		return append(ed25519.PrivateKey(nil), h.ownKey...)
	}
	h.mustHaveSeed()
	return h.seed.InstanceKey(h.InstanceID)
}

func (h *Home) mustHaveSeed() {
	if h.joined {
		panic("home: the master seed was used on an instance that holds none (it joined by invitation; check Home.HasSeed)")
	}
	if h.locked {
		panic("home: the seed of a locked identity was used before Home.Decrypt")
	}
}

// APIKey returns the plaintext owner API key, or "" if the api-key file was
// removed.
func (h *Home) APIKey() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.apiKey
}

// APIKeyHash returns the SHA-256 of the owner API key, which the gateway
// checks bearer tokens against.
func (h *Home) APIKeyHash() [32]byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.keyHash
}

// RotateAPIKey replaces the owner API key with a fresh one and returns it.
// It writes api-key, then api-key.sha256, each atomically; Load resolves an
// interruption between the two in favour of the new key. A running gateway
// keeps the old hash until told (gateway.KeyChecker.SetHash).
func (h *Home) RotateAPIKey() (string, error) {
	key, err := newAPIKey(rand.Reader)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(key))
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := AtomicWrite(h.APIKeyFile(), []byte(key), 0o600); err != nil {
		return "", fmt.Errorf("rotating API key: %w", err)
	}
	if err := AtomicWrite(h.APIKeyHashFile(), []byte(hex.EncodeToString(sum[:])+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("rotating API key: %w", err)
	}
	h.apiKey, h.keyHash = key, sum
	return key, nil
}
