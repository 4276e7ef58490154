package records

import (
	"encoding/json"
	"fmt"
	"net/mail"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/crow-sync/crow/store"
)

// Type is the JSON type of a field's value.
type Type int

const (
	String  Type = iota // a string
	Strings             // a list of strings
	Value               // any JSON value but null
)

// Format is a rule on a string field's form.
type Format int

const (
	Plain Format = iota
	URL          // an absolute URL: a scheme, then a host or an opaque part
	Email        // one bare e-mail address (name@domain)
	Slug         // lowercase letters, digits and single hyphens: "my-first-post"
	Key          // no control characters, not blank
)

// Field is the rule of one field of a table's rows.
type Field struct {
	Name     string
	Type     Type
	Required bool
	// MaxLen caps a string (bytes; for Strings, each item); MaxItems a list.
	MaxLen, MaxItems int
	Enum             []string
	Format           Format
	// Default is the value of a required field left out at creation ("" for none).
	Default string
	// Desc says what the field holds.
	Desc string
}

// Spec is the rules of one table's rows.
type Spec struct {
	Table string
	// Singular names one row in messages ("note").
	Singular string
	// Title is the field a search hit is titled with (Alt when it is empty); Body the field
	// its snippet is cut from.
	Title, Alt, Body string
	// KeyField, if set, is the field whose value is the row id (settings: key); otherwise
	// ids are ULIDs made at creation.
	KeyField string
	Fields   []Field
}

// Field returns the rule of field name (nil: an extra field, kept as given).
func (s *Spec) Field(name string) *Field {
	for i := range s.Fields {
		if s.Fields[i].Name == name {
			return &s.Fields[i]
		}
	}
	return nil
}

// Limits shared by the tables (the app's input tags are pinned to them by its tests).
const (
	MaxTitle   = 512
	MaxText    = 64 << 10  // note content, source summary, contact notes
	MaxBody    = 192 << 10 // fits a REST body (256 KiB) with the other fields
	MaxProject = 128
	MaxTags    = 32
	MaxTag     = 64
	MaxURL     = 2048
	MaxName    = 256
	MaxEmail   = 256
	MaxPhone   = 64
	MaxSlug    = 128
	MaxKey     = 256
	MaxValue   = 64 << 10 // a setting's value, as JSON
	// MaxExtra caps the encoded size of a row's extra fields together.
	MaxExtra = 64 << 10
)

func tags() Field {
	return Field{Name: "tags", Type: Strings, MaxItems: MaxTags, MaxLen: MaxTag, Desc: "Up to 32 tags of 1-64 characters."}
}

// The tables with typed operations. Every row keeps extra fields besides these.
var (
	Notes = &Spec{Table: store.TableNotes, Singular: "note", Title: "title", Body: "content", Fields: []Field{
		{Name: "title", Required: true, MaxLen: MaxTitle, Desc: "A short title."},
		{Name: "content", Required: true, MaxLen: MaxText, Desc: "The note's text."},
		{Name: "project", MaxLen: MaxProject, Desc: "Project the note belongs to."},
		tags(),
	}}
	Sources = &Spec{Table: store.TableSources, Singular: "source", Title: "title", Alt: "url", Body: "summary", Fields: []Field{
		{Name: "url", Required: true, MaxLen: MaxURL, Format: URL, Desc: "Where it is: an absolute URL (https://…, doi:…)."},
		{Name: "title", MaxLen: MaxTitle, Desc: "Its title."},
		{Name: "summary", MaxLen: MaxText, Desc: "What it says, or why it matters."},
		{Name: "project", MaxLen: MaxProject, Desc: "Project it belongs to."},
		tags(),
	}}
	Contacts = &Spec{Table: store.TableContacts, Singular: "contact", Title: "name", Body: "notes", Fields: []Field{
		{Name: "name", Required: true, MaxLen: MaxName, Desc: "The person's or organisation's name."},
		{Name: "email", MaxLen: MaxEmail, Format: Email, Desc: "One e-mail address (name@example.org)."},
		{Name: "phone", MaxLen: MaxPhone, Desc: "A phone number."},
		{Name: "organization", MaxLen: MaxName, Desc: "Where they work."},
		{Name: "notes", MaxLen: MaxText, Desc: "Anything worth remembering about them."},
		tags(),
	}}
	Settings = &Spec{Table: store.TableSettings, Singular: "setting", Title: "key", Body: "value", KeyField: "key", Fields: []Field{
		{Name: "key", Required: true, MaxLen: MaxKey, Format: Key, Desc: "The setting's name (its row id)."},
		{Name: "value", Type: Value, Required: true, MaxLen: MaxValue, Desc: "Its value: any JSON value but null."},
	}}
	BlogPosts = &Spec{Table: store.TableBlogPosts, Singular: "blog post", Title: "title", Body: "body", Fields: []Field{
		{Name: "title", Required: true, MaxLen: MaxTitle, Desc: "The post's title."},
		{Name: "slug", Required: true, MaxLen: MaxSlug, Format: Slug, Desc: "Its URL name: lowercase letters, digits and hyphens (default: made from the title)."},
		{Name: "body", Required: true, MaxLen: MaxBody, Desc: "The post's text (Markdown)."},
		{Name: "status", Required: true, Enum: []string{"draft", "published"}, Default: "draft", Desc: "draft (default) or published."},
		tags(),
	}}
)

