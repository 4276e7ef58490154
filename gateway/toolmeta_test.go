package gateway_test

import (
	"strings"
	"testing"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/gateway"
)

// intended is what each tool does, as its annotations must say: read-only
// tools change nothing; additive ones write but lose nothing; destructive
// ones delete, revoke, overwrite or forget.
type effect int

const (
	readOnly effect = iota
	additive
	destructive
)

var intendedTools = map[string]effect{
	"crow_store_memory":                 additive,
	"crow_search_memories":              readOnly,
	"crow_get_memory":                   readOnly,
	"crow_list_memories":                readOnly,
	"crow_update_memory":                destructive, // replaces the content and fields it is given
	"crow_delete_memory":                destructive,
	"crow_list_instances":               readOnly,
	"crow_register_instance":            additive,
	"crow_revoke_instance":              destructive,
	"crow_sync_status":                  readOnly,
	"crow_list_sync_conflicts":          readOnly,
	"crow_sync_conflicts_keep_current":  additive, // records a resolution; the live version stays
	"crow_sync_conflicts_restore_other": destructive,
	"crow_sync_conflicts_resolve_all":   additive,
	"crow_instance_summaries":           readOnly,
	"get_project_state":                 readOnly,
	"update_project_state":              additive, // a new state version; the old ones stay
	"crow_audit":                        readOnly,
	// The record tables (app/records.go): the same five tools for each.
	"crow_search":                 readOnly,
	"crow_store_note":             additive,
	"crow_list_notes":             readOnly,
	"crow_get_note":               readOnly,
	"crow_update_note":            destructive,
	"crow_delete_note":            destructive,
	"crow_store_blog_post":        additive,
	"crow_update_blog_post":       destructive,
	"crow_delete_blog_post":       destructive,
	"crow_set_setting":            destructive, // replaces the value
	"crow_get_setting":            readOnly,
	"crow_delete_setting":         destructive,
	"crow_set_context":            destructive, // replaces the key's content
	"crow_get_context":            readOnly,
	"crow_list_context":           readOnly,
	"crow_delete_context":         destructive,
	"crow_list_notifications":     readOnly,
	"crow_mark_notification_read": additive,
}

// TestToolAnnotationsTellTheTruth walks the tools both endpoints list and
// checks each against intendedTools: a title, readOnlyHint for reads, no
// destructiveHint for additive writes (the MCP default is destructive), and
// destructiveHint for the rest. A tool added later, not in the table, is held
// to its own Spec (app_test.go checks a destructive op is not read-only).
func TestToolAnnotationsTellTheTruth(t *testing.T) {
	env := newGatewayEnv(t)
	for _, path := range []string{mcpPath, rtrPath} {
		tools := listTools(t, owner(t, env.url+path))
		if want := len(toolsOf(path)); len(tools) != want {
			t.Errorf("%s lists %d tools, want %d", path, len(tools), want)
		}
		for name, tl := range tools {
			a := tl.Annotations
			if tl.Title == "" || a.Title != tl.Title {
				t.Errorf("%s %s: title %q, annotations.title %q; want one title in both", path, name, tl.Title, a.Title)
			}
			is := func(p *bool) bool { return p != nil && *p }
			isNot := func(p *bool) bool { return p != nil && !*p }
			want, ok := intendedTools[name]
			if !ok {
				// A tool added after this table: its Spec's annotations are
				// its author's word; they must at least not contradict.
				if is(a.ReadOnlyHint) && is(a.DestructiveHint) {
					t.Errorf("%s %s: both read-only and destructive", path, name)
				}
				continue
			}
			switch want {
			case readOnly:
				if !is(a.ReadOnlyHint) || !isNot(a.DestructiveHint) {
					t.Errorf("%s %s: a read, annotated %+v", path, name, a)
				}
			case additive:
				if !isNot(a.ReadOnlyHint) || !isNot(a.DestructiveHint) {
					t.Errorf("%s %s: writes but destroys nothing, annotated %+v", path, name, a)
				}
			case destructive:
				if !isNot(a.ReadOnlyHint) || !is(a.DestructiveHint) {
					t.Errorf("%s %s: destructive, annotated %+v", path, name, a)
				}
			}
		}
	}
}

// TestRouterAdvertisesWhatPeersAllow: on /router/mcp, a tool other instances
// run for this one (Config.RemoteAllowed) is described as routed; every other
// tool is described, first thing, as local-only with this instance's id.
func TestRouterAdvertisesWhatPeersAllow(t *testing.T) {
	remote := map[string]bool{"crow_search_memories": true, "crow_get_memory": true, "update_project_state": true}
	env := startGateway(t, nil, nil, nil, func(_ *app.Deps, c *gateway.Config) {
		c.RemoteAllowed = func(tool string) bool { return remote[tool] }
		c.PeerAllowed = func(string) bool { return false } // this instance's own list does not decide the router's
	})
	tools := listTools(t, owner(t, env.url+rtrPath))
	if len(tools) != len(toolsOf(rtrPath)) {
		t.Fatalf("the router lists %d tools, want all %d routable ones", len(tools), len(toolsOf(rtrPath)))
	}
	for name, tl := range tools {
		local := strings.HasPrefix(tl.Description, "LOCAL ONLY:") && strings.Contains(tl.Description, `"`+selfID+`"`)
		routed := strings.HasPrefix(tl.Description, "Routed to the instance named by instance_id")
		if remote[name] != routed || remote[name] == local {
			t.Errorf("%s (peers allow it: %v): %q", name, remote[name], tl.Description)
		}
	}
	// Without RemoteAllowed, the instance's own allow-list stands in.
	env = startGateway(t, nil, nil, nil, func(_ *app.Deps, c *gateway.Config) {
		c.PeerAllowed = func(tool string) bool { return tool == "crow_sync_status" }
	})
	for name, tl := range listTools(t, owner(t, env.url+rtrPath)) {
		if routed := strings.HasPrefix(tl.Description, "Routed"); routed != (name == "crow_sync_status") {
			t.Errorf("PeerAllowed only: %s: %q", name, tl.Description)
		}
	}
}
