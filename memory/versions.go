package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/crow-sync/crow/store"
)

// Version is the data of a memory_versions row: one numbered content version of a memory
// (SPEC §10, "a number names one immutable version"). Home writes it when it numbers the
// version and never changes it again, but for SupersededBy (set once, in the same write
// that numbers the next version of the same memory) and, later, a forget (which erases the
// content fields and sets ForgottenAt).
//
// Row id: the number as 20 decimal digits (VersionRowID), so the table lists in number
// order. JSON field names are part of the replicated data; add fields, never rename one.
type Version struct {
	Number   uint64 `json:"number"`
	MemoryID string `json:"memory_id"`
	Project  string `json:"project"`
	// Content is empty when the content is not held: erased by a forget (ForgottenAt set,
	// see ForgetVersion: the content hash is kept, so the event hash still recomputes), or
	// a number given before versions were kept whose content was edited before this build
	// saw it (see Numberer: legacy numbers; ContentHash is empty too).
	Content     string   `json:"content,omitempty"`
	ContentHash string   `json:"content_hash,omitempty"`
	Category    string   `json:"category,omitempty"`
	Importance  int      `json:"importance,omitempty"`
	Tags        []string `json:"tags,omitempty"`
	Source      string   `json:"source,omitempty"`
	// CreatedAt is when this version became live: the memory's created_at for its first
	// version, its updated_at for a later one. It is the created_at of the event record.
	CreatedAt time.Time `json:"created_at,omitzero"`
	// Origin is the instance that created the memory (the event record's origin).
	Origin    string `json:"origin"`
	EventHash string `json:"event_hash"`
	// Supersedes is the number of the memory's previous version (0, omitted: the first).
	Supersedes uint64 `json:"supersedes,omitempty"`
	// SupersededBy is the number of the memory's next version (0, omitted: the newest).
	SupersededBy uint64 `json:"superseded_by,omitempty"`
	// ForgottenAt (RFC 3339) is set when a forget erased the content.
	ForgottenAt string `json:"forgotten_at,omitempty"`
}

// VersionRowID is the memory_versions row id of number n.
func VersionRowID(n uint64) string { return fmt.Sprintf("%020d", n) }

// ReadVersion reads version n in txn; ErrNotFound if home has not numbered it (or this
// instance has not received it yet).
func ReadVersion(txn *store.Txn, n uint64) (Version, error) {
	r, err := txn.GetRow(store.TableMemoryVersions, VersionRowID(n))
	if err == nil && r.Deleted {
		err = store.ErrNotFound
	}
	if err != nil {
		return Version{}, fmt.Errorf("memory #%d: %w", n, err)
	}
	var v Version
	if err := json.Unmarshal(r.Data, &v); err != nil {
		return Version{}, fmt.Errorf("decoding memory #%d: %w", n, err)
	}
	return v, nil
}

// maxChain bounds how far NewestVersion follows superseded_by (a guard against a cycle in
// replicated data; a memory edited that often has no reader who needs the whole walk).
const maxChain = 1 << 16

// NewestVersion follows superseded_by from number n to the newest version of that memory
// numbered here, and returns its number (n itself if nothing supersedes it).
func NewestVersion(txn *store.Txn, n uint64) (uint64, error) {
	cur := n
	for range maxChain {
		v, err := ReadVersion(txn, cur)
		if errors.Is(err, store.ErrNotFound) && cur != n {
			return cur, nil // superseded_by names a version not replicated here yet
		}
		if err != nil {
			return 0, err
		}
		if v.SupersededBy == 0 || v.SupersededBy == cur {
			return cur, nil
		}
		cur = v.SupersededBy
	}
	return cur, nil
}

// HighestNumber returns the highest memory number held here (0: none), over
// memory_versions and, for numbers given before versions were kept, memory_numbers.
func HighestNumber(db *store.DB) (uint64, error) {
	var hi uint64
	rows, _, err := db.List(store.TableMemoryVersions, store.ListOptions{Reverse: true, Limit: 1, IncludeDeleted: true})
	if err != nil {
		return 0, fmt.Errorf("reading the highest memory number: %w", err)
	}
	for _, r := range rows {
		if n, err := strconv.ParseUint(r.RowID, 10, 64); err == nil {
			hi = n
		}
	}
	err = db.View(func(txn *store.Txn) error {
		return txn.ScanRows(store.TableMemoryNumbers, func(r *store.Row) error {
			var nd struct {
				Number uint64 `json:"number"`
			}
			if json.Unmarshal(r.Data, &nd) == nil {
				hi = max(hi, nd.Number)
			}
			return nil
		})
	})
	if err != nil {
		return 0, fmt.Errorf("reading the highest memory number: %w", err)
	}
	return hi, nil
}

// memory returns v in the Memory shape: Number is v's, ID the memory's id, UpdatedAt its
// CreatedAt (a version never changes), and Supersedes / SupersededBy set. A forgotten
// version has no content.
func (v Version) memory() Memory {
	m := Memory{ID: v.MemoryID, Project: v.Project, Content: v.Content, ContentHash: v.ContentHash,
		Category: v.Category, Importance: v.Importance, Tags: v.Tags, Source: v.Source, Origin: v.Origin,
		CreatedAt: v.CreatedAt, UpdatedAt: v.CreatedAt, ForgottenAt: v.ForgottenAt}
	if m.Tags == nil {
		m.Tags = []string{}
	}
	if v.ForgottenAt != "" {
		m.Content = ""
	}
	num, eh := v.Number, v.EventHash
	m.Number, m.EventHash = &num, &eh
	if v.Supersedes != 0 {
		s := v.Supersedes
		m.Supersedes = &s
	}
	if v.SupersededBy != 0 {
		s := v.SupersededBy
		m.SupersededBy = &s
	}
	return m
}

// GetVersion returns the memory version numbered n (SPEC §10: a number names one immutable
// version), in the Memory shape with Supersedes and SupersededBy. It is held after the live
// memory is edited or deleted. ErrNotFound (wrapped) if no version has that number here.
func (s *Service) GetVersion(ctx context.Context, n uint64) (Memory, error) {
	if err := ctx.Err(); err != nil {
		return Memory{}, err
	}
	var v Version
	err := s.db.View(func(txn *store.Txn) error {
		var err error
		v, err = ReadVersion(txn, n)
		return err
	})
	if err != nil {
		return Memory{}, err
	}
	return v.memory(), nil
}

// HighestNumber returns the highest memory number held here (0: none).
func (s *Service) HighestNumber() (uint64, error) { return HighestNumber(s.db) }
