package backup

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"

	"filippo.io/age"
)

// Errors of Open and Restore.
var (
	// ErrWrongPassphrase: the passphrase does not open the archive.
	ErrWrongPassphrase = errors.New("wrong passphrase for this backup")
	// ErrNotArchive: the file is not a crow backup archive (not an age
	// file encrypted to a passphrase, or not the format inside).
	ErrNotArchive = errors.New("not a crow backup archive")
	// ErrDamaged: the archive is truncated or was altered.
	ErrDamaged = errors.New("the backup archive is damaged (truncated or altered)")
)

// DefaultWorkFactor is the scrypt work factor (log2 N) of Seal: age's
// default, about a second per try.
const DefaultWorkFactor = 18

// Seal returns a writer that encrypts what is written to it into w, for
// passphrase; Close finishes the archive (it does not close w). workFactor
// is scrypt's log2 N (DefaultWorkFactor when 0).
func Seal(w io.Writer, passphrase []byte, workFactor int) (io.WriteCloser, error) {
	if len(passphrase) == 0 {
		return nil, errors.New("the backup passphrase is empty")
	}
	r, err := age.NewScryptRecipient(string(passphrase))
	if err != nil {
		return nil, err
	}
	if workFactor == 0 {
		workFactor = DefaultWorkFactor
	}
	r.SetWorkFactor(workFactor)
	enc, err := age.Encrypt(w, r)
	if err != nil {
		return nil, fmt.Errorf("encrypting the backup: %w", err)
	}
	return enc, nil
}

// Open returns the plaintext of the archive read from r. It fails with
// ErrWrongPassphrase or ErrNotArchive; a read of the plaintext fails with
// ErrDamaged (wrapped) where the archive is cut or altered.
func Open(r io.Reader, passphrase []byte) (io.Reader, error) {
	if len(passphrase) == 0 {
		return nil, fmt.Errorf("%w: the passphrase is empty", ErrWrongPassphrase)
	}
	id, err := age.NewScryptIdentity(string(passphrase))
	if err != nil {
		return nil, err
	}
	id.SetMaxWorkFactor(22)
	plain, err := age.Decrypt(bufio.NewReaderSize(r, 64<<10), id)
	var noMatch *age.NoIdentityMatchError
	switch {
	case errors.As(err, &noMatch):
		if slices.Equal(noMatch.StanzaTypes, []string{"scrypt"}) {
			return nil, ErrWrongPassphrase
		}
		return nil, fmt.Errorf("%w: it is not encrypted to a passphrase", ErrNotArchive)
	case err != nil:
		return nil, fmt.Errorf("%w: %w", ErrNotArchive, err)
	}
	return damagedReader{plain}, nil
}

// damagedReader names age's read errors (a failed chunk, a missing end) as
// ErrDamaged.
type damagedReader struct{ r io.Reader }

func (d damagedReader) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("%w: %w", ErrDamaged, err)
	}
	return n, err
}
