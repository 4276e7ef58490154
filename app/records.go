package app

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/url"
	"slices"

	"github.com/crow-sync/crow/records"
)

// The typed operations of the record tables (notes, sources, contacts, blog
// posts: create, list, get, update, delete; settings: set, get, list,
// delete), each defined once from one recordTable by defineRecordOps. The
// inputs are one struct per table (their fields are the tool's schema); the
// rules are package records' (the tests pin the tags to its Specs).

// NoteIn is the input of notes.create.
type NoteIn struct {
	Title   string                     `json:"title" required:"true" maxlen:"512" desc:"A short title."`
	Content string                     `json:"content" required:"true" maxlen:"65536" desc:"The note's text (at most 64 KiB)."`
	Project string                     `json:"project,omitempty" maxlen:"128" desc:"Project the note belongs to."`
	Tags    []string                   `json:"tags,omitempty" maxitems:"32" itemminlen:"1" itemmaxlen:"64" desc:"Up to 32 tags of 1-64 characters."`
	Extra   map[string]json.RawMessage `json:"extra,omitempty" desc:"Other fields to keep with the note, any JSON values (e.g. {\"mood\":\"calm\"}); they replicate and are searchable."`
}

// NotePatch is the input of notes.update.
type NotePatch struct {
	ID      string                     `json:"id" in:"path" required:"true" desc:"Id of the note (crow_list_notes, crow_search)."`
	Title   *string                    `json:"title,omitempty" maxlen:"512" desc:"New title."`
	Content *string                    `json:"content,omitempty" maxlen:"65536" desc:"New text."`
	Project *string                    `json:"project,omitempty" maxlen:"128" desc:"New project."`
	Tags    *[]string                  `json:"tags,omitempty" maxitems:"32" itemminlen:"1" itemmaxlen:"64" desc:"New tag list (replaces the old one)."`
	Extra   map[string]json.RawMessage `json:"extra,omitempty" desc:"Other fields to set; null removes one."`
}

// SourceIn is the input of sources.create.
type SourceIn struct {
	URL     string                     `json:"url" required:"true" maxlen:"2048" desc:"Where it is: an absolute URL (https://…, doi:…)."`
	Title   string                     `json:"title,omitempty" maxlen:"512" desc:"Its title."`
	Summary string                     `json:"summary,omitempty" maxlen:"65536" desc:"What it says, or why it matters (at most 64 KiB)."`
	Project string                     `json:"project,omitempty" maxlen:"128" desc:"Project it belongs to."`
	Tags    []string                   `json:"tags,omitempty" maxitems:"32" itemminlen:"1" itemmaxlen:"64" desc:"Up to 32 tags of 1-64 characters."`
	Extra   map[string]json.RawMessage `json:"extra,omitempty" desc:"Other fields to keep with the source, any JSON values (e.g. {\"author\":\"…\"}); they replicate and are searchable."`
}

// SourcePatch is the input of sources.update.
type SourcePatch struct {
	ID      string                     `json:"id" in:"path" required:"true" desc:"Id of the source (crow_list_sources, crow_search)."`
	URL     *string                    `json:"url,omitempty" maxlen:"2048" desc:"New URL."`
	Title   *string                    `json:"title,omitempty" maxlen:"512" desc:"New title."`
	Summary *string                    `json:"summary,omitempty" maxlen:"65536" desc:"New summary."`
	Project *string                    `json:"project,omitempty" maxlen:"128" desc:"New project."`
	Tags    *[]string                  `json:"tags,omitempty" maxitems:"32" itemminlen:"1" itemmaxlen:"64" desc:"New tag list (replaces the old one)."`
	Extra   map[string]json.RawMessage `json:"extra,omitempty" desc:"Other fields to set; null removes one."`
}

