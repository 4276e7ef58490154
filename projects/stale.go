package projects

import (
	"errors"
	"fmt"

	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/state"
	"github.com/crow-sync/crow/store"
)

// StaleRef is one cited memory number whose version was superseded: an edit
// of the memory was numbered since. SupersededBy is the newest number in the
// memory's supersede chain (as replicated here), not merely the next one.
type StaleRef struct {
	Number       uint64 `json:"number"`
	SupersededBy uint64 `json:"superseded_by"`
}

// StaleEvidence maps an item id to its stale evidence, in the order of the
// item's evidence_memory_ids. It is a read-time annotation beside the state,
// never part of it: the stored version and its state_hash do not change.
type StaleEvidence map[string][]StaleRef

// StaleEvidence returns the items of st citing a memory version that was
// superseded, with the newest number of each (never nil). A cited number
// without a version here (a legacy number, or one not replicated yet) is not
// flagged.
func (s *Service) StaleEvidence(st *state.State) (StaleEvidence, error) {
	out := StaleEvidence{}
	newest := map[uint64]uint64{} // cited number → newest number, computed once
	err := s.db.View(func(txn *store.Txn) error {
		for _, it := range state.Items(*st) {
			id := it.ID
			for _, n := range it.EvidenceMemoryIDs {
				to, seen := newest[n]
				if !seen {
					var err error
					to, err = memory.NewestVersion(txn, n)
					if errors.Is(err, store.ErrNotFound) {
						to = n
					} else if err != nil {
						return err
					}
					newest[n] = to
				}
				if to != n {
					out[id] = append(out[id], StaleRef{Number: n, SupersededBy: to})
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the versions of cited memories: %w", err)
	}
	return out, nil
}
