package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/crow-sync/crow/store"
)

// MaxBulk caps the memories of one AddMany call.
const MaxBulk = 1000

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
	var bad []ItemError
	for i, in := range ins {
		d, err := in.normalize()
		if err != nil {
			bad = append(bad, ItemError{Index: i, Err: err})
			continue
		}
		d.ID = newID(now)
		d.Origin = s.w.InstanceID()
		d.CreatedAt, d.UpdatedAt = at, at
		rows[i] = d
	}
	if len(bad) > 0 {
		return nil, &BulkError{Items: bad}
	}
	muts := make([]store.Mutation, len(rows))
	out := make([]Memory, len(rows))
	for i, d := range rows {
		b, err := json.Marshal(d)
		if err != nil {
			return nil, err
		}
		muts[i] = store.Mutation{Table: store.TableMemories, RowID: d.ID, Op: store.OpInsert, Data: b}
		out[i] = d.memory()
	}
	if _, err := s.commit(ctx, muts...); err != nil {
		return nil, fmt.Errorf("adding %d memories: %w", len(rows), err)
	}
	return out, nil
}
