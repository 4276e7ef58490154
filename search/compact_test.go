package search

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	zapx "github.com/blevesearch/zapx/v17"

	"github.com/crow-sync/crow/store"
	"github.com/crow-sync/crow/store/storetest"
)

// TestForgottenMemoryLeavesNoTermInTheIndex: a memory with a unique word is indexed (its
// term is in the index files), then forgotten: the indexer deletes its document, and after
// Compact no file of the index holds the word; other memories are still found.
func TestForgottenMemoryLeavesNoTermInTheIndex(t *testing.T) {
	env := storetest.Start(t, t.TempDir())
	dir := filepath.Join(t.TempDir(), "index")
	ix, _ := runIndexer(t, env.DB, dir)
	const word = "zqxforgetword"
	for i, m := range corpus() {
		if i == 0 {
			m.Content += " " + word
		}
		put(t, env.Writer, store.OpInsert, m)
	}
	caughtUp(t, env.DB, ix)
	persisted(t, ix)
	first := corpus()[0].ID
	if got := ids(t, ix, Query{Text: word}); len(got) != 1 || got[0] != first {
		t.Fatalf("search for the word: %v", got)
	}
	// The index keeps no doc values or term vectors of content (newMapping), so the term
	// lives in the segments' term dictionaries (FSTs, whose bytes a plain scan need not find):
	// those are read through zap itself.
	if len(segmentsWithTerm(t, dir, "content", word)) == 0 {
		t.Fatal("the word is in no segment's dictionary before the forget: the check proves nothing")
	}
	if _, err := env.Writer.Write(context.Background(), store.Mutation{Table: store.TableMemories, RowID: first,
		Op: store.OpDelete, Forget: true, Data: store.ForgetData(first, t0)}); err != nil {
		t.Fatal(err)
	}
	caughtUp(t, env.DB, ix)
	if got := ids(t, ix, Query{Text: word}); len(got) != 0 {
		t.Fatalf("search for the word after the forget: %v", got)
	}
	if err := ix.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	if f := segmentsWithTerm(t, dir, "content", word); len(f) != 0 {
		t.Fatalf("after Compact the word is still in the dictionary of %v", f)
	}
	if f := filesWith(t, dir, word); len(f) != 0 {
		t.Fatalf("after Compact the word is still in %v", f)
	}
	if got := ids(t, ix, Query{}); len(got) != len(corpus())-1 {
		t.Fatalf("after Compact %d memories are found, want %d", len(got), len(corpus())-1)
	}
}

// segmentsWithTerm returns the zap segment files under dir whose dictionary of field holds
// term. A segment the persister or merger is still writing cannot be opened yet: the walk is
// then repeated (for up to 10 s) until every file under dir opens.
func segmentsWithTerm(t *testing.T, dir, field, term string) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := walkSegmentsWithTerm(dir, field, term)
		if err == nil {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func walkSegmentsWithTerm(dir, field, term string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) != ".zap" {
			return err
		}
		seg, err := (&zapx.ZapPlugin{}).Open(p)
		if errors.Is(err, os.ErrNotExist) {
			return nil // merged away meanwhile
		}
		if err != nil {
			return fmt.Errorf("opening segment %s: %w", p, err)
		}
		defer seg.Close()
		dict, err := seg.Dictionary(field)
		if err != nil {
			return fmt.Errorf("segment %s: %w", p, err)
		}
		if ok, err := dict.Contains([]byte(term)); err != nil {
			return fmt.Errorf("segment %s: %w", p, err)
		} else if ok {
			out = append(out, p)
		}
		return nil
	})
	return out, err
}

func filesWith(t *testing.T, dir, s string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if bytes.Contains(b, []byte(s)) {
			out = append(out, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
