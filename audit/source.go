package audit

import (
	"context"
	"time"

	"github.com/crow-sync/crow/anchor"
	"github.com/crow-sync/crow/state"
)

// Memory is one memory content version as a Source holds it.
type Memory struct {
	ID          string
	Project     string
	Content     string
	ContentHash string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	Origin      string
	// Number and EventHash are the recorded number and event hash of this
	// version (0 and "": not numbered, or, for Row, covered by its versions).
	Number    uint64
	EventHash string
	// Row: a memories row whose content is also kept as numbered versions:
	// only its content hash is checked here.
	Row bool
	// Deleted: a tombstone (its last data is still checked).
	Deleted bool
	// Forgotten: the content was erased; only Number and EventHash are checked.
	Forgotten bool
	// Record is the memory_numbers row of the memory (nil: none).
	Record *NumberRecord
	// Anchor is home's anchors record of this version (nil: none yet).
	Anchor *anchor.Record
	// Bad says why the stored row could not be read ("" if it could).
	Bad string
}

// NumberRecord is a memory number as recorded (memory_numbers, or a
// memory_versions row).
type NumberRecord struct {
	Number    uint64
	MemoryID  string
	EventHash string
	Project   string // "" when the record does not say
}

// StateRow is one stored state version. Bad says why its row could not be
// decoded ("" if it could).
type StateRow struct {
	RowID   string
	Project string
	Version state.Version
	Bad     string
}

// Source is what an audit reads: StoreSource over a store.DB, or any other
// holder of the same records (tests, a future versions layout). Methods are
// called from Run's goroutine only; each reads one consistent snapshot.
type Source interface {
	// Kind names the memory layout audited ("memory_versions" or "memories").
	Kind() string
	// Memories calls fn for the memory versions of project ("": all) after
	// cursor after ("": from the start), in cursor order, until limit have
	// been visited (limit <= 0: no limit) or fn fails. It returns the cursor
	// of the last one visited, or "" when there are no more.
	Memories(ctx context.Context, project, after string, limit int, fn func(Memory) error) (next string, err error)
	// CountMemories is how many versions Memories visits for project.
	CountMemories(ctx context.Context, project string) (uint64, error)
	// Numbers calls fn for every number record, in no particular order.
	Numbers(ctx context.Context, fn func(NumberRecord) error) error
	// StateProjects lists the projects with state versions, sorted.
	StateProjects(ctx context.Context) ([]string, error)
	// StateVersions calls fn for each stored version of project, in version order.
	StateVersions(ctx context.Context, project string, fn func(StateRow) error) error
	// CountStates is how many versions StateVersions visits for project ("": all).
	CountStates(ctx context.Context, project string) (uint64, error)
}

// StateAnchors checks a project's state versions against the chain:
// anchor.Verifier.
type StateAnchors interface {
	VerifyProject(ctx context.Context, project string) (anchor.Report, error)
}

// MemoryChain reads the MemoryAnchored events of a block range: anchor's
// Embedded and RPC (anchor.MemoryReader).
type MemoryChain interface {
	MemoryEventsBetween(ctx context.Context, fromBlock, toBlock uint64) ([]anchor.MemoryEvent, error)
}