// ContactIn is the input of contacts.create.
type ContactIn struct {
	Name         string                     `json:"name" required:"true" maxlen:"256" desc:"The person's or organisation's name."`
	Email        string                     `json:"email,omitempty" maxlen:"256" desc:"One e-mail address (ada@example.org)."`
	Phone        string                     `json:"phone,omitempty" maxlen:"64" desc:"A phone number."`
	Organization string                     `json:"organization,omitempty" maxlen:"256" desc:"Where they work."`
	Notes        string                     `json:"notes,omitempty" maxlen:"65536" desc:"Anything worth remembering about them (at most 64 KiB)."`
	Tags         []string                   `json:"tags,omitempty" maxitems:"32" itemminlen:"1" itemmaxlen:"64" desc:"Up to 32 tags of 1-64 characters."`
	Extra        map[string]json.RawMessage `json:"extra,omitempty" desc:"Other fields to keep with the contact, any JSON values (e.g. {\"city\":\"London\"}); they replicate and are searchable."`
}

// ContactPatch is the input of contacts.update.
type ContactPatch struct {
	ID           string                     `json:"id" in:"path" required:"true" desc:"Id of the contact (crow_list_contacts, crow_search)."`
	Name         *string                    `json:"name,omitempty" maxlen:"256" desc:"New name."`
	Email        *string                    `json:"email,omitempty" maxlen:"256" desc:"New e-mail address (\"\" clears it)."`
	Phone        *string                    `json:"phone,omitempty" maxlen:"64" desc:"New phone number."`
	Organization *string                    `json:"organization,omitempty" maxlen:"256" desc:"New organisation."`
	Notes        *string                    `json:"notes,omitempty" maxlen:"65536" desc:"New notes."`
	Tags         *[]string                  `json:"tags,omitempty" maxitems:"32" itemminlen:"1" itemmaxlen:"64" desc:"New tag list (replaces the old one)."`
	Extra        map[string]json.RawMessage `json:"extra,omitempty" desc:"Other fields to set; null removes one."`
}

// BlogPostIn is the input of blog_posts.create.
type BlogPostIn struct {
	Title  string                     `json:"title" required:"true" maxlen:"512" desc:"The post's title."`
	Slug   string                     `json:"slug,omitempty" maxlen:"128" desc:"Its URL name: lowercase letters, digits and single hyphens (default: made from the title)."`
	Body   string                     `json:"body" required:"true" maxlen:"196608" desc:"The post's text, Markdown (at most 192 KiB)."`
	Status string                     `json:"status,omitempty" enum:"draft,published" default:"\"draft\"" desc:"draft (default) or published."`
	Tags   []string                   `json:"tags,omitempty" maxitems:"32" itemminlen:"1" itemmaxlen:"64" desc:"Up to 32 tags of 1-64 characters."`
	Extra  map[string]json.RawMessage `json:"extra,omitempty" desc:"Other fields to keep with the post, any JSON values (e.g. {\"cover\":\"…\"}); they replicate and are searchable."`
}

// BlogPostPatch is the input of blog_posts.update.
type BlogPostPatch struct {
	ID     string                     `json:"id" in:"path" required:"true" desc:"Id of the blog post (crow_list_blog_posts, crow_search)."`
	Title  *string                    `json:"title,omitempty" maxlen:"512" desc:"New title."`
	Slug   *string                    `json:"slug,omitempty" maxlen:"128" desc:"New slug."`
	Body   *string                    `json:"body,omitempty" maxlen:"196608" desc:"New text."`
	Status *string                    `json:"status,omitempty" enum:"draft,published" desc:"draft or published."`
	Tags   *[]string                  `json:"tags,omitempty" maxitems:"32" itemminlen:"1" itemmaxlen:"64" desc:"New tag list (replaces the old one)."`
	Extra  map[string]json.RawMessage `json:"extra,omitempty" desc:"Other fields to set; null removes one."`
}

// SettingIn is the input of settings.set.
type SettingIn struct {
	Key   string          `json:"key" in:"path" required:"true" maxlen:"256" desc:"The setting's name."`
	Value json.RawMessage `json:"value" required:"true" desc:"Its value: any JSON value but null (a string, number, object…); replaces the old one."`
}

// RecordID names one row of a record table.
type RecordID struct {
	ID string `json:"id" in:"path" required:"true" desc:"Id of the row (from the list, store or search tools)."`
}

// SettingKey names one setting.
type SettingKey struct {
	Key string `json:"key" in:"path" required:"true" maxlen:"256" desc:"The setting's name."`
}

