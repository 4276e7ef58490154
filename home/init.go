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
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/crow-sync/crow/identity"
)

// Roles of an instance (SPEC §7).
const (
	RoleHome      = "home"
	RoleSatellite = "satellite"
)

// ErrAlreadyInitialized is returned by Init, InitJoined and CheckInitable
// when the directory already holds any file of an initialised directory
// (see initFiles). Nothing is changed in that case.
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

// initFiles are the files of an initialised directory, in any layout. Init
// and InitJoined refuse a directory that holds any of them.
var initFiles = []string{
	InstanceIDName, IdentityName, InstanceKeyName, PublicName, CertificateName,
	InstanceName, APIKeyHashName, APIKeyName, JoinName,
}

// testFailWrite, when set by a test, is called before each file Init or
// InitJoined writes; an error from it fails that write (fault injection for
// the rollback path).
var testFailWrite func(path string) error

// Init initialises dir as a new instance of the identity seed: it creates dir
// (0700) if needed and writes identity, instance-id (a fresh UUIDv4),
// certificate (issued now by the seed's root key for this instance, its
// name and role), instance.json, api-key (a fresh owner key) and
// api-key.sha256, all 0600. Use a new seed and RoleHome for a first machine,
// an imported seed and RoleSatellite for a satellite that holds the seed
// (`crow init --import`); a satellite enrolled by invitation is InitJoined.
//
// Init refuses with an error wrapping ErrAlreadyInitialized if any file of
// an initialised directory exists, and then changes nothing. If a write
// fails midway it removes what this call created (and dir, if it created
// it).
func Init(dir, name string, seed identity.Seed, role string) (Info, error) {
	return initHome(dir, name, seed, role, rand.Reader, time.Now())
}

func initHome(dir, name string, seed identity.Seed, role string, rnd io.Reader, now time.Time) (info Info, err error) {
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
	inst, err := encodeInstance(name, role)
	if err != nil {
		return Info{}, err
	}
	cert, err := issueCertificate(seed, id, name, role, now)
	if err != nil {
		return Info{}, err
	}
	p := PathsOf(dir)
	files := []layoutFile{
		// instance-id first: its O_EXCL create is the lock against a
		// concurrent Init of the same directory.
		{p.InstanceIDFile(), []byte(id + "\n")},
		{p.IdentityFile(), []byte(hex.EncodeToString(seed[:]) + "\n")},
		{p.CertificateFile(), certificateText(cert)},
		{p.InstanceFile(), inst},
	}
	files = append(files, apiKeyFiles(p, key)...)
	if err := createLayout(dir, files); err != nil {
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

func encodeInstance(name, role string) ([]byte, error) {
	inst, err := json.MarshalIndent(instanceFile{Name: name, Role: role}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", InstanceName, err)
	}
	return append(inst, '\n'), nil
}

// apiKeyFiles are api-key.sha256 and api-key for the owner key key.
func apiKeyFiles(p Paths, key string) []layoutFile {
	sum := sha256.Sum256([]byte(key))
	return []layoutFile{
		{p.APIKeyHashFile(), []byte(hex.EncodeToString(sum[:]) + "\n")},
		{p.APIKeyFile(), []byte(key)},
	}
}

// layoutFile is one file createLayout writes, mode 0600.
type layoutFile struct {
	path string
	data []byte
}

// CheckInitable reports whether Init or InitJoined could initialise dir: it
// returns an error wrapping ErrAlreadyInitialized if dir holds any file of
// an initialised directory, and an error if dir is not a directory or
// cannot be created or written. It changes nothing. `crow init --join` calls
// it before it spends the invite.
func CheckInitable(dir string) error {
	_, err := checkInitable(dir)
	return err
}

// checkInitable is CheckInitable, and reports whether dir exists.
func checkInitable(dir string) (dirExisted bool, err error) {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// The nearest existing ancestor must let us create the rest.
		parent := filepath.Dir(dir)
		for {
			st, err := os.Stat(parent)
			if err == nil {
				if !st.IsDir() {
					return false, fmt.Errorf("cannot create %s: %s is not a directory", dir, parent)
				}
				break
			}
			if !errors.Is(err, fs.ErrNotExist) || filepath.Dir(parent) == parent {
				return false, fmt.Errorf("checking %s: %w", parent, err)
			}
			parent = filepath.Dir(parent)
		}
		if err := writable(parent); err != nil {
			return false, fmt.Errorf("cannot create %s: %w", dir, err)
		}
		return false, nil
	case err != nil:
		return false, fmt.Errorf("checking %s: %w", dir, err)
	case !st.IsDir():
		return false, fmt.Errorf("%s exists and is not a directory", dir)
	}
	for _, name := range initFiles {
		path := filepath.Join(dir, name)
		if _, err := os.Lstat(path); err == nil {
			return true, fmt.Errorf("%w: %s exists (remove the directory to start over)", ErrAlreadyInitialized, path)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return true, fmt.Errorf("checking %s: %w", path, err)
		}
	}
	if err := writable(dir); err != nil {
		return true, fmt.Errorf("cannot initialise %s: %w", dir, err)
	}
	return true, nil
}

// writable checks that files can be created in dir.
func writable(dir string) error {
	if err := syscall.Access(dir, 0x2|0x1); err != nil { // W_OK|X_OK
		return &fs.PathError{Op: "access", Path: dir, Err: err}
	}
	return nil
}

// createLayout writes files into dir, all or nothing: it refuses (changing
// nothing) what checkInitable refuses, creates dir (0700) if needed, creates
// files[0] with O_EXCL (the lock against a concurrent init of the same
// directory) and the others exclusively, each 0600, and on any failure
// removes what it created, and dir if it created it.
func createLayout(dir string, files []layoutFile) (err error) {
	dirExisted, err := checkInitable(dir)
	if err != nil {
		return err
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
			return fmt.Errorf("creating %s: %w", dir, err)
		}
	}
	for i, f := range files {
		if err := injectFault(f.path); err != nil {
			return err
		}
		write := writeExclusive
		if i == 0 {
			write = createExclusive
		}
		if err := write(f.path, f.data, 0o600); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("%w: %s exists", ErrAlreadyInitialized, f.path)
			}
			return err
		}
		created = append(created, f.path)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("setting mode of %s: %w", dir, err)
	}
	return syncDir(dir)
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

// NewInstanceID returns a fresh instance id (a random UUIDv4), as Init makes
// one; `crow init --join` generates it before home certifies it.
func NewInstanceID() (string, error) { return newUUID(rand.Reader) }
