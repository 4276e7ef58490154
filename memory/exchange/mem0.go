package exchange

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/crow-sync/crow/memory"
)

// mem0Memory is one memory of a mem0 export (Memory.get_all / the platform's GET
// /v1/memories/ and its export): id, memory, user_id, agent_id, run_id, hash, metadata,
// categories, created_at, updated_at.
type mem0Memory struct {
	ID         string          `json:"id"`
	Memory     *string         `json:"memory"`
	UserID     string          `json:"user_id"`
	Categories []string        `json:"categories"`
	Metadata   json.RawMessage `json:"metadata"`
	CreatedAt  *string         `json:"created_at"`
	UpdatedAt  *string         `json:"updated_at"`
}

const mem0Tag = "mem0"

func parseMem0(data []byte) ([]Item, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if trimmed[0] == '[' {
		return mem0Array(data, len(data)-len(trimmed))
	}
	// A {"results": [...]} document (on one line or many), else one memory a line.
	var doc map[string]json.RawMessage
	if json.Unmarshal(trimmed, &doc) == nil && doc["memory"] == nil {
		for _, k := range []string{"results", "memories"} {
			if raw, ok := doc[k]; ok {
				start := bytes.Index(data, raw) // where the array starts, for line numbers
				if len(raw) == 0 || raw[0] != '[' || start < 0 {
					return nil, lineErr(0, "%q is not a list of mem0 memories", k)
				}
				return mem0Array(data, start)
			}
		}
		return nil, lineErr(1, "a mem0 export is a list of memories, a {\"results\": [...]} document or one memory a line")
	}
	var items []Item
	err := lines(data, func(n int, line []byte) error {
		var m mem0Memory
		if err := decodeLine(n, line, &m); err != nil {
			return err
		}
		it, err := m.item(n)
		if err != nil {
			return err
		}
		items = append(items, it)
		return nil
	})
	return items, err
}

// mem0Array reads the JSON array of mem0 memories at data[start:].
func mem0Array(data []byte, start int) ([]Item, error) {
	dec := json.NewDecoder(bytes.NewReader(data[start:]))
	lineAt := func(off int64) int {
		i := start + int(off)
		for i < len(data) && strings.ContainsRune(" \t\r\n,[", rune(data[i])) {
			i++
		}
		return 1 + bytes.Count(data[:min(i, len(data))], []byte("\n"))
	}
	if _, err := dec.Token(); err != nil { // [
		return nil, lineErr(lineAt(0), "bad JSON: %v", err)
	}
	var items []Item
	for dec.More() {
		n := lineAt(dec.InputOffset())
		var m mem0Memory
		if err := dec.Decode(&m); err != nil {
			return nil, lineErr(n, "bad JSON: %v", err)
		}
		it, err := m.item(n)
		if err != nil {
			return nil, err
		}
		items = append(items, it)
	}
	if _, err := dec.Token(); err != nil { // ]
		return nil, lineErr(lineAt(dec.InputOffset()), "bad JSON: %v", err)
	}
	return items, nil
}

// item maps a mem0 memory (see the package doc).
func (m mem0Memory) item(line int) (Item, error) {
	if m.Memory == nil {
		return Item{}, lineErr(line, "a mem0 memory without \"memory\" (its text)")
	}
	created, err := mem0Time(m.CreatedAt)
	if err != nil {
		return Item{}, lineErr(line, "created_at: %v", err)
	}
	updated, err := mem0Time(m.UpdatedAt)
	if err != nil {
		return Item{}, lineErr(line, "updated_at: %v", err)
	}
	key := m.ID
	if key == "" { // no id: the text and time name it
		key = "\x00" + *m.Memory + "\x00" + created.String()
	}
	r := Record{ID: memory.DerivedID(created, sha256.Sum256([]byte("mem0\x00"+key))), Content: *m.Memory,
		Tags: []string{mem0Tag}, CreatedAt: created, UpdatedAt: updated}
	for _, c := range m.Categories {
		if t := tagOf(c); t != "" && len(t) <= memory.MaxCategoryLen {
			if r.Category == "" {
				r.Category = t
			}
			if !contains(r.Tags, t) {
				r.Tags = append(r.Tags, t)
			}
		}
	}
	if u := tagOf("user:" + m.UserID); m.UserID != "" && !contains(r.Tags, u) {
		r.Tags = append(r.Tags, u)
	}
	return Item{Line: line, Record: r}, nil
}

// mem0Time reads a mem0 timestamp: RFC 3339, or Python's isoformat without a zone (UTC).
func mem0Time(s *string) (time.Time, error) {
	if s == nil || *s == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999"} {
		if t, err := time.Parse(layout, *s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not an RFC 3339 time", *s)
}