// RecordListIn is the input of the list operations.
type RecordListIn struct {
	Limit  int    `json:"limit,omitempty" in:"query" min:"1" max:"1000" mcpdefault:"50" desc:"Page size, 1-1000 (default 50)."`
	Cursor string `json:"cursor,omitempty" in:"query" desc:"The next_cursor of the previous page; omit for the first page."`
	Order  string `json:"order,omitempty" in:"query" enum:"newest,oldest" default:"\"newest\"" desc:"newest first (default) or oldest first."`
}

// SettingListIn is the input of settings.list.
type SettingListIn struct {
	Limit  int    `json:"limit,omitempty" in:"query" min:"1" max:"1000" mcpdefault:"50" desc:"Page size, 1-1000 (default 50)."`
	Cursor string `json:"cursor,omitempty" in:"query" desc:"The next_cursor of the previous page; omit for the first page."`
}

// RecordDeleted is the answer of a record delete.
type RecordDeleted struct {
	Table   string `json:"table"`
	ID      string `json:"id"`
	Deleted bool   `json:"deleted"`
}

// recordTable is what differs between the record tables' operations.
type recordTable struct {
	spec *records.Spec
	// path is the collection ("/v1/notes"); one and many name a row in tool
	// names and titles ("note", "notes"; tool crow_store_note).
	path, one, many string
	// what says what a row is, for the store tool's description.
	what string
}

// RecordOps are the operations of one record table.
type RecordOps[C, P any] struct {
	Create *Def[C, records.Record]
	List   *Def[RecordListIn, records.Page]
	Get    *Def[RecordID, records.Record]
	Update *Def[P, records.Record]
	Delete *Def[RecordID, RecordDeleted]
}

func recordLocation(path string) func(records.Record) string {
	return func(r records.Record) string { return path + "/" + url.PathEscape(r.ID) }
}

// defineRecordOps defines the five operations of t; C is its create input,
// P its patch (with the id in the path).
func defineRecordOps[C, P any](t recordTable) RecordOps[C, P] {
	table, tool := t.spec.Table, func(verb, noun string) string { return "crow_" + verb + "_" + toolNoun(noun) }
	return RecordOps[C, P]{
		Create: define(&Def[C, records.Record]{
			Spec: Spec{Name: table + ".create", Method: "POST", Path: t.path, Status: 201, Tool: tool("store", t.one),
				Title: "Store a " + t.one, Tag: "records", Summary: "Store a new " + t.one,
				Description: "Store a new " + t.one + ": " + t.what + " It is saved durably on this instance, replicates to the " +
					"user's other instances and is found by crow_search. Returns the stored row {table, id, data, instance_id}; " +
					"data holds its fields with created_at and updated_at."},
			Impl: func(a *App, ctx context.Context, in C) (records.Record, error) {
				svc, data, err := a.recordInput(t.spec, in)
				if err != nil {
					return records.Record{}, err
				}
				return svc.Create(ctx, table, data)
			},
			Locate: recordLocation(t.path),
		}),
		List: define(&Def[RecordListIn, records.Page]{
			Spec: Spec{Name: table + ".list", Method: "GET", Path: t.path, Tool: tool("list", t.many),
				Title: "List " + t.many, Tag: "records", Summary: "List " + t.many + ", newest first, a page at a time",
				Description: "List " + t.many + " by creation time (newest first by default). Returns {records, next_cursor}; " +
					"pass next_cursor as cursor for the next page (\"\" means no more). crow_search finds them by their words.",
				ReadOnly: true},
			Impl: func(a *App, ctx context.Context, in RecordListIn) (records.Page, error) {
				svc, err := a.records()
				if err != nil {
					return records.Page{}, err
				}
				return svc.List(ctx, table, records.ListOptions{Cursor: in.Cursor, Limit: in.Limit, Desc: in.Order != "oldest"})
			},
		}),
		Get: define(&Def[RecordID, records.Record]{
			Spec: Spec{Name: table + ".get", Method: "GET", Path: t.path + "/{id}", Tool: tool("get", t.one),
				Title: "Read a " + t.one, Tag: "records", Summary: "Read a " + t.one,
				Description: "Read one " + t.one + " by id. Returns {table, id, data, instance_id}.", ReadOnly: true},
			Impl: func(a *App, ctx context.Context, in RecordID) (records.Record, error) {
				svc, err := a.records()
				if err != nil {
					return records.Record{}, err
				}
				r, err := svc.Get(ctx, table, in.ID)
				return r, recordNotFound(t, in.ID, err)
			},
		}),
		Update: define(&Def[P, records.Record]{
			Spec: Spec{Name: table + ".update", Method: "PATCH", Path: t.path + "/{id}", Tool: tool("update", t.one),
				Title: "Change a " + t.one, Tag: "records", Summary: "Change fields of a " + t.one + " (absent fields are kept)",
				Description: "Change fields of an existing " + t.one + "; omitted fields stay as they are (give at least one). " +
					"Returns the " + t.one + " as stored.",
				Destructive: true, Idempotent: true},
			Impl: func(a *App, ctx context.Context, in P) (records.Record, error) {
				svc, data, err := a.recordInput(t.spec, in)
				if err != nil {
					return records.Record{}, err
				}
				var id string
				_ = json.Unmarshal(data["id"], &id)
				delete(data, "id")
				r, err := svc.Update(ctx, table, id, data)
				return r, recordNotFound(t, id, err)
			},
		}),
		Delete: define(&Def[RecordID, RecordDeleted]{
			Spec: Spec{Name: table + ".delete", Method: "DELETE", Path: t.path + "/{id}", Tool: tool("delete", t.one),
				Title: "Delete a " + t.one, Tag: "records", Summary: "Delete a " + t.one,
				Description: "Delete a " + t.one + " by id, on every instance (the deletion replicates). Returns {table, id, deleted: true}.",
				Destructive: true},
			Impl: func(a *App, ctx context.Context, in RecordID) (RecordDeleted, error) {
				svc, err := a.records()
				if err != nil {
					return RecordDeleted{}, err
				}
				if err := svc.Delete(ctx, table, in.ID); err != nil {
					return RecordDeleted{}, recordNotFound(t, in.ID, err)
				}
				return RecordDeleted{Table: table, ID: in.ID, Deleted: true}, nil
			},
		}),
	}
}

