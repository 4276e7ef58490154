package exchange

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Limits of Parse.
const (
	// MaxLineBytes caps one line of a JSONL file: a memory's content is at most 64 KiB, which
	// JSON escaping can make up to 6 times longer.
	MaxLineBytes = 1 << 20
	// MaxFileBytes caps a file (Parse holds it whole, as an MCP memory graph must be).
	MaxFileBytes = 256 << 20
)

// ErrUnknownFormat is returned (wrapped) by Parse for a format it does not read, or a file
// whose format Auto cannot tell.
var ErrUnknownFormat = errors.New("unknown format")

// LineError is a bad line of a file: Line is 1-based (0: the file as a whole).
type LineError struct {
	Line int
	Msg  string
}

func (e *LineError) Error() string {
	if e.Line == 0 {
		return e.Msg
	}
	return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
}

func lineErr(line int, format string, a ...any) error {
	return &LineError{Line: line, Msg: fmt.Sprintf(format, a...)}
}

// Item is one memory of a file and the line it starts on.
type Item struct {
	Line   int    `json:"line"`
	Record Record `json:"memory"`
}

// Parsed is a file read by Parse.
type Parsed struct {
	// Format is the format read (never Auto).
	Format string
	Items  []Item
}

// Parse reads a whole file in format (Auto detects it) and maps every memory in it to a
// Record. The first bad line fails it all with a *LineError.
func Parse(r io.Reader, format string) (Parsed, error) {
	if !slices.Contains(Formats, format) {
		return Parsed{}, fmt.Errorf("%w %q: use one of %s", ErrUnknownFormat, format, strings.Join(Formats, ", "))
	}
	data, err := io.ReadAll(io.LimitReader(r, MaxFileBytes+1))
	if err != nil {
		return Parsed{}, fmt.Errorf("reading file: %w", err)
	}
	if len(data) > MaxFileBytes {
		return Parsed{}, lineErr(0, "the file is larger than %d MiB, the most one import reads", MaxFileBytes>>20)
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // a UTF-8 byte order mark
	if len(bytes.TrimSpace(data)) == 0 {
		return Parsed{}, lineErr(0, "the file is empty: nothing to import")
	}
	if format == Auto {
		if format, err = Detect(data); err != nil {
			return Parsed{}, err
		}
	}
	p := Parsed{Format: format}
	switch format {
	case Crow:
		p.Items, err = parseCrow(data)
	case MCPMemory:
		p.Items, err = parseMCP(data)
	case Mem0:
		p.Items, err = parseMem0(data)
	}
	if err != nil {
		return Parsed{}, err
	}
	return p, nil
}

// Detect tells the format of a file from its first line (or, for a JSON document spread
// over lines, from the whole): a crow header or a line with "content" is crow, a line with
// "type" entity or relation is mcp-memory, a JSON array, a {"results"} document or a line
// with "memory" is mem0.
func Detect(data []byte) (string, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		return Mem0, nil
	}
	first, _, _ := bytes.Cut(trimmed, []byte("\n"))
	var probe map[string]json.RawMessage
	if json.Unmarshal(first, &probe) != nil {
		// Not a JSON object on one line: a pretty-printed mem0 document?
		if json.Unmarshal(trimmed, &probe) != nil || (probe["results"] == nil && probe["memories"] == nil) {
			return "", fmt.Errorf("%w: the first line is not a JSON object and the file is not a mem0 export; give --format", ErrUnknownFormat)
		}
		return Mem0, nil
	}
	str := func(k string) string {
		var s string
		_ = json.Unmarshal(probe[k], &s)
		return s
	}
	switch {
	case probe["format"] != nil:
		if str("format") != FormatName {
			return "", fmt.Errorf("%w: the header names format %q, not %q", ErrUnknownFormat, str("format"), FormatName)
		}
		return Crow, nil
	case str("type") == "entity" || str("type") == "relation":
		return MCPMemory, nil
	case probe["results"] != nil || probe["memories"] != nil || probe["memory"] != nil:
		return Mem0, nil
	case probe["content"] != nil:
		return Crow, nil
	}
	return "", fmt.Errorf("%w: line 1 is neither a crow memory, an MCP memory entity or relation, nor a mem0 memory; give --format", ErrUnknownFormat)
}

// lines calls fn with every non-blank line of data and its number.
func lines(data []byte, fn func(n int, line []byte) error) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), MaxLineBytes)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if err := fn(n, line); err != nil {
			return err
		}
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		return lineErr(n+1, "longer than %d KiB, the most one line may have", MaxLineBytes>>10)
	}
	return sc.Err()
}

// decodeLine decodes one JSON object line into v.
func decodeLine(n int, line []byte, v any) error {
	if line[0] != '{' {
		return lineErr(n, "not a JSON object")
	}
	if err := json.Unmarshal(line, v); err != nil {
		return lineErr(n, "bad JSON: %v", err)
	}
	return nil
}

func parseCrow(data []byte) ([]Item, error) {
	var items []Item
	err := lines(data, func(n int, line []byte) error {
		var probe struct {
			Format  *string `json:"format"`
			Version int     `json:"version"`
		}
		if err := decodeLine(n, line, &probe); err != nil {
			return err
		}
		if probe.Format != nil {
			switch {
			case len(items) > 0:
				return lineErr(n, "a header line after memories")
			case *probe.Format != FormatName:
				return lineErr(n, "the header names format %q, not %q", *probe.Format, FormatName)
			case probe.Version < 1:
				return lineErr(n, "the header has no version")
			case probe.Version > Version:
				return lineErr(n, "format version %d was written by a newer crow (this one reads version %d)", probe.Version, Version)
			}
			return nil
		}
		var r Record
		if err := decodeLine(n, line, &r); err != nil {
			return err
		}
		if r.ID == "" {
			return lineErr(n, "no id: a crow memory line has id, content, project, ...")
		}
		items = append(items, Item{Line: n, Record: r})
		return nil
	})
	return items, err
}

// Batches splits items into import calls of at most maxCount items and about maxBytes of
// JSON each (an item larger than maxBytes goes alone).
func Batches(items []Item, maxCount, maxBytes int) [][]Item {
	var out [][]Item
	start, size := 0, 0
	for i, it := range items {
		n := 256 + 2*len(it.Record.Content) // escaping, the other fields
		if i > start && (i-start >= maxCount || size+n > maxBytes) {
			out = append(out, items[start:i])
			start, size = i, 0
		}
		size += n
	}
	if start < len(items) {
		out = append(out, items[start:])
	}
	return out
}
