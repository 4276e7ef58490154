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

// itemEvidence returns every item of st with its evidence, list by list.
func itemEvidence(st *state.State) map[string]state.MemoryIDs {
	out := map[string]state.MemoryIDs{}
	for _, d := range st.Decisions {
		out[d.ID] = d.EvidenceMemoryIDs
	}
	for _, x := range st.Milestones {
		out[x.ID] = x.EvidenceMemoryIDs
	}
	for _, x := range st.Risks {
		out[x.ID] = x.EvidenceMemoryIDs
	}
	for _, x := range st.Assumptions {
		out[x.ID] = x.EvidenceMemoryIDs
	}
	for _, x := range st.OpenQuestions {
		out[x.ID] = x.EvidenceMemoryIDs
	}
	for _, x := range st.Priorities {
		out[x.ID] = x.EvidenceMemoryIDs
	}
	for _, x := range st.Constraints {
		out[x.ID] = x.EvidenceMemoryIDs
	}
	for _, x := range st.Vision {
		out[x.ID] = x.EvidenceMemoryIDs
	}
	for _, x := range st.Vocabulary {
		out[x.ID] = x.EvidenceMemoryIDs
	}
	for _, x := range st.Metrics {
		out[x.ID] = x.EvidenceMemoryIDs
	}
	return out
}

// StaleEvidence returns the items of st citing a memory version that was
// superseded, with the newest number of each (never nil). A cited number
// without a version here (a legacy number, or one not replicated yet) is not
// flagged.
func (s *Service) StaleEvidence(st *state.State) (StaleEvidence, error) {
	out := StaleEvidence{}
	newest := map[uint64]uint64{} // cited number → newest number, computed once
	err := s.db.View(func(txn *store.Txn) error {
		for id, ev := range itemEvidence(st) {
			for _, n := range ev {
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
