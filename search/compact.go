package search

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/index/scorch/mergeplan"
)

// Compact merges the index into one segment (a scorch force merge), so a deleted
// document's terms and doc values, which stay in the segment files that held it until
// they are merged, are rewritten away; it then waits (up to a few seconds) until the
// segment files the merge replaced are removed. Package forget calls it after a forget
// (SPEC §10). It returns when the merge is done or ctx ends.
func (ix *Index) Compact(ctx context.Context) error {
	adv, err := ix.bi.Advanced()
	if err != nil {
		return fmt.Errorf("compacting the search index: %w", err)
	}
	s, ok := adv.(*scorch.Scorch)
	if !ok {
		return nil // not a scorch index: nothing to merge
	}
	before := segmentFiles(ix.dir)
	// The merge planner leaves a lone segment alone, deletions and all: a throwaway
	// document makes a second one, so the merge rewrites both; it is deleted after.
	// The merger merges persisted segments only, and batches are persisted in the background
	// (see Index): wait until the throwaway document, and so every earlier batch, is on disk.
	b := ix.bi.NewBatch()
	if err := b.Index(compactDoc, map[string]any{}); err != nil {
		return fmt.Errorf("compacting the search index: %w", err)
	}
	persisted := make(chan error, 1)
	b.SetPersistedCallback(func(err error) { persisted <- err })
	if err := ix.bi.Batch(b); err != nil {
		return fmt.Errorf("compacting the search index: %w", err)
	}
	select {
	case err := <-persisted:
		if err != nil {
			return fmt.Errorf("compacting the search index: %w", err)
		}
	case <-ctx.Done():
		return ctx.Err()
	case <-ix.closed:
		return ErrClosed
	}
	err = s.ForceMerge(ctx, &mergeplan.SingleSegmentMergePlanOptions)
	if derr := ix.bi.Delete(compactDoc); err == nil {
		err = derr
	}
	if err != nil {
		return fmt.Errorf("compacting the search index: %w", err)
	}
	// The persister removes replaced files once no snapshot uses them.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		left := 0
		for f := range before {
			if _, err := os.Stat(f); err == nil {
				left++
			}
		}
		if left == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// compactDoc is the id of Compact's throwaway document (never a memory id: ULIDs have no
// "/").
const compactDoc = "crow/compact"

func segmentFiles(dir string) map[string]bool {
	names, _ := filepath.Glob(filepath.Join(dir, "store", "*.zap"))
	out := make(map[string]bool, len(names))
	for _, n := range names {
		out[n] = true
	}
	return out
}
