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
	// A background merge that was running when the force merge started can
	// still introduce (or leave on disk) a segment built from the old ones:
	// merge again until the index is one segment and no other file is left.
	for round := 1; ; round++ {
		done, err := ix.compactOnce(ctx, s)
		if err != nil || done || round == maxCompactRounds {
			return err
		}
	}
}

// maxCompactRounds bounds Compact's force merges (a daemon indexing
// meanwhile may never be down to one segment).
const maxCompactRounds = 3

// compactOnce force-merges the index into one segment and waits (up to a few
// seconds) until the segment files it replaced are removed. It reports whether
// the index is then one file segment with no other segment file on disk.
func (ix *Index) compactOnce(ctx context.Context, s *scorch.Scorch) (bool, error) {
	before := segmentFiles(ix.dir)
	// The merge planner leaves a lone segment alone, deletions and all: a throwaway
	// document makes a second one, so the merge rewrites both; it is deleted after.
	// The merger merges persisted segments only, and batches are persisted in the background
	// (see Index): wait until the throwaway document, and so every earlier batch, is on disk.
	b := ix.bi.NewBatch()
	if err := b.Index(compactDoc, map[string]any{}); err != nil {
		return false, fmt.Errorf("compacting the search index: %w", err)
	}
	persisted := make(chan error, 1)
	b.SetPersistedCallback(func(err error) { persisted <- err })
	if err := ix.bi.Batch(b); err != nil {
		return false, fmt.Errorf("compacting the search index: %w", err)
	}
	select {
	case err := <-persisted:
		if err != nil {
			return false, fmt.Errorf("compacting the search index: %w", err)
		}
	case <-ctx.Done():
		return false, ctx.Err()
	case <-ix.closed:
		return false, ErrClosed
	}
	err := s.ForceMerge(ctx, &mergeplan.SingleSegmentMergePlanOptions)
	if derr := ix.bi.Delete(compactDoc); err == nil {
		err = derr
	}
	if err != nil {
		return false, fmt.Errorf("compacting the search index: %w", err)
	}
	// The persister removes replaced files once no snapshot uses them.
	for deadline := time.Now().Add(5 * time.Second); ; {
		live, err := rootFiles(s)
		if err != nil {
			return false, fmt.Errorf("compacting the search index: %w", err)
		}
		left := 0
		for f := range before {
			if _, err := os.Stat(f); err == nil {
				left++
			}
		}
		stray := 0
		for f := range segmentFiles(ix.dir) {
			if !live[filepath.Base(f)] {
				stray++
			}
		}
		if left == 0 && stray == 0 {
			return len(live) <= 1, nil
		}
		if !time.Now().Before(deadline) {
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// rootFiles returns the names of the segment files the index's current
// snapshot reads.
func rootFiles(s *scorch.Scorch) (map[string]bool, error) {
	r, err := s.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	out := map[string]bool{}
	if snap, ok := r.(*scorch.IndexSnapshot); ok {
		for _, ss := range snap.Segments() {
			if p, ok := ss.Segment().(interface{ Path() string }); ok && p.Path() != "" {
				out[filepath.Base(p.Path())] = true
			}
		}
	}
	return out, nil
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
