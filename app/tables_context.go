package app

import (
	"context"
	"errors"

	"github.com/crow-sync/crow/records"
)

// The crow_context operations: one row per (section, device, project), last
// write wins on every instance (package records derives the row id from the
// key; the apply loop never records a conflict for crow_context).

// ContextSetIn is the input of context.set.
type ContextSetIn struct {
	Section string `json:"section" required:"true" maxlen:"128" desc:"What the context is about, e.g. \"style\", \"tools\", \"current-task\"."`
	Device  string `json:"device,omitempty" maxlen:"128" desc:"The device (machine) it applies to; omit for every device."`
	Project string `json:"project,omitempty" maxlen:"128" desc:"The project it applies to; omit for every project."`
	Content string `json:"content" required:"true" maxlen:"65536" desc:"The context itself, text (at most 64 KiB); replaces what the key held."`
}

// ContextKeyIn names one crow_context row by its key.
type ContextKeyIn struct {
	Section string `json:"section" in:"query" required:"true" maxlen:"128" desc:"The key's section."`
	Device  string `json:"device,omitempty" in:"query" maxlen:"128" desc:"The key's device; omit for the row of every device."`
	Project string `json:"project,omitempty" in:"query" maxlen:"128" desc:"The key's project; omit for the row of every project."`
}

func (k ContextKeyIn) key() records.ContextKey {
	return records.ContextKey{Section: k.Section, Device: k.Device, Project: k.Project}
}

// ContextListIn is the input of context.list.
type ContextListIn struct {
	Section string `json:"section,omitempty" in:"query" maxlen:"128" desc:"Only rows of this section."`
	Device  string `json:"device,omitempty" in:"query" maxlen:"128" desc:"Only rows of this device."`
	Project string `json:"project,omitempty" in:"query" maxlen:"128" desc:"Only rows of this project."`
	Limit   int    `json:"limit,omitempty" in:"query" min:"1" max:"1000" mcpdefault:"50" desc:"Page size, 1-1000 (default 50)."`
	Cursor  string `json:"cursor,omitempty" in:"query" desc:"The next_cursor of the previous page; omit for the first page."`
}

// ContextDeleted is the answer of context.delete.
type ContextDeleted struct {
	records.ContextKey
	ID      string `json:"id"`
	Deleted bool   `json:"deleted"`
}

var (
	ContextSet = define(&Def[ContextSetIn, records.Record]{
		Spec: Spec{Name: "context.set", Method: "PUT", Path: "/v1/context", Tool: "crow_set_context",
			Title: "Set a context", Tag: "context", Summary: "Set the crow_context row of (section, device, project); last write wins",
			Description: "Set what an AI client should know for a section (such as \"style\" or \"current-task\"), optionally only " +
				"on one device or in one project. One key (section, device, project) is one row on every instance: setting it " +
				"again replaces it, and when two instances set it concurrently the last write wins everywhere, with no " +
				"conflict to resolve. Returns the row {table, id, data: {section, device, project, content, created_at, updated_at}, instance_id}.",
			Destructive: true, Idempotent: true},
		Impl: func(a *App, ctx context.Context, in ContextSetIn) (records.Record, error) {
			svc, err := a.records()
			if err != nil {
				return records.Record{}, err
			}
			return svc.SetContext(ctx, records.ContextKey{Section: in.Section, Device: in.Device, Project: in.Project}, in.Content)
		},
	})
	ContextGet = define(&Def[ContextKeyIn, records.Record]{
		Spec: Spec{Name: "context.get", Method: "GET", Path: "/v1/context/entry", Tool: "crow_get_context",
			Title: "Read a context", Tag: "context", Summary: "Read the crow_context row of (section, device, project)",
			Description: "Read the context of one key (section, device, project): exactly that key, no fallback (an omitted " +
				"device or project names the row for every device or project). crow_list_context lists the keys.", ReadOnly: true},
		Impl: func(a *App, ctx context.Context, in ContextKeyIn) (records.Record, error) {
			svc, err := a.records()
			if err != nil {
				return records.Record{}, err
			}
			r, err := svc.GetContext(ctx, in.key())
			return r, contextNotFound(in, err)
		},
	})
	ContextList = define(&Def[ContextListIn, records.Page]{
		Spec: Spec{Name: "context.list", Method: "GET", Path: "/v1/context", Tool: "crow_list_context",
			Title: "List contexts", Tag: "context", Summary: "crow_context rows, filtered by any part of the key",
			Description: "List the context rows, optionally only those of a section, a device and/or a project (each given " +
				"part must match exactly). Returns {records, next_cursor}.", ReadOnly: true},
		Impl: func(a *App, ctx context.Context, in ContextListIn) (records.Page, error) {
			svc, err := a.records()
			if err != nil {
				return records.Page{}, err
			}
			var f records.ContextFilter
			for _, p := range []struct {
				v   string
				dst **string
			}{{in.Section, &f.Section}, {in.Device, &f.Device}, {in.Project, &f.Project}} {
				if p.v != "" {
					*p.dst = &p.v
				}
			}
			return svc.ListContext(ctx, f, records.ListOptions{Cursor: in.Cursor, Limit: in.Limit})
		},
	})
	ContextDelete = define(&Def[ContextKeyIn, ContextDeleted]{
		Spec: Spec{Name: "context.delete", Method: "DELETE", Path: "/v1/context/entry", Tool: "crow_delete_context",
			Title: "Delete a context", Tag: "context", Summary: "Delete the crow_context row of (section, device, project)",
			Description: "Delete the context of one key (section, device, project) on every instance. Returns {section, device, project, id, deleted: true}.",
			Destructive: true},
		Impl: func(a *App, ctx context.Context, in ContextKeyIn) (ContextDeleted, error) {
			svc, err := a.records()
			if err != nil {
				return ContextDeleted{}, err
			}
			if err := svc.DeleteContext(ctx, in.key()); err != nil {
				return ContextDeleted{}, contextNotFound(in, err)
			}
			return ContextDeleted{ContextKey: in.key(), ID: records.ContextRowID(in.key()), Deleted: true}, nil
		},
	})
)

func contextNotFound(in ContextKeyIn, err error) error {
	if !errors.Is(err, records.ErrNotFound) {
		return err
	}
	return Wrap(KindNotFound, err, "no context for section "+quote(in.Section)+", device "+quote(in.Device)+
		", project "+quote(in.Project)+"; crow_list_context (GET /v1/context) lists the keys set")
}
