package exchange

import (
	"crypto/sha256"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/crow-sync/crow/memory"
)

// An MCP memory line (@modelcontextprotocol/server-memory's memory.jsonl): an entity or a
// relation between two entities, named by their names.
type mcpLine struct {
	Type         string   `json:"type"`
	Name         string   `json:"name"`
	EntityType   string   `json:"entityType"`
	Observations []string `json:"observations"`
	From         string   `json:"from"`
	To           string   `json:"to"`
	RelationType string   `json:"relationType"`
}

type mcpEntity struct {
	line      int
	name, typ string
	obs       []string
	rels      []string
}

// The category and tag of memories from an MCP memory graph.
const (
	mcpTag              = "mcp-memory"
	mcpEntityCategory   = "entity"
	mcpRelationCategory = "relation"
)

func parseMCP(data []byte) ([]Item, error) {
	var order []*mcpEntity
	byName := map[string]*mcpEntity{}
	type rel struct {
		line          int
		from, typ, to string
	}
	var rels []rel
	err := lines(data, func(n int, line []byte) error {
		var l mcpLine
		if err := decodeLine(n, line, &l); err != nil {
			return err
		}
		switch l.Type {
		case "entity":
			if strings.TrimSpace(l.Name) == "" {
				return lineErr(n, "an entity without a name")
			}
			e := byName[l.Name]
			if e == nil { // a name seen twice: one memory, the observations of both
				e = &mcpEntity{line: n, name: l.Name, typ: l.EntityType}
				byName[l.Name] = e
				order = append(order, e)
			}
			for _, o := range l.Observations {
				if o = strings.TrimSpace(o); o != "" && !contains(e.obs, o) {
					e.obs = append(e.obs, o)
				}
			}
		case "relation":
			if strings.TrimSpace(l.From) == "" || strings.TrimSpace(l.To) == "" || strings.TrimSpace(l.RelationType) == "" {
				return lineErr(n, "a relation needs from, to and relationType")
			}
			rels = append(rels, rel{line: n, from: l.From, typ: l.RelationType, to: l.To})
		default:
			return lineErr(n, "type %q: an MCP memory line is an \"entity\" or a \"relation\"", l.Type)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var items []Item
	var loose []Item
	for _, r := range rels {
		text := r.from + " " + r.typ + " " + r.to
		if e := byName[r.from]; e != nil {
			if !contains(e.rels, text) {
				e.rels = append(e.rels, text)
			}
			continue
		}
		// The source entity is not in the file: the relation is a memory of its own.
		id := memory.DerivedID(time.Time{}, sha256.Sum256([]byte("mcp-memory\x00relation\x00"+r.from+"\x00"+r.typ+"\x00"+r.to)))
		if containsID(loose, id) {
			continue
		}
		loose = append(loose, Item{Line: r.line, Record: Record{ID: id, Content: text,
			Category: mcpRelationCategory, Tags: []string{mcpTag}}})
	}
	for _, e := range order {
		var b strings.Builder
		b.WriteString(e.name)
		if e.typ != "" {
			b.WriteString(" (" + e.typ + ")")
		}
		for _, o := range e.obs {
			b.WriteString("\n- " + o)
		}
		if len(e.rels) > 0 {
			b.WriteString("\nRelations:")
			for _, r := range e.rels {
				b.WriteString("\n- " + r)
			}
		}
		tags := []string{mcpTag}
		if t := tagOf(e.typ); t != "" && t != mcpTag {
			tags = append(tags, t)
		}
		id := memory.DerivedID(time.Time{}, sha256.Sum256([]byte("mcp-memory\x00entity\x00"+e.name)))
		items = append(items, Item{Line: e.line, Record: Record{ID: id, Content: b.String(),
			Category: mcpEntityCategory, Tags: tags}})
	}
	return append(items, loose...), nil
}

// tagOf makes a tag of a foreign label: control characters become spaces, outer spaces go,
// and it is cut to memory.MaxTagLen characters ("" if nothing is left).
func tagOf(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return ' '
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) > memory.MaxTagLen {
		s = strings.TrimSpace(string([]rune(s)[:memory.MaxTagLen]))
	}
	return s
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func containsID(items []Item, id string) bool {
	for _, it := range items {
		if it.Record.ID == id {
			return true
		}
	}
	return false
}
