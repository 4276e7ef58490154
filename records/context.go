package records

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"unicode"

	"github.com/crow-sync/crow/store"
)

// crow_context rows (SPEC §5): what an AI client should know in a context, keyed by
// (section, device, project). The row id is derived from the key alone, so every instance
// writes one key to one row, and the apply loop keeps the last write (by lamport, then
// instance id) without conflict records.

// Context limits.
const (
	MaxContextPart    = 128
	MaxContextContent = 64 << 10
)

// ContextKey is the composite key of a crow_context row. Section is required; an empty
// Device or Project means "every device" / "every project".
type ContextKey struct {
	Section string `json:"section"`
	Device  string `json:"device"`
	Project string `json:"project"`
}

// ContextRowID is the row id of key: "ctx-" and the hex SHA-256 of the three parts, each
// ended by a NUL (parts never hold one), so two keys never share a row.
func ContextRowID(k ContextKey) string {
	h := sha256.Sum256([]byte(k.Section + "\x00" + k.Device + "\x00" + k.Project + "\x00"))
	return "ctx-" + hex.EncodeToString(h[:])
}

func checkPart(field, v string, required bool) error {
	switch {
	case required && strings.TrimSpace(v) == "":
		return invalid(field, "is required")
	case len(v) > MaxContextPart:
		return invalid(field, "is %d bytes, at most %d", len(v), MaxContextPart)
	case strings.TrimSpace(v) != v || strings.ContainsFunc(v, unicode.IsControl):
		return invalid(field, "%q: no control characters, no leading or trailing spaces", v)
	}
	return nil
}

// Check checks a key (also a filter's parts: section then not required).
func (k ContextKey) check(filter bool) error {
	if err := checkPart("section", k.Section, !filter); err != nil {
		return err
	}
	if err := checkPart("device", k.Device, false); err != nil {
		return err
	}
	return checkPart("project", k.Project, false)
}

// SetContext writes content at key, replacing what was there (last write wins).
func (s *Service) SetContext(ctx context.Context, k ContextKey, content string) (Record, error) {
	if err := k.check(false); err != nil {
		return Record{}, err
	}
	switch {
	case strings.TrimSpace(content) == "":
		return Record{}, invalid("content", "is required")
	case len(content) > MaxContextContent:
		return Record{}, invalid("content", "is %d bytes, at most %d", len(content), MaxContextContent)
	}
	data := map[string]json.RawMessage{"section": mustJSON(k.Section), "device": mustJSON(k.Device),
		"project": mustJSON(k.Project), "content": mustJSON(content)}
	return s.put(ctx, store.TableCrowContext, ContextRowID(k), data)
}

// GetContext returns the row at key; ErrNotFound (wrapped) if none.
func (s *Service) GetContext(_ context.Context, k ContextKey) (Record, error) {
	if err := k.check(false); err != nil {
		return Record{}, err
	}
	return s.get(store.TableCrowContext, ContextRowID(k))
}

// DeleteContext deletes the row at key; ErrNotFound (wrapped) if none.
func (s *Service) DeleteContext(ctx context.Context, k ContextKey) error {
	if err := k.check(false); err != nil {
		return err
	}
	return s.delete(ctx, store.TableCrowContext, ContextRowID(k))
}

// ContextFilter selects crow_context rows: each part given must match exactly (nil: any).
type ContextFilter struct {
	Section, Device, Project *string
}

// ListContext returns the live crow_context rows matching f, a page at a time (row id
// order: stable, not meaningful).
func (s *Service) ListContext(_ context.Context, f ContextFilter, o ListOptions) (Page, error) {
	for _, p := range []struct {
		name string
		v    *string
	}{{"section", f.Section}, {"device", f.Device}, {"project", f.Project}} {
		if p.v != nil {
			if err := checkPart(p.name, *p.v, false); err != nil {
				return Page{}, err
			}
		}
	}
	o.Match = func(data map[string]json.RawMessage) bool {
		for _, p := range []struct {
			name string
			v    *string
		}{{"section", f.Section}, {"device", f.Device}, {"project", f.Project}} {
			var got string
			if p.v != nil && (json.Unmarshal(data[p.name], &got) != nil || got != *p.v) {
				return false
			}
		}
		return true
	}
	return s.list(store.TableCrowContext, o)
}
