package anchor

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/store"
)

// ErrUnknownNumber is returned (wrapped) by a VersionSource, and so by
// Prover.MemoryProof, for a number home has not given to any memory (or
// that has not replicated here yet).
var ErrUnknownNumber = errors.New("anchor: no memory has this number")

// Version is one numbered memory version, as a proof needs it: what its
// event record commits to and the content it holds.
type Version struct {
	Number      uint64
	MemoryID    string
	EventHash   string // 0x-hex, as home recorded it when numbering
	Project     string
	ContentHash string // hex SHA-256 of the content, as the memory records it
	CreatedAt   time.Time
	Origin      string
	Content     string
	// Forgotten: the content was erased (forgotten_at set); Content is
	// empty and the fields above may be too.
	Forgotten bool
	// Deleted: the memory is deleted here (a tombstone): nothing but the
	// number, memory id and event hash is known.
	Deleted bool
}

// VersionSource gives the numbered version n. It returns an error wrapping
// ErrUnknownNumber when no memory has that number.
//
// TableVersions reads today's tables; a memory_versions table keyed by
// number (one immutable row per content version) can replace it without
// changing the Prover.
type VersionSource interface {
	Version(n uint64) (Version, error)
}

// TableVersions is a VersionSource over memory_numbers (memory id →
// {number, event_hash}) and the memories rows. Until memories are
// versioned, a memory edited since home numbered it holds its new content
// under its old number: its event record no longer recomputes to the
// recorded hash, and the proof says so (a mismatch of the event hash).
// Finding a number scans memory_numbers (one row per memory).
type TableVersions struct{ DB *store.DB }

// Version implements VersionSource.
func (t TableVersions) Version(n uint64) (Version, error) {
	v := Version{Number: n}
	found := false
	err := t.DB.View(func(txn *store.Txn) error {
		err := txn.ScanRows(store.TableMemoryNumbers, func(r *store.Row) error {
			var nr struct {
				Number    uint64 `json:"number"`
				EventHash string `json:"event_hash"`
			}
			if r.Deleted || json.Unmarshal(r.Data, &nr) != nil || nr.Number != n {
				return nil
			}
			v.MemoryID, v.EventHash, found = r.RowID, nr.EventHash, true
			return store.ErrStop
		})
		if err != nil && !errors.Is(err, store.ErrStop) {
			return err
		}
		if !found {
			return nil
		}
		row, err := txn.GetRow(store.TableMemories, v.MemoryID)
		if errors.Is(err, store.ErrNotFound) {
			v.Deleted = true
			return nil
		} else if err != nil {
			return err
		}
		if row.Deleted {
			v.Deleted = true
			return nil
		}
		var m struct {
			Project     string    `json:"project"`
			Content     string    `json:"content"`
			ContentHash string    `json:"content_hash"`
			CreatedAt   time.Time `json:"created_at"`
			Origin      string    `json:"origin"`
			ForgottenAt string    `json:"forgotten_at"`
		}
		if err := json.Unmarshal(row.Data, &m); err != nil {
			return fmt.Errorf("decoding memory %s: %w", v.MemoryID, err)
		}
		v.Project, v.Content, v.ContentHash, v.CreatedAt, v.Origin = m.Project, m.Content, m.ContentHash, m.CreatedAt, m.Origin
		v.Forgotten = m.ForgottenAt != ""
		return nil
	})
	if err != nil {
		return Version{}, fmt.Errorf("reading memory #%d: %w", n, err)
	}
	if !found {
		return Version{}, fmt.Errorf("%w: #%d", ErrUnknownNumber, n)
	}
	return v, nil
}

// MemoryVersions is the VersionSource over home's memory_versions table
// (row id = the number; one immutable row per content version).
type MemoryVersions struct{ DB *store.DB }

// Version implements VersionSource.
func (m MemoryVersions) Version(n uint64) (Version, error) {
	r, err := m.DB.Get(store.TableMemoryVersions, memory.VersionRowID(n))
	if errors.Is(err, store.ErrNotFound) || (err == nil && r.Deleted) {
		return Version{}, fmt.Errorf("memory #%d: %w", n, ErrUnknownNumber)
	} else if err != nil {
		return Version{}, err
	}
	var mv memory.Version
	if err := json.Unmarshal(r.Data, &mv); err != nil {
		return Version{}, fmt.Errorf("decoding memory #%d: %w", n, err)
	}
	v := Version{Number: n, MemoryID: mv.MemoryID, EventHash: mv.EventHash, Project: mv.Project, ContentHash: mv.ContentHash,
		Origin: mv.Origin, Content: mv.Content, Forgotten: mv.ForgottenAt != "", CreatedAt: mv.CreatedAt}
	if row, err := m.DB.Get(store.TableMemories, mv.MemoryID); err != nil || row.Deleted {
		v.Deleted = !v.Forgotten && err == nil
	}
	return v, nil
}
