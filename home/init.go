package home

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"unicode"

	"github.com/crow-sync/crow/identity"
)

// Roles of an instance (SPEC §7).
const (
	RoleHome      = "home"
	RoleSatellite = "satellite"
)

// ErrAlreadyInitialized is returned by Init when the directory already holds
// an identity, an instance id or any other file Init would write. Nothing is
// changed in that case.
var ErrAlreadyInitialized = errors.New("home: already initialised")

// Info describes an initialised instance.
type Info struct {
	InstanceID string            // UUIDv4, from instance-id
	Name       string            // human name, from instance.json
	Role       string            // RoleHome or RoleSatellite
	CrowID     string            // the identity's crow id
	PublicKey  ed25519.PublicKey // this instance's Ed25519 public key
}

// instanceFile is the JSON shape of instance.json.
type instanceFile struct {
	Name string `json:"name"`
	Role string `json:"role"`
}

const apiKeyPrefix = "crow_"

// testFailWrite, when set by a test, is called before each file Init writes;
// an error from it fails that write (fault injection for the rollback path).
var testFailWrite func(path string) error

// Init initialises dir as a new instance of the identity seed: it creates dir
// (0700) if needed and writes identity, instance-id (a fresh UUIDv4),
// instance.json, api-key (a fresh owner key) and api-key.sha256, all 0600.
// Use a new seed and RoleHome for a first machine, an imported seed and
// RoleSatellite to join an identity.
//
// Init refuses with an error wrapping ErrAlreadyInitialized if any of those
// files exists, and then changes nothing. If a write fails midway it removes
// what this call created (and dir, if it created it).
func Init(dir, name string, seed identity.Seed, role string) (Info, error) {
	return initHome(dir, name, seed, role, rand.Reader)
}

func initHome(dir, name string, seed identity.Seed, role string, rnd io.Reader) (info Info, err error) {
	if err := checkName(name); err != nil {
		return Info{}, err
	}
	if role != RoleHome && role != RoleSatellite {
		return Info{}, fmt.Errorf("invalid role %q: want %q or %q", role, RoleHome, RoleSatellite)
	}
	// All randomness first: nothing touches the disk until it succeeded.
	id, err := newUUID(rnd)
	if err != nil {
		return Info{}, err
	}
	key, err := newAPIKey(rnd)
	if err != nil {
		return Info{}, err
	}
	inst, err := json.MarshalIndent(instanceFile{Name: name, Role: role}, "", "  ")
	if err != nil {
		return Info{}, fmt.Errorf("encoding %s: %w", InstanceName, err)
	}
	sum := sha256.Sum256([]byte(key))
	p := PathsOf(dir)
	files := []struct {
		path string
		data []byte
	}{
		// instance-id first: its O_EXCL create is the lock against a
		// concurrent Init of the same directory.
		{p.InstanceIDFile(), []byte(id + "\n")},
		{p.IdentityFile(), []byte(hex.EncodeToString(seed[:]) + "\n")},
		{p.InstanceFile(), append(inst, '\n')},
		{p.APIKeyHashFile(), []byte(hex.EncodeToString(sum[:]) + "\n")},
		{p.APIKeyFile(), []byte(key)},
	}

	// Check everything before writing anything.
	dirExisted := true
	if st, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		dirExisted = false
	} else if err != nil {
		return Info{}, fmt.Errorf("checking %s: %w", dir, err)
	} else if !st.IsDir() {
		return Info{}, fmt.Errorf("%s exists and is not a directory", dir)
	}
	if dirExisted {
		for _, f := range files {
			if _, err := os.Lstat(f.path); err == nil {
				return Info{}, fmt.Errorf("%w: %s exists (remove the directory to start over)", ErrAlreadyInitialized, f.path)
			} else if !errors.Is(err, fs.ErrNotExist) {
				return Info{}, fmt.Errorf("checking %s: %w", f.path, err)
			}
		}
	}

	var created []string
	defer func() {
		if err == nil {
			return
		}
		for i := len(created) - 1; i >= 0; i-- {
			os.Remove(created[i])
		}
		if !dirExisted {
			os.Remove(dir)
		} else if len(created) > 0 {
			syncDir(dir)
		}
	}()
	if !dirExisted {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return Info{}, fmt.Errorf("creating %s: %w", dir, err)
		}
	}
	if err := injectFault(files[0].path); err != nil {
		return Info{}, err
	}
	if err := createExclusive(files[0].path, files[0].data, 0o600); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return Info{}, fmt.Errorf("%w: %s exists", ErrAlreadyInitialized, files[0].path)
		}
		return Info{}, err
	}
	created = append(created, files[0].path)
	for _, f := range files[1:] {
		if err := injectFault(f.path); err != nil {
			return Info{}, err
		}
		if err := writeExclusive(f.path, f.data, 0o600); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return Info{}, fmt.Errorf("%w: %s exists", ErrAlreadyInitialized, f.path)
			}
			return Info{}, err
		}
		created = append(created, f.path)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return Info{}, fmt.Errorf("setting mode of %s: %w", dir, err)
	}
	if err := syncDir(dir); err != nil {
		return Info{}, err
	}
	return Info{
		InstanceID: id,
		Name:       name,
		Role:       role,
		CrowID:     seed.CrowID(),
		PublicKey:  seed.InstancePublicKey(id),
	}, nil
}

func injectFault(path string) error {
	if testFailWrite == nil {
		return nil
	}
	return testFailWrite(path)
}

// checkName accepts 1–64 printable characters without leading or trailing
// space.
func checkName(name string) error {
	if name == "" {
		return errors.New("instance name is empty")
	}
	if len(name) > 64 {
		return fmt.Errorf("instance name is %d bytes long, at most 64", len(name))
	}
	if strings.TrimSpace(name) != name {
		return fmt.Errorf("instance name %q has leading or trailing space", name)
	}
	for _, r := range name {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("instance name %q has a non-printable character", name)
		}
	}
	return nil
}

// newUUID returns a random (version 4) UUID in canonical form.
func newUUID(rnd io.Reader) (string, error) {
	var b [16]byte
	if _, err := io.ReadFull(rnd, b[:]); err != nil {
		return "", fmt.Errorf("generating instance id: %w", err)
	}
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32], nil
}

// newAPIKey returns "crow_" + base64url(32 random bytes).
func newAPIKey(rnd io.Reader) (string, error) {
	var b [32]byte
	if _, err := io.ReadFull(rnd, b[:]); err != nil {
		return "", fmt.Errorf("generating API key: %w", err)
	}
	return apiKeyPrefix + base64.RawURLEncoding.EncodeToString(b[:]), nil
}
