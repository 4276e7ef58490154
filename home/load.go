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
type Home struct {
	Paths
	Info

	seed   identity.Seed
	locked bool   // the identity file holds an encrypted blob; seed is zero
	blob   []byte // the armored blob while locked
	public Public

	mu      sync.Mutex
	apiKey  string   // guarded by mu; "" if the api-key file is absent
	keyHash [32]byte // guarded by mu
}

// Load reads an initialised data directory. It returns errors wrapping
// ErrNotInitialized, ErrCorrupt or ErrInsecurePermissions, or the underlying
// fs error (errors.Is(err, fs.ErrPermission) when a file cannot be read).
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
	idText, idErr := os.ReadFile(p.InstanceIDFile())
	if errors.Is(seedErr, fs.ErrNotExist) && errors.Is(idErr, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: no %s in %s", ErrNotInitialized, IdentityName, dir)
	}
	for _, e := range []struct {
		name string
		err  error
	}{{IdentityName, seedErr}, {InstanceIDName, idErr}} {
		if errors.Is(e.err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s is missing from %s (incomplete init?)", ErrCorrupt, e.name, dir)
		} else if e.err != nil {
			return nil, fmt.Errorf("reading %s: %w", e.name, e.err)
		}
	}

	id := strings.TrimSpace(string(idText))
	locked := isLockedText(seedText)
	var seed identity.Seed
	if !locked {
		raw, err := hex.DecodeString(strings.TrimSpace(string(seedText)))
		if err != nil {
			return nil, fmt.Errorf("%w: %s is not hex", ErrCorrupt, p.IdentityFile())
		}
		if seed, err = identity.SeedFromBytes(raw); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, p.IdentityFile(), err)
		}
	}
	if !validUUID(id) {
		return nil, fmt.Errorf("%w: %s does not hold a UUID", ErrCorrupt, p.InstanceIDFile())
	}
	var pub Public
	if locked {
		var err error
		if pub, err = loadPublic(p, id); err != nil {
			return nil, err
		}
	} else {
		pub = publicOf(seed, id)
	}
	instPub, _ := hex.DecodeString(pub.InstancePublicKey) // checked by loadPublic

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

	h := &Home{
		Paths: p,
		Info: Info{
			InstanceID: id,
			Name:       inst.Name,
			Role:       inst.Role,
			CrowID:     pub.CrowID,
			PublicKey:  ed25519.PublicKey(instPub),
		},
		seed:   seed,
		locked: locked,
		public: pub,
	}
	if locked {
		h.blob = trimBlob(seedText)
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

// Seed returns the master seed. It panics on a locked home (Locked): call
// Decrypt first.
func (h *Home) Seed() identity.Seed {
	h.mustBeOpen()
	return h.seed
}

// InstanceKey returns this instance's Ed25519 private key. It panics on a
// locked home (Locked): call Decrypt first.
func (h *Home) InstanceKey() ed25519.PrivateKey {
	h.mustBeOpen()
	return h.seed.InstanceKey(h.InstanceID)
}

func (h *Home) mustBeOpen() {
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