// toolNoun is a tool name's spelling of a noun ("blog post" → "blog_post").
func toolNoun(s string) string {
	b := []byte(s)
	for i := range b {
		if b[i] == ' ' {
			b[i] = '_'
		}
	}
	return string(b)
}

var (
	Notes = defineRecordOps[NoteIn, NotePatch](recordTable{spec: records.Notes, path: "/v1/notes", one: "note", many: "notes",
		what: "a titled text worth keeping (longer than a memory, with a title)."})
	Sources = defineRecordOps[SourceIn, SourcePatch](recordTable{spec: records.Sources, path: "/v1/sources", one: "source", many: "sources",
		what: "a document, page or paper by its URL, with what it says."})
	Contacts = defineRecordOps[ContactIn, ContactPatch](recordTable{spec: records.Contacts, path: "/v1/contacts", one: "contact", many: "contacts",
		what: "a person or organisation with their e-mail, phone and notes."})
	BlogPosts = defineRecordOps[BlogPostIn, BlogPostPatch](recordTable{spec: records.BlogPosts, path: "/v1/blog-posts", one: "blog post", many: "blog posts",
		what: "a post with its title, slug, Markdown body and status (draft or published)."})
)

// Settings: key/value, the key is the row id.
var (
	SettingSet = define(&Def[SettingIn, records.Record]{
		Spec: Spec{Name: "settings.set", Method: "PUT", Path: "/v1/settings/{key}", Tool: "crow_set_setting",
			Title: "Set a setting", Tag: "records", Summary: "Set a setting (key/value; replaces its value)",
			Description: "Set the setting key to value (any JSON value), replacing its old value; it replicates to the user's " +
				"other instances. Returns the row {table, id (the key), data: {key, value, created_at, updated_at}, instance_id}.",
			Destructive: true, Idempotent: true},
		Impl: func(a *App, ctx context.Context, in SettingIn) (records.Record, error) {
			svc, err := a.records()
			if err != nil {
				return records.Record{}, err
			}
			key, _ := json.Marshal(in.Key)
			return svc.Create(ctx, records.Settings.Table, map[string]json.RawMessage{"key": key, "value": in.Value})
		},
		Locate: func(r records.Record) string { return "/v1/settings/" + url.PathEscape(r.ID) },
	})
	SettingGet = define(&Def[SettingKey, records.Record]{
		Spec: Spec{Name: "settings.get", Method: "GET", Path: "/v1/settings/{key}", Tool: "crow_get_setting",
			Title: "Read a setting", Tag: "records", Summary: "Read a setting",
			Description: "Read the setting key. Returns {table, id, data: {key, value, …}, instance_id}.", ReadOnly: true},
		Impl: func(a *App, ctx context.Context, in SettingKey) (records.Record, error) {
			svc, err := a.records()
			if err != nil {
				return records.Record{}, err
			}
			r, err := svc.Get(ctx, records.Settings.Table, in.Key)
			return r, recordNotFound(settingsTable, in.Key, err)
		},
	})
	SettingList = define(&Def[SettingListIn, records.Page]{
		Spec: Spec{Name: "settings.list", Method: "GET", Path: "/v1/settings", Tool: "crow_list_settings",
			Title: "List settings", Tag: "records", Summary: "List settings by key, a page at a time",
			Description: "List the settings in key order. Returns {records, next_cursor}; pass next_cursor as cursor for the next page.",
			ReadOnly:    true},
		Impl: func(a *App, ctx context.Context, in SettingListIn) (records.Page, error) {
			svc, err := a.records()
			if err != nil {
				return records.Page{}, err
			}
			return svc.List(ctx, records.Settings.Table, records.ListOptions{Cursor: in.Cursor, Limit: in.Limit})
		},
	})
	SettingDelete = define(&Def[SettingKey, RecordDeleted]{
		Spec: Spec{Name: "settings.delete", Method: "DELETE", Path: "/v1/settings/{key}", Tool: "crow_delete_setting",
			Title: "Delete a setting", Tag: "records", Summary: "Delete a setting",
			Description: "Delete the setting key on every instance (the deletion replicates). Returns {table, id, deleted: true}.",
			Destructive: true},
		Impl: func(a *App, ctx context.Context, in SettingKey) (RecordDeleted, error) {
			svc, err := a.records()
			if err != nil {
				return RecordDeleted{}, err
			}
			if err := svc.Delete(ctx, records.Settings.Table, in.Key); err != nil {
				return RecordDeleted{}, recordNotFound(settingsTable, in.Key, err)
			}
			return RecordDeleted{Table: records.Settings.Table, ID: in.Key, Deleted: true}, nil
		},
	})
)

