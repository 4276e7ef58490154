package exchange

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/crow-sync/crow/memory"
)

// The crow format's header.
const (
	FormatName = "crow-memories"
	Version    = 1
)

// Format names (the --format flag; Auto detects).
const (
	Auto      = "auto"
	Crow      = "crow"
	MCPMemory = "mcp-memory"
	Mem0      = "mem0"
)

// Formats are the formats Parse reads, Auto first.
var Formats = []string{Auto, Crow, MCPMemory, Mem0}

// Header is the first line of a crow export.
type Header struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
}

// Record is one memory as the crow format writes it, one JSON object a line; the input of
// memory.import. Compatibility: within version 1 fields are only added, never renamed or
// retyped, and readers ignore fields they do not know.
type Record struct {
	ID string `json:"id"`
	// Number and EventHash are home's numbering when it was exported (informational).
	Number      *uint64 `json:"number,omitempty"`
	EventHash   *string `json:"event_hash,omitempty"`
	Project     string  `json:"project"`
	Content     string  `json:"content"`
	ContentHash string  `json:"content_hash,omitempty"`
	Category    string  `json:"category,omitempty"`
	// Importance is 1-10; absent (null or 0) is the default 5.
	Importance *int     `json:"importance,omitempty"`
	Tags       []string `json:"tags"`
	Source     string   `json:"source,omitempty"`
	// Origin is the instance that created it (informational: the importer is the new origin).
	Origin    string    `json:"origin,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// FromMemory is the record of a memory.
func FromMemory(m memory.Memory) Record {
	imp := m.Importance
	tags := m.Tags
	if tags == nil {
		tags = []string{}
	}
	return Record{ID: m.ID, Number: m.Number, EventHash: m.EventHash, Project: m.Project, Content: m.Content,
		ContentHash: m.ContentHash, Category: m.Category, Importance: &imp, Tags: tags, Source: m.Source,
		Origin: m.Origin, CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt}
}

// Import is what memory.Service.Import takes of r: project, when not empty, replaces r's;
// source fills r's when it has none. A content_hash that does not match the content is
// refused (the record was altered or cut).
func (r Record) Import(project, source string) (memory.ImportRecord, error) {
	if r.ContentHash != "" && r.ContentHash != memory.ContentHash(r.Content) {
		return memory.ImportRecord{}, &memory.ValidationError{Field: "content_hash", Message: "does not match the content (the record was altered or cut)"}
	}
	in := memory.CreateInput{Content: r.Content, Project: r.Project, Category: r.Category, Tags: r.Tags, Source: r.Source}
	if r.Importance != nil && *r.Importance != 0 {
		imp := *r.Importance
		in.Importance = &imp
	}
	if project != "" {
		in.Project = project
	}
	if in.Source == "" {
		in.Source = source
	}
	return memory.ImportRecord{ID: r.ID, CreateInput: in, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}, nil
}

// WriteHeader writes the header line of a crow export.
func WriteHeader(w io.Writer) error {
	return writeLine(w, Header{Format: FormatName, Version: Version})
}

// WriteRecord writes one record line.
func WriteRecord(w io.Writer, r Record) error { return writeLine(w, r) }

func writeLine(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // Encode ends the line
		return err
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("writing export: %w", err)
	}
	return nil
}

// Outcome is what an import did with one line.
type Outcome struct {
	Line    int                  `json:"line"`
	ID      string               `json:"id"`
	Outcome memory.ImportOutcome `json:"outcome"`
}

// Result counts what an import did (or, in a dry run, would do).
type Result struct {
	Imported   int       `json:"imported"`
	Duplicates int       `json:"duplicates"`
	Refused    int       `json:"refused"`
	DryRun     bool      `json:"dry_run"`
	Items      []Outcome `json:"items"`
}

// Record counts one outcome.
func (r *Result) Record(o Outcome) {
	switch o.Outcome {
	case memory.Imported:
		r.Imported++
	case memory.Duplicate:
		r.Duplicates++
	case memory.Refused:
		r.Refused++
	}
	r.Items = append(r.Items, o)
}

// Add counts another batch's result.
func (r *Result) Add(o Result) {
	r.DryRun = o.DryRun
	for _, it := range o.Items {
		r.Record(it)
	}
}

// Import maps the items of one batch to what memory.Service.Import takes (see Record.Import);
// a bad item fails with a *LineError naming its line.
func Import(items []Item, project, source string) ([]memory.ImportRecord, error) {
	out := make([]memory.ImportRecord, len(items))
	for i, it := range items {
		rec, err := it.Record.Import(project, source)
		if err != nil {
			return nil, lineErr(it.Line, "%v", err)
		}
		out[i] = rec
	}
	return out, nil
}

// Outcomes pairs the items of a batch with what memory.Service.Import did with them.
func Outcomes(items []Item, outs []memory.ImportOutcome) Result {
	var r Result
	r.Items = make([]Outcome, 0, len(items))
	for i, it := range items {
		r.Record(Outcome{Line: it.Line, ID: it.Record.ID, Outcome: outs[i]})
	}
	return r
}