// Specs are the tables with typed operations.
var Specs = []*Spec{Notes, Sources, Contacts, Settings, BlogPosts}

// SpecOf returns the rules of table (ok false: no typed operations).
func SpecOf(table string) (*Spec, bool) {
	for _, s := range Specs {
		if s.Table == table {
			return s, true
		}
	}
	return nil, false
}

// Stamped fields: the service sets them, a caller may not.
const (
	FieldCreatedAt = "created_at"
	FieldUpdatedAt = "updated_at"
)

var slugRE = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// Slugify makes a slug of s: lowercase ASCII letters and digits, the rest one hyphen.
func Slugify(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		switch {
		case r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
		default:
			dash = true
		}
		if b.Len() >= MaxSlug {
			break
		}
	}
	return strings.TrimRight(b.String()[:min(b.Len(), MaxSlug)], "-")
}

// normalize checks data (a whole row, as the caller gives it: the fields of Spec and extra
// ones) and fills the defaults of a new row (create). It returns the first problem.
func (s *Spec) normalize(data map[string]json.RawMessage, create bool) error {
	for _, k := range []string{FieldCreatedAt, FieldUpdatedAt} {
		if _, ok := data[k]; ok {
			return invalid(k, "is set by crow")
		}
	}
	if s.Table == store.TableBlogPosts && create {
		if _, ok := data["slug"]; !ok {
			var title string
			if json.Unmarshal(data["title"], &title) == nil {
				if slug := Slugify(title); slug != "" {
					data["slug"] = mustJSON(slug)
				}
			}
		}
	}
	extra := 0
	for k, v := range data {
		if s.Field(k) == nil {
			if strings.TrimSpace(k) == "" {
				return invalid(k, "an extra field needs a name")
			}
			extra += len(k) + len(v)
		}
	}
	if extra > MaxExtra {
		return invalid("", "extra fields take %d bytes, at most %d", extra, MaxExtra)
	}
	for i := range s.Fields {
		f := &s.Fields[i]
		v, ok := data[f.Name]
		if ok && string(v) == "null" {
			delete(data, f.Name)
			ok = false
		}
		if !ok && create && f.Default != "" {
			v, ok = mustJSON(f.Default), true
		}
		if !ok {
			if f.Required {
				return invalid(f.Name, "is required")
			}
			continue
		}
		norm, err := f.check(v)
		if err != nil {
			return err
		}
		data[f.Name] = norm
	}
	return nil
}

// check checks one value against f and returns it normalised (tags deduplicated).
func (f *Field) check(v json.RawMessage) (json.RawMessage, error) {
	switch f.Type {
	case Value:
		if len(v) > f.MaxLen {
			return nil, invalid(f.Name, "takes %d bytes as JSON, at most %d", len(v), f.MaxLen)
		}
		return v, nil
	case Strings:
		var list []string
		if err := json.Unmarshal(v, &list); err != nil {
			return nil, invalid(f.Name, "must be a list of strings")
		}
		if len(list) > f.MaxItems {
			return nil, invalid(f.Name, "has %d items, at most %d", len(list), f.MaxItems)
		}
		out := []string{}
		for _, t := range list {
			if t == "" || strings.TrimSpace(t) != t || len(t) > f.MaxLen {
				return nil, invalid(f.Name, "%q: each must be 1-%d characters without leading or trailing spaces", t, f.MaxLen)
			}
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
		return mustJSON(out), nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return nil, invalid(f.Name, "must be a string")
	}
	if f.Required && strings.TrimSpace(s) == "" {
		return nil, invalid(f.Name, "is required (not blank)")
	}
	if len(s) > f.MaxLen && f.MaxLen > 0 {
		return nil, invalid(f.Name, "is %d bytes, at most %d", len(s), f.MaxLen)
	}
	if !utf8.ValidString(s) {
		return nil, invalid(f.Name, "is not valid UTF-8")
	}
	if len(f.Enum) > 0 && !slices.Contains(f.Enum, s) {
		return nil, invalid(f.Name, "%q is not one of %s", s, strings.Join(f.Enum, ", "))
	}
	if s == "" {
		return mustJSON(s), nil
	}
	switch f.Format {
	case URL:
		u, err := url.Parse(s)
		if err != nil || u.Scheme == "" || (u.Host == "" && u.Opaque == "" && u.Path == "") || strings.ContainsAny(s, " \t\n") {
			return nil, invalid(f.Name, "%q is not an absolute URL (such as https://example.org/page)", s)
		}
	case Email:
		a, err := mail.ParseAddress(s)
		if err != nil || a.Address != s || !strings.Contains(s[strings.LastIndexByte(s, '@')+1:], ".") {
			return nil, invalid(f.Name, "%q is not one e-mail address (such as ada@example.org)", s)
		}
	case Slug:
		if !slugRE.MatchString(s) {
			return nil, invalid(f.Name, "%q is not a slug: lowercase letters, digits and single hyphens, such as \"my-first-post\"", s)
		}
	case Key:
		if strings.TrimSpace(s) != s || strings.ContainsFunc(s, unicode.IsControl) {
			return nil, invalid(f.Name, "%q: no control characters, no leading or trailing spaces", s)
		}
	}
	return mustJSON(s), nil
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("records: encoding %T: %v", v, err))
	}
	return b
}
