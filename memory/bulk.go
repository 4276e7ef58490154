package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/crow-sync/crow/internal/parallel"
	"github.com/crow-sync/crow/store"
)

// MaxBulk caps the memories of one AddMany call.
const MaxBulk = 1000

// minParallelItems is the fewest items of a call per core worth preparing beside the
// caller's goroutine.
const minParallelItems = 128

// ItemError is one refused item of a bulk call: its index and why.
type ItemError struct {
	Index int
	Err   error // a *ValidationError
}

// BulkError refuses a whole AddMany call: the items that are wrong, each
// with its reason. Nothing of the call was written.
type BulkError struct{ Items []ItemError }

func (e *BulkError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of the memories are invalid: ", len(e.Items))
	for i, it := range e.Items {
		if i == 10 {
			fmt.Fprintf(&b, "; and %d more", len(e.Items)-10)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "memories[%d]: %v", it.Index, it.Err)
	}
	return b.String()
}

// AddMany validates every input, then stores them all as new memories in
// one transaction (one group commit, one fsync), in order: all or nothing.
// Invalid items refuse the call with a *BulkError naming each of them.
func (s *Service) AddMany(ctx context.Context, ins []CreateInput) ([]Memory, error) {
	switch {
	case len(ins) == 0:
		return nil, invalid("memories", "is empty: give 1 to %d memories", MaxBulk)
	case len(ins) > MaxBulk:
		return nil, invalid("memories", "has %d memories, more than the %d one call takes", len(ins), MaxBulk)
	}
	now := s.now().UTC()
	at := now.Truncate(time.Millisecond)
	rows := make([]rowData, len(ins))
	errs := make([]error, len(ins))
	muts := make([]store.Mutation, len(rows))
	// Validation, the content hash and the row's JSON are each item's own: on every
	// core for a large call. Ids are taken in order after, so they sort as the items.
	parallel.Range(len(ins), minParallelItems, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			rows[i], errs[i] = ins[i].normalize()
		}
	})
	var bad []ItemError
	for i, err := range errs {
		if err != nil {
			bad = append(bad, ItemError{Index: i, Err: err})
		}
	}
	if len(bad) > 0 {
		return nil, &BulkError{Items: bad}
	}
	origin := s.w.InstanceID()
	for i := range rows {
		d := &rows[i]
		d.ID = newID(now)
		d.Origin = origin
		d.CreatedAt, d.UpdatedAt = at, at
	}
	out := make([]Memory, len(rows))
	parallel.Range(len(rows), minParallelItems, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			b, err := json.Marshal(rows[i])
			if err != nil {
				errs[i] = err
				continue
			}
			muts[i] = store.Mutation{Table: store.TableMemories, RowID: rows[i].ID, Op: store.OpInsert, Data: b}
			out[i] = rows[i].memory()
		}
	})
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	if _, err := s.commit(ctx, muts...); err != nil {
		return nil, fmt.Errorf("adding %d memories: %w", len(rows), err)
	}
	return out, nil
}
