package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/crow-sync/crow/store"
)

// Forgotten is what Service.Forget answers: the memory, every version number known here
// for it, and when it was forgotten (RFC 3339).
type Forgotten struct {
	ID          string   `json:"id"`
	Numbers     []uint64 `json:"numbers"`
	ForgottenAt string   `json:"forgotten_at"`
}

// ForgottenError is returned (it is ErrNotFound for errors.Is) when a forgotten memory is
// read by id.
type ForgottenError struct {
	ID string
	At string // RFC 3339
}

func (e *ForgottenError) Error() string {
	return "memory " + e.ID + " was forgotten at " + e.At
}

// Is makes errors.Is(err, ErrNotFound) hold.
func (e *ForgottenError) Is(target error) bool { return target == ErrNotFound }

var errForgottenAlready = errors.New("forgotten already")

// Forget erases the content of every version of a memory, on every instance (SPEC §10):
// it writes the forget of its memories row (a tombstone of only {"id","forgotten_at"},
// store.ForgetData), which replicates like any write; package forget erases the rest
// (feed entries, conflict records, the search index, the versions' content on home, the
// data key, old copies on disk) on every instance that applies it. idOrNumber is the
// memory's id, or the number of any of its versions (decimal digits, "#" allowed). It
// works on a live or a deleted memory, and is idempotent: forgetting again answers the
// same. ErrNotFound if no such memory is held here.
func (s *Service) Forget(ctx context.Context, idOrNumber string) (Forgotten, error) {
	id, err := s.resolveID(idOrNumber)
	if err != nil {
		return Forgotten{}, err
	}
	at := s.now().UTC()
	rows, err := s.commit(ctx, store.Mutation{Table: store.TableMemories, RowID: id, Op: store.OpDelete, Forget: true,
		Data: store.ForgetData(id, at), Check: func(existing *store.Row) error {
			if existing.Forgotten() {
				return errForgottenAlready
			}
			return nil
		}})
	var f Forgotten
	switch {
	case errors.Is(err, errForgottenAlready):
		r, err := s.db.Get(store.TableMemories, id)
		if err != nil {
			return Forgotten{}, fmt.Errorf("forgetting memory %s: %w", id, err)
		}
		f = Forgotten{ID: id, ForgottenAt: store.ForgottenAt(r.Data)}
	case err != nil:
		return Forgotten{}, fmt.Errorf("forgetting memory %s: %w", id, err)
	default:
		f = Forgotten{ID: id, ForgottenAt: store.ForgottenAt(rows[0].Data)}
	}
	if f.Numbers, err = VersionNumbers(s.db, id); err != nil {
		return Forgotten{}, err
	}
	return f, nil
}

// resolveID returns the memory id idOrNumber names.
func (s *Service) resolveID(idOrNumber string) (string, error) {
	digits := strings.TrimPrefix(idOrNumber, "#")
	if digits == "" {
		return "", ErrNotFound
	}
	if strings.TrimLeft(digits, "0123456789") != "" {
		return idOrNumber, nil
	}
	n, err := strconv.ParseUint(digits, 10, 64)
	if err != nil {
		return "", fmt.Errorf("memory #%s: %w", digits, ErrNotFound)
	}
	var v Version
	err = s.db.View(func(txn *store.Txn) error {
		r, err := txn.GetRow(store.TableMemoryVersions, VersionRowID(n))
		if err != nil {
			return fmt.Errorf("memory #%d: %w", n, err)
		}
		return json.Unmarshal(r.Data, &v)
	})
	if err != nil {
		return "", err
	}
	return v.MemoryID, nil
}

// VersionNumbers returns every version number held here for memory id, ascending: the
// chain of supersedes from its latest number (memory_numbers), and any memory_versions
// row of it the chain does not reach.
func VersionNumbers(db *store.DB, id string) ([]uint64, error) {
	var out []uint64
	err := db.View(func(txn *store.Txn) error {
		seen := map[uint64]bool{}
		r, err := txn.GetRow(store.TableMemoryNumbers, id)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		var nr numberRow
		if json.Unmarshal(r.Data, &nr) != nil {
			return nil
		}
		for n := nr.Number; n != 0 && !seen[n] && len(out) < maxChain; {
			seen[n] = true
			out = append(out, n)
			v, err := ReadVersion(txn, n)
			if errors.Is(err, store.ErrNotFound) {
				break
			}
			if err != nil {
				return err
			}
			if v.MemoryID != id {
				break
			}
			n = v.Supersedes
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the numbers of memory %s: %w", id, err)
	}
	slices.Sort(out)
	return out, nil
}

// ForgetVersion returns the data of a memory_versions row with its content erased: content,
// category, importance, tags and source are dropped, forgotten_at is set to at; number,
// memory id, project, content hash, created_at, origin, event hash, supersedes and
// superseded_by stay (with any field this build does not know), so the event record
// recomputes to the event hash and evidence roots still verify. The content hash is kept
// for that; it is a SHA-256 of the content, which lets someone who guesses the content
// confirm the guess. changed is false if data is erased already.
func ForgetVersion(data json.RawMessage, at string) (out json.RawMessage, changed bool, err error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return nil, false, fmt.Errorf("decoding a memory version: %w", err)
	}
	for _, k := range erasedVersionFields {
		if _, ok := fields[k]; ok {
			delete(fields, k)
			changed = true
		}
	}
	if _, ok := fields["forgotten_at"]; !ok {
		b, _ := json.Marshal(at)
		fields["forgotten_at"] = b
		changed = true
	}
	if !changed {
		return data, false, nil
	}
	out, err = json.Marshal(fields)
	return out, true, err
}

// erasedVersionFields are the fields of a Version a forget erases.
var erasedVersionFields = []string{"content", "category", "importance", "tags", "source"}
