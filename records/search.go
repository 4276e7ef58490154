package records

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/crow-sync/crow/clock"
	"github.com/crow-sync/crow/search"
	"github.com/crow-sync/crow/store"
)

// SearchTables are the tables one search covers: memories and every record table.
func SearchTables() []string {
	return append([]string{store.TableMemories}, search.RecordTables...)
}

// SearchOptions is one search over several tables.
type SearchOptions struct {
	// Query is the words to find (English analysis: stemming, stop words). Required.
	Query string
	// Tables limits the search (SearchTables; empty: all).
	Tables []string
	// Limit caps the hits (default 20, at most 1000).
	Limit int
}

// Hit is one row found.
type Hit struct {
	Table string `json:"table"`
	ID    string `json:"id"`
	// Title names the row (a note's title, a contact's name, a memory's first line…).
	Title string `json:"title"`
	// Snippet is a short excerpt of its text, around the first word found.
	Snippet string  `json:"snippet"`
	Score   float64 `json:"score"`
}

// Snippet and title lengths (bytes, cut at a rune).
const (
	snippetLen = 240
	titleLen   = 120
)

// Search finds rows of every indexed table (or of o.Tables), best first. It sees every
// write committed before it was called (read-your-writes).
func (s *Service) Search(ctx context.Context, o SearchOptions) ([]Hit, error) {
	q := strings.TrimSpace(o.Query)
	if q == "" {
		return nil, invalid("q", "is required: the words to search for")
	}
	for _, t := range o.Tables {
		if !search.Searchable(t) {
			return nil, invalid("tables", "%q is not searchable; tables: %s", t, strings.Join(SearchTables(), ", "))
		}
	}
	head, _ := s.db.QueueHead()
	wctx, cancel := clock.WithTimeout(ctx, s.clk, s.wait)
	defer cancel()
	if err := s.idx.WaitFor(wctx, head); err != nil {
		return nil, fmt.Errorf("searching: %w", err)
	}
	found, err := s.idx.SearchAll(ctx, search.AllQuery{Text: q, Tables: o.Tables, Limit: o.Limit})
	if err != nil {
		return nil, err
	}
	out := make([]Hit, 0, len(found))
	err = s.db.View(func(txn *store.Txn) error {
		for _, h := range found {
			r, err := txn.GetRow(h.Table, h.RowID)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			var data map[string]json.RawMessage
			if r.Deleted || json.Unmarshal(r.Data, &data) != nil {
				continue // deleted since the search: the index drops it
			}
			title, body := describe(h.Table, data)
			out = append(out, Hit{Table: h.Table, ID: h.RowID, Title: cut(title, titleLen),
				Snippet: snippet(body, q), Score: h.Score})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("loading search hits: %w", err)
	}
	return out, nil
}

// describe gives the title and the text of a row of table.
func describe(table string, data map[string]json.RawMessage) (title, body string) {
	str := func(k string) string {
		var v string
		if json.Unmarshal(data[k], &v) != nil {
			return ""
		}
		return v
	}
	switch table {
	case store.TableMemories:
		body = str("content")
		title, _, _ = strings.Cut(strings.TrimSpace(body), "\n")
		return title, body
	case store.TableCrowContext:
		title = str("section")
		for _, k := range []string{"device", "project"} {
			if v := str(k); v != "" {
				title += " · " + k + " " + v
			}
		}
		return title, str("content")
	}
	sp, ok := SpecOf(table)
	if !ok {
		return "", ""
	}
	title = str(sp.Title)
	if title == "" && sp.Alt != "" {
		title = str(sp.Alt)
	}
	if f := sp.Field(sp.Body); f != nil && f.Type == Value {
		body = string(data[sp.Body])
	} else {
		body = str(sp.Body)
	}
	if body == "" { // no body: the other text fields, as indexed
		var parts []string
		for _, f := range sp.Fields {
			if v := str(f.Name); v != "" && f.Name != sp.Title {
				parts = append(parts, v)
			}
		}
		body = strings.Join(parts, " · ")
	}
	return title, body
}

// snippet is up to snippetLen bytes of text around the first word of q found in it (the
// start of text when none is found as typed, say only by its stem).
func snippet(text, q string) string {
	text = strings.Join(strings.Fields(text), " ")
	if len(text) <= snippetLen {
		return text
	}
	lower := strings.ToLower(text)
	at := -1
	for _, w := range strings.FieldsFunc(strings.ToLower(q), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if i := strings.Index(lower, w); i >= 0 && (at < 0 || i < at) {
			at = i
		}
	}
	start := 0
	if at > snippetLen/3 {
		start = at - snippetLen/3
		for start < len(text) && !utf8.RuneStart(text[start]) {
			start++
		}
	}
	out := cut(text[start:], snippetLen)
	if start > 0 {
		out = "…" + out
	}
	return out
}

// cut shortens s to at most n bytes at a rune boundary, marking the cut with "…".
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
