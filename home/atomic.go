package home

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// AtomicWrite replaces path with data: it writes a temp file in the same
// directory, fsyncs it, sets perm, renames it over path and fsyncs the
// directory. Readers see the old or the new content, never a mix, and after a
// crash the file is one or the other.
func AtomicWrite(path string, data []byte, perm os.FileMode) error {
	tmp, err := writeTemp(path, data, perm)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return syncDir(filepath.Dir(path))
}

// writeExclusive is AtomicWrite that fails with an error wrapping
// fs.ErrExist instead of replacing an existing file. The complete temp file
// is hard-linked into place (link never overwrites); where hard links are
// unsupported it falls back to an O_EXCL create, which is exclusive but not
// atomic.
func writeExclusive(path string, data []byte, perm os.FileMode) error {
	tmp, err := writeTemp(path, data, perm)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	err = os.Link(tmp, path)
	switch {
	case err == nil:
	case errors.Is(err, fs.ErrExist):
		return fmt.Errorf("writing %s: %w", path, fs.ErrExist)
	default:
		if err := createExclusive(path, data, perm); err != nil {
			return err
		}
	}
	return syncDir(filepath.Dir(path))
}

// createExclusive creates path with O_EXCL and writes and fsyncs data.
func createExclusive(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm) // the umask may have narrowed or the mode may differ
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

func writeTemp(path string, data []byte, perm os.FileMode) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	return tmp, nil
}

// syncDir fsyncs a directory so that a rename or create in it is durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("syncing directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, fs.ErrInvalid) {
		return fmt.Errorf("syncing directory %s: %w", dir, err)
	}
	return nil
}

// AtomicFile is AtomicWrite for content written as a stream (an export, a
// backup): it is written under a temporary name beside path, and Commit
// fsyncs it, renames it over path and fsyncs the directory. Until Commit,
// path is untouched; Abort removes the temporary file.
type AtomicFile struct {
	*os.File
	path string
}

// CreateAtomic starts an AtomicFile for path.
func CreateAtomic(path string) (*AtomicFile, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", path, err)
	}
	return &AtomicFile{File: f, path: path}, nil
}

// Commit puts the written content in place of path.
func (f *AtomicFile) Commit() error {
	err := f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), f.path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("writing %s: %w", f.path, err)
	}
	return syncDir(filepath.Dir(f.path))
}

// Abort drops the temporary file; path is untouched. After Commit it is a
// no-op.
func (f *AtomicFile) Abort() {
	_ = f.Close()
	_ = os.Remove(f.Name())
}
