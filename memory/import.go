package memory

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/crow-sync/crow/store"
)

// ImportRecord is one memory to import: the fields of CreateInput plus the id and times it
// had where it came from (package memory/exchange maps every import format to it).
type ImportRecord struct {
	// ID is kept: an export of this crow (or of another instance of it) re-imports under the
	// same ids, and a foreign format gets a deterministic id (DerivedID), so importing the same
	// file twice never duplicates a memory.
	ID string
	CreateInput
	// CreatedAt and UpdatedAt are kept (UTC, whole milliseconds); a zero CreatedAt is the time
	// of the import, a zero or earlier UpdatedAt is CreatedAt.
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ImportOutcome is what Import did with one record.
type ImportOutcome string

const (
	// Imported: the memory was written (or, in a dry run, would be).
	Imported ImportOutcome = "imported"
	// Duplicate: a live memory with that id is here already; it is left as it is (an import
	// never changes an existing memory: replication carries edits).
	Duplicate ImportOutcome = "duplicate"
	// Refused: the id names a memory deleted or forgotten here; an import never revives it.
	Refused ImportOutcome = "refused"
)

// MaxImportBatch caps the records of one Import call.
const MaxImportBatch = 1000

// ImportError is a record Import refused as a whole batch: Index is its position in the
// call's records, Err the *ValidationError.
type ImportError struct {
	Index int
	Err   error
}

func (e *ImportError) Error() string { return fmt.Sprintf("record %d: %v", e.Index, e.Err) }
func (e *ImportError) Unwrap() error { return e.Err }

// ValidID reports whether id has the form of a memory id: a ULID (26 Crockford base32
// characters, at most 7 in the first), the form newID makes and DerivedID derives.
func ValidID(id string) bool {
	if len(id) != 26 || id[0] > '7' {
		return false
	}
	for i := 0; i < len(id); i++ {
		if !strings.ContainsRune(crockford, rune(id[i])) {
			return false
		}
	}
	return true
}

// DerivedID is the deterministic id of a memory imported from a foreign format: a ULID whose
// 48-bit time is at (its source's creation time, or the zero time when the source has none)
// and whose 80 other bits are the first ones of digest (a hash of the source's own key), so
// the same source record always maps to the same id and lists by its time.
func DerivedID(at time.Time, digest [32]byte) string {
	var b [16]byte
	ms := uint64(0)
	if !at.IsZero() && at.UnixMilli() > 0 {
		ms = uint64(at.UnixMilli()) & (1<<48 - 1)
	}
	binary.BigEndian.PutUint16(b[0:2], uint16(ms>>32))
	binary.BigEndian.PutUint32(b[2:6], uint32(ms))
	copy(b[6:], digest[:10])
	return ulidString(b)
}

// Import writes the records that are new here, all in one transaction: every record is
// validated first, and one bad record (an *ImportError naming it) writes nothing. A record
// whose id is live here already is a Duplicate, one deleted or forgotten here Refused; the
// rest are Imported (with dryRun, nothing is written and the outcomes say what would be).
// The memories keep their ids, times and source; the origin is this instance (the writer).
func (s *Service) Import(ctx context.Context, recs []ImportRecord, dryRun bool) ([]ImportOutcome, error) {
	if len(recs) > MaxImportBatch {
		return nil, invalid("memories", "has %d records, more than the %d one import call takes", len(recs), MaxImportBatch)
	}
	now := s.now().UTC().Truncate(time.Millisecond)
	rows := make([]rowData, len(recs))
	for i, r := range recs {
		d, err := r.normalize(now)
		if err != nil {
			return nil, &ImportError{Index: i, Err: err}
		}
		d.Origin = s.w.InstanceID()
		rows[i] = d
	}
	// An id taken meanwhile (a replica's insert between the read and the write) fails the
	// write with ErrExists: read again and retry.
	for attempt := 0; ; attempt++ {
		outs, err := s.importOutcomes(rows)
		if err != nil || dryRun {
			return outs, err
		}
		var muts []store.Mutation
		for i, d := range rows {
			if outs[i] != Imported {
				continue
			}
			b, err := json.Marshal(d)
			if err != nil {
				return nil, err
			}
			muts = append(muts, store.Mutation{Table: store.TableMemories, RowID: d.ID, Op: store.OpInsert, Data: b,
				Check: func(existing *store.Row) error {
					if existing != nil {
						return store.ErrExists // a tombstone appeared meanwhile: never revive it
					}
					return nil
				}})
		}
		_, err = s.commit(ctx, muts...)
		if (errors.Is(err, store.ErrExists) || errors.Is(err, store.ErrForgotten)) && attempt < 3 {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("importing memories: %w", err)
		}
		return outs, nil
	}
}

// importOutcomes reads, in one view, which rows are new here.
func (s *Service) importOutcomes(rows []rowData) ([]ImportOutcome, error) {
	outs := make([]ImportOutcome, len(rows))
	seen := make(map[string]bool, len(rows))
	err := s.db.View(func(txn *store.Txn) error {
		for i, d := range rows {
			if seen[d.ID] {
				outs[i] = Duplicate // twice in the same batch: the first one counts
				continue
			}
			seen[d.ID] = true
			r, err := txn.GetRow(store.TableMemories, d.ID)
			switch {
			case errors.Is(err, store.ErrNotFound):
				outs[i] = Imported
			case err != nil:
				return err
			case r.Deleted:
				outs[i] = Refused
			default:
				outs[i] = Duplicate
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading memories to import: %w", err)
	}
	return outs, nil
}

// normalize validates r as CreateInput does, checks its id and fills its times.
func (r ImportRecord) normalize(now time.Time) (rowData, error) {
	d, err := r.CreateInput.normalize()
	if err != nil {
		return d, err
	}
	if !ValidID(r.ID) {
		return d, invalid("id", "%q is not a memory id (26 characters of Crockford base32, a ULID)", r.ID)
	}
	d.ID = r.ID
	d.CreatedAt = r.CreatedAt.UTC().Truncate(time.Millisecond)
	if r.CreatedAt.IsZero() {
		d.CreatedAt = now
	}
	d.UpdatedAt = r.UpdatedAt.UTC().Truncate(time.Millisecond)
	if d.UpdatedAt.Before(d.CreatedAt) {
		d.UpdatedAt = d.CreatedAt
	}
	return d, nil
}