var settingsTable = recordTable{spec: records.Settings, one: "setting", many: "settings"}

func (a *App) records() (*records.Service, error) {
	if a.d.Records == nil {
		return nil, unavailable("records service")
	}
	return a.d.Records, nil
}

// recordInput turns a record input (a create or patch struct) into a row's
// fields: the given fields under their JSON names, extra ones beside them.
func (a *App) recordInput(sp *records.Spec, in any) (*records.Service, map[string]json.RawMessage, error) {
	svc, err := a.records()
	if err != nil {
		return nil, nil, err
	}
	raw, err := json.Marshal(in)
	if err != nil {
		return nil, nil, err
	}
	var data map[string]json.RawMessage
	if err := json.Unmarshal(raw, &data); err != nil {
		return nil, nil, err
	}
	var extra map[string]json.RawMessage
	if e, ok := data["extra"]; ok {
		if err := json.Unmarshal(e, &extra); err != nil {
			return nil, nil, Invalidf("extra must be a JSON object")
		}
		delete(data, "extra")
	}
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		if sp.Field(k) != nil || k == "id" || k == "extra" {
			return nil, nil, Invalidf("extra.%s: %s is a field of its own, not an extra one", k, k)
		}
		data[k] = extra[k]
	}
	return svc, data, nil
}

// recordNotFound says what to do about a missing row.
func recordNotFound(t recordTable, id string, err error) error {
	if errors.Is(err, records.ErrNotFound) {
		list := "crow_list_" + toolNoun(t.many)
		return Wrap(KindNotFound, err, "no "+t.one+" with id "+quote(id)+": it does not exist or was deleted; "+list+" and crow_search return the ids of live ones")
	}
	return err
}
