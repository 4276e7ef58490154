package memory

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/crow-sync/crow/store"
)

// Limits on memory fields.
const (
	MaxContentBytes = 64 << 10
	MaxTags         = 32
	MaxTagLen       = 64
	MaxProjectLen   = 128
	MaxCategoryLen  = 64

	DefaultProject    = "default"
	DefaultCategory   = "general"
	DefaultImportance = 5
)

// Sources a memory can come from.
const (
	SourceExtension = "extension"
	SourceMCP       = "mcp"
	SourceAPI       = "api"
	SourceCLI       = "cli"
)

// ErrNotFound is returned when a memory does not exist or was deleted. It is store.ErrNotFound,
// so errors.Is works with either.
var ErrNotFound = store.ErrNotFound

// Memory is one memory as callers see it.
type Memory struct {
	ID string `json:"id"`
	// Number is the per-user sequence number home assigns; nil until home has seen it.
	Number      *uint64  `json:"number"`
	Project     string   `json:"project"`
	Content     string   `json:"content"`
	ContentHash string   `json:"content_hash"` // SHA-256 of Content, hex
	Category    string   `json:"category"`
	Importance  int      `json:"importance"`
	Tags        []string `json:"tags"`
	Source      string   `json:"source"`
	// Origin is the instance that created the memory.
	Origin    string    `json:"origin"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// EventHash is set by home when it numbers the memory; nil until then.
	EventHash *string `json:"event_hash"`
	// Supersedes and SupersededBy are set on a version read by number (Service.GetVersion):
	// the numbers of the memory's previous and next versions. Absent on the live memory.
	Supersedes   *uint64 `json:"supersedes,omitempty"`
	SupersededBy *uint64 `json:"superseded_by,omitempty"`
	// ForgottenAt (RFC 3339) is set on a version whose content a forget erased.
	ForgottenAt string `json:"forgotten_at,omitempty"`
}

// rowData is the memories row data (see the package doc).
type rowData struct {
	ID          string    `json:"id"`
	Project     string    `json:"project"`
	Content     string    `json:"content"`
	ContentHash string    `json:"content_hash"`
	Category    string    `json:"category"`
	Importance  int       `json:"importance"`
	Tags        []string  `json:"tags"`
	Source      string    `json:"source"`
	Origin      string    `json:"origin"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

func (d rowData) memory() Memory {
	tags := d.Tags
	if tags == nil {
		tags = []string{}
	}
	return Memory{ID: d.ID, Project: d.Project, Content: d.Content, ContentHash: d.ContentHash,
		Category: d.Category, Importance: d.Importance, Tags: tags, Source: d.Source,
		Origin: d.Origin, CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt}
}

// ContentHash returns the hex SHA-256 of content.
func ContentHash(content string) string {
	h := sha256.Sum256([]byte(content))
	return hex.EncodeToString(h[:])
}

// ValidationError is returned for bad input. Field names the offending input field (JSON
// name), Message says what is wrong; gateways map it to 400 {"error": Error()}.
type ValidationError struct {
	Field   string
	Message string
}

func (e *ValidationError) Error() string {
	if e.Field == "" {
		return e.Message
	}
	return e.Field + ": " + e.Message
}

func invalid(field, format string, a ...any) error {
	return &ValidationError{Field: field, Message: fmt.Sprintf(format, a...)}
}

// CreateInput is the input of Service.Add. Zero values take the defaults: project
// "default", category "general", importance 5, source "api".
type CreateInput struct {
	Content    string   `json:"content"`
	Project    string   `json:"project,omitempty"`
	Category   string   `json:"category,omitempty"`
	Importance *int     `json:"importance,omitempty"`
	Tags       []string `json:"tags,omitempty"`
	Source     string   `json:"source,omitempty"`
}

// PatchInput is the input of Service.Update: nil fields are left unchanged. The source and
// creation time of a memory cannot change.
type PatchInput struct {
	Content    *string   `json:"content,omitempty"`
	Project    *string   `json:"project,omitempty"`
	Category   *string   `json:"category,omitempty"`
	Importance *int      `json:"importance,omitempty"`
	Tags       *[]string `json:"tags,omitempty"`
}

func validContent(c string) error {
	if strings.TrimSpace(c) == "" {
		return invalid("content", "is required and must not be empty")
	}
	if len(c) > MaxContentBytes {
		return invalid("content", "is %d bytes, more than the %d allowed", len(c), MaxContentBytes)
	}
	if !utf8.ValidString(c) {
		return invalid("content", "is not valid UTF-8")
	}
	return nil
}

// validName checks a short identifier-like field (project, category, tag).
func validName(field, v string, maxLen int) error {
	if v == "" || strings.TrimSpace(v) != v {
		return invalid(field, "must be non-empty without leading or trailing spaces")
	}
	if utf8.RuneCountInString(v) > maxLen {
		return invalid(field, "is longer than %d characters", maxLen)
	}
	if !utf8.ValidString(v) {
		return invalid(field, "is not valid UTF-8")
	}
	for _, r := range v {
		if unicode.IsControl(r) {
			return invalid(field, "contains a control character")
		}
	}
	return nil
}

func validImportance(i int) error {
	if i < 1 || i > 10 {
		return invalid("importance", "must be between 1 and 10, got %d", i)
	}
	return nil
}

// normTags validates tags and removes duplicates, keeping order.
func normTags(tags []string) ([]string, error) {
	if len(tags) > MaxTags {
		return nil, invalid("tags", "has %d tags, more than the %d allowed", len(tags), MaxTags)
	}
	out := make([]string, 0, len(tags))
	seen := map[string]bool{}
	for i, t := range tags {
		if err := validName(fmt.Sprintf("tags[%d]", i), t, MaxTagLen); err != nil {
			return nil, err
		}
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out, nil
}

// normalize validates in and fills defaults.
func (in CreateInput) normalize() (rowData, error) {
	d := rowData{Content: in.Content, Project: in.Project, Category: in.Category,
		Importance: DefaultImportance, Source: in.Source}
	if err := validContent(d.Content); err != nil {
		return d, err
	}
	if d.Project == "" {
		d.Project = DefaultProject
	}
	if err := validName("project", d.Project, MaxProjectLen); err != nil {
		return d, err
	}
	if d.Category == "" {
		d.Category = DefaultCategory
	}
	if err := validName("category", d.Category, MaxCategoryLen); err != nil {
		return d, err
	}
	if in.Importance != nil {
		d.Importance = *in.Importance
	}
	if err := validImportance(d.Importance); err != nil {
		return d, err
	}
	var err error
	if d.Tags, err = normTags(in.Tags); err != nil {
		return d, err
	}
	switch d.Source {
	case "":
		d.Source = SourceAPI
	case SourceExtension, SourceMCP, SourceAPI, SourceCLI:
	default:
		return d, invalid("source", "must be one of extension, mcp, api, cli; got %q", d.Source)
	}
	d.ContentHash = ContentHash(d.Content)
	return d, nil
}

// validate checks p without applying it.
func (p PatchInput) validate() error {
	if p.Content == nil && p.Project == nil && p.Category == nil && p.Importance == nil && p.Tags == nil {
		return invalid("", "nothing to update")
	}
	if p.Content != nil {
		if err := validContent(*p.Content); err != nil {
			return err
		}
	}
	if p.Project != nil {
		if err := validName("project", *p.Project, MaxProjectLen); err != nil {
			return err
		}
	}
	if p.Category != nil {
		if err := validName("category", *p.Category, MaxCategoryLen); err != nil {
			return err
		}
	}
	if p.Importance != nil {
		if err := validImportance(*p.Importance); err != nil {
			return err
		}
	}
	if p.Tags != nil {
		if _, err := normTags(*p.Tags); err != nil {
			return err
		}
	}
	return nil
}

// apply returns d patched by p (already validated).
func (p PatchInput) apply(d rowData) rowData {
	if p.Content != nil {
		d.Content = *p.Content
		d.ContentHash = ContentHash(d.Content)
	}
	if p.Project != nil {
		d.Project = *p.Project
	}
	if p.Category != nil {
		d.Category = *p.Category
	}
	if p.Importance != nil {
		d.Importance = *p.Importance
	}
	if p.Tags != nil {
		d.Tags, _ = normTags(*p.Tags)
	}
	return d
}
