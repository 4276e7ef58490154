package app

import (
	"context"
	"errors"
	"strings"

	"github.com/crow-sync/crow/changes"
)

// "While you were away" (package changes holds the rules): what the other
// instances did since a cursor, plus the open sync conflicts (the answer of
// conflicts.list, reused).

// ChangesIn is the input of changes.since.
type ChangesIn struct {
	Since string `json:"since,omitempty" in:"query" maxlen:"200000" desc:"The cursor of a previous answer (opaque). Omit to get what changed since this client's last call (the first call: since the beginning)."`
	// Client names whose last cursor is remembered.
	Client string `json:"client,omitempty" in:"query" maxlen:"128" desc:"Who is asking, to remember its last cursor (default: the MCP client's name from initialize, else \"default\")."`
	Limit  int    `json:"limit,omitempty" in:"query" min:"1" max:"500" default:"50" desc:"Most items listed (newest first; counts are complete), 1-500, default 50."`
}

// ChangesOut is the answer of changes.since.
type ChangesOut struct {
	// Since is the cursor the answer starts from ("": the beginning);
	// Cursor is the one to pass next time.
	Since  string `json:"since"`
	Cursor string `json:"cursor"`
	Client string `json:"client"`
	changes.Report
	Conflicts OpenConflicts `json:"conflicts"`
}

// OpenConflicts are the sync conflicts not resolved yet.
type OpenConflicts struct {
	// Open counts them (at least Open when More).
	Open  int            `json:"open"`
	More  bool           `json:"more"`
	Items []ConflictItem `json:"items"`
}

// ConflictItem is one open conflict, in short.
type ConflictItem struct {
	ID              string `json:"id"`
	Table           string `json:"table"`
	RowID           string `json:"row_id"`
	Op              string `json:"op"`
	WinningInstance string `json:"winning_instance"`
	LosingInstance  string `json:"losing_instance"`
	CreatedAt       string `json:"created_at"`
}

// maxCountedConflicts bounds the open conflicts counted.
const maxCountedConflicts = 1000

var ChangesSince = define(&Def[ChangesIn, ChangesOut]{
	Spec: Spec{Name: "changes.since", Method: "GET", Path: "/v1/changes", Tool: "crow_changes_since",
		Title: "What changed elsewhere", Tag: "sync", Summary: "What the other instances changed since a cursor",
		Description: "While you were away: per project, the memories the OTHER instances (machines) added, changed, forgot " +
			"or deleted since a cursor (counts, and the newest items with id, number, instance name and a short content), " +
			"changes to the other synced tables (notes, sources, contacts, settings, blog posts, context), new project " +
			"state versions, and the open sync conflicts. Pass the returned cursor as since next time, or omit since to get " +
			"what is new since this client's last call. Returns {since, cursor, total, projects, tables, state_versions, " +
			"conflicts, more}.",
		ReadOnly: true},
	Impl: (*App).changesSince,
})

type clientNameKey struct{}

// WithClientName returns ctx naming the calling client (the gateway sets
// the MCP session's client name).
func WithClientName(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, clientNameKey{}, name)
}

func (a *App) changesSince(ctx context.Context, in ChangesIn) (ChangesOut, error) {
	svc := a.d.Changes
	if svc == nil {
		return ChangesOut{}, unavailable("changes service")
	}
	client := strings.TrimSpace(in.Client)
	if client == "" {
		client, _ = ctx.Value(clientNameKey{}).(string)
	}
	if client == "" {
		client = "default"
	}
	var cur changes.Cursor
	if in.Since != "" {
		c, err := changes.ParseCursor(in.Since)
		if err != nil {
			return ChangesOut{}, Wrap(KindInvalid, err, "since: "+err.Error())
		}
		cur = c
	} else {
		c, _, err := svc.Remembered(client)
		if err != nil {
			return ChangesOut{}, err
		}
		cur = c
	}
	rep, next, err := svc.Since(ctx, cur, in.Limit)
	if err != nil {
		return ChangesOut{}, err
	}
	out := ChangesOut{Since: cur.String(), Cursor: next.String(), Client: client, Report: rep,
		Conflicts: OpenConflicts{Items: []ConflictItem{}}}
	open := true
	list, err := Call(ctx, a, ConflictsList, ConflictListIn{Unresolved: &open, Limit: maxCountedConflicts})
	switch {
	case err == nil:
		out.Conflicts.Open, out.Conflicts.More = len(list.Conflicts), list.NextCursor != ""
		for i, c := range list.Conflicts {
			if i == in.Limit {
				out.Conflicts.More = true
				break
			}
			out.Conflicts.Items = append(out.Conflicts.Items, ConflictItem{ID: c.ID, Table: c.TableName, RowID: c.RowID,
				Op: string(c.Op), WinningInstance: a.instanceName(c.WinningInstanceID), LosingInstance: a.instanceName(c.LosingInstanceID),
				CreatedAt: c.CreatedAt.UTC().Format("2006-01-02T15:04:05Z")})
		}
	case KindOf(ctx, err) != KindUnavailable:
		return ChangesOut{}, err
	}
	if err := svc.Remember(ctx, client, next); err != nil && !errors.Is(err, context.Canceled) {
		return ChangesOut{}, err
	}
	return out, nil
}

// instanceName is an instance's name, or its id when the registry does not
// know it.
func (a *App) instanceName(id string) string {
	if a.d.Instances != nil {
		if in, err := a.d.Instances.Get(id); err == nil && in.Name != "" {
			return in.Name
		}
	}
	return id
}
