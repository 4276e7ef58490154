package home

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// This file holds what `crow restore` needs of the layout (package backup
// does the rest): a restore goes into an empty or missing directory, is
// built in a staging directory beside it, and is moved into place only when
// complete.

// ErrNotEmpty is returned (wrapped) by CheckRestorable for a directory that
// holds anything: a restore never mixes with existing files.
var ErrNotEmpty = errors.New("home: the directory is not empty")

// RestoredNames are the files of a data directory a backup carries besides
// the database and the seed: the configuration and the contracts home
// deployed. Everything else is either made anew by the restore (instance
// id, key, certificate, api-key) or local to the machine that wrote it
// (gateway.addr, serve.lock, join.json, instances.json, the index).
var RestoredNames = []string{ConfigName, ChainRPCName, CheckpointName}

// CheckRestorable reports whether a restore may go into dir: dir must be
// missing (its parent writable) or an empty directory. It changes nothing.
func CheckRestorable(dir string) error {
	if _, err := checkInitable(dir); err != nil {
		if errors.Is(err, ErrAlreadyInitialized) {
			return fmt.Errorf("%w: %w", ErrNotEmpty, err)
		}
		return err
	}
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("checking %s: %w", dir, err)
	}
	if len(ents) > 0 {
		return fmt.Errorf("%w: %s holds %s (restore into an empty or missing directory)", ErrNotEmpty, dir, ents[0].Name())
	}
	return nil
}

// NewStaging creates (0700) the directory a restore into dir is built in:
// a hidden sibling of dir, so moving it into place is a rename on the same
// filesystem. The caller removes it (os.RemoveAll) if the restore fails.
func NewStaging(dir string) (string, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	parent := filepath.Dir(filepath.Clean(dir))
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return "", fmt.Errorf("creating %s: %w", parent, err)
	}
	staging := filepath.Join(parent, "."+filepath.Base(dir)+".restore-"+hex.EncodeToString(b[:]))
	if err := os.Mkdir(staging, 0o700); err != nil {
		return "", fmt.Errorf("creating the staging directory: %w", err)
	}
	return staging, nil
}

// CommitStaging moves the complete restore in staging into dir: a rename of
// the directory when dir is missing, else (dir is empty) a rename of each
// entry; then it fsyncs and removes staging. It refuses (changing nothing) if
// dir is no longer empty.
func CommitStaging(staging, dir string) error {
	if err := CheckRestorable(dir); err != nil {
		return err
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.Rename(staging, dir); err != nil {
			return fmt.Errorf("moving the restore into %s: %w", dir, err)
		}
		return syncDir(filepath.Dir(filepath.Clean(dir)))
	}
	ents, err := os.ReadDir(staging)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := os.Rename(filepath.Join(staging, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("moving the restore into %s: %w", dir, err)
		}
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("setting mode of %s: %w", dir, err)
	}
	if err := syncDir(dir); err != nil {
		return err
	}
	return os.Remove(staging)
}

// WriteRestored writes one of RestoredNames into the data directory dir
// (0600, exclusively: a restore never overwrites).
func WriteRestored(dir, name string, data []byte) error {
	if !slices.Contains(RestoredNames, name) {
		return fmt.Errorf("home: %s is not a file a backup restores", name)
	}
	return writeExclusive(filepath.Join(dir, name), data, 0o600)
}

// WritePendingJoin writes join.json into dir: the enrollment with home at
// e.HomeURL that the daemon completes on its first start (see
// Home.PendingJoin). A restored instance that holds the seed certifies its
// own new key; this is how home and the other instances learn it.
func WritePendingJoin(dir string, e Enrollment) error {
	if err := checkHomeURL(e.HomeURL); err != nil {
		return err
	}
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return writeExclusive(PathsOf(dir).JoinFile(), append(b, '\n'), 0o600)
}
