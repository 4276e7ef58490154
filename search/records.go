package search

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/crow-sync/crow/store"
)

// Records: the synced tables besides memories are indexed in the same index.
//
// A record's document id is "<table>/<row id>" (memory ids are ULIDs, never with a slash, and
// stay the bare row id); its fields are "table" (keyword) and "text": every string value of the
// row's data, nested ones included, but for the keys in skipKeys, English-analysed. A memory
// document carries "table":"memories" besides its own fields. Memory searches read only
// memory fields ("content", "project", …), which records do not have, and the match-all of
// an empty memory search is the term table:memories, so records never appear in them.

// RecordTables are the tables, besides memories, whose rows are indexed.
var RecordTables = []string{store.TableNotes, store.TableSources, store.TableContacts,
	store.TableSettings, store.TableBlogPosts, store.TableCrowContext}

// Searchable reports whether table's rows are in the index (memories or a record table).
func Searchable(table string) bool {
	if table == store.TableMemories {
		return true
	}
	for _, t := range RecordTables {
		if t == table {
			return true
		}
	}
	return false
}

// skipKeys are data keys whose values are not indexed as text (timestamps, ids).
var skipKeys = map[string]bool{"id": true, "created_at": true, "updated_at": true, "origin": true}

// maxRecordText caps the text indexed of one record (bytes).
const maxRecordText = 256 << 10

// docID is the document id of a row.
func docID(table, rowID string) string {
	if table == store.TableMemories {
		return rowID
	}
	return table + "/" + rowID
}

// splitDocID is docID's inverse.
func splitDocID(id string) (table, rowID string) {
	if t, r, ok := strings.Cut(id, "/"); ok && t != store.TableMemories && Searchable(t) {
		return t, r
	}
	return store.TableMemories, id
}

// stageRow adds to b the operation that makes the index reflect row (nil = missing) of table.
func stageRow(b *bleve.Batch, table, rowID string, row *store.Row) error {
	if table == store.TableMemories {
		return stage(b, rowID, row)
	}
	id := docID(table, rowID)
	if row == nil || row.Deleted {
		b.Delete(id)
		return nil
	}
	var data any
	if err := json.Unmarshal(row.Data, &data); err != nil {
		b.Delete(id) // unreadable: never wedge the indexer
		return nil
	}
	var sb strings.Builder
	collectText(&sb, data, "")
	return b.Index(id, map[string]any{"table": table, "text": sb.String()})
}

// collectText appends every string value under v (keys in skipKeys at the top level left
// out), one a line, up to maxRecordText.
func collectText(sb *strings.Builder, v any, key string) {
	if sb.Len() >= maxRecordText {
		return
	}
	switch x := v.(type) {
	case string:
		if x != "" {
			sb.WriteString(x)
			sb.WriteByte('\n')
		}
	case []any:
		for _, e := range x {
			collectText(sb, e, key)
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			if key == "" && skipKeys[k] {
				continue
			}
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			collectText(sb, x[k], k)
		}
	}
}

// AllQuery is one search over several tables.
type AllQuery struct {
	// Text is matched against memory content and record text (English analysis). Required.
	Text string
	// Tables limits the search (memories and RecordTables; empty: all of them).
	Tables []string
	// Limit caps the hits (default 20, at most 1000).
	Limit int
}

// TableHit is one hit of SearchAll.
type TableHit struct {
	Table string
	RowID string
	Score float64
}

// SearchAll runs q over memories and records and returns the rows found, best first.
func (ix *Index) SearchAll(ctx context.Context, q AllQuery) ([]TableHit, error) {
	select {
	case <-ix.closed:
		return nil, ErrClosed
	default:
	}
	text := strings.TrimSpace(q.Text)
	if text == "" {
		return nil, fmt.Errorf("searching: empty query")
	}
	tables := q.Tables
	if len(tables) == 0 {
		tables = append([]string{store.TableMemories}, RecordTables...)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 20
	}
	limit = min(limit, 1000)
	var parts, recs []query.Query
	for _, t := range tables {
		if !Searchable(t) {
			return nil, fmt.Errorf("searching: table %q is not indexed", t)
		}
		if t == store.TableMemories {
			mq := bleve.NewMatchQuery(text)
			mq.SetField("content")
			parts = append(parts, mq)
			continue
		}
		tq := bleve.NewTermQuery(t)
		tq.SetField("table")
		recs = append(recs, tq)
	}
	if len(recs) > 0 {
		mq := bleve.NewMatchQuery(text)
		mq.SetField("text")
		// The tables filter, not scoring: a record's score is its text's, comparable
		// with a memory's content score.
		rq := bleve.NewBooleanQuery()
		rq.AddMust(mq)
		rq.AddFilter(bleve.NewDisjunctionQuery(recs...))
		parts = append(parts, rq)
	}
	var bq query.Query = parts[0]
	if len(parts) > 1 {
		bq = bleve.NewDisjunctionQuery(parts...)
	}
	res, err := ix.bi.SearchInContext(ctx, bleve.NewSearchRequestOptions(bq, limit, 0, false))
	if err != nil {
		return nil, fmt.Errorf("searching: %w", err)
	}
	hits := make([]TableHit, len(res.Hits))
	for i, h := range res.Hits {
		t, r := splitDocID(h.ID)
		hits[i] = TableHit{Table: t, RowID: r, Score: h.Score}
	}
	return hits, nil
}
