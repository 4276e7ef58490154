package gateway_test

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/crow-sync/crow/app"
)

// TestRecordOpsAnswerAsDocumented drives the record tables' REST routes
// (notes, sources, contacts, blog posts, settings, crow_context, the search
// across tables, notifications) and checks every answer against the OpenAPI
// document.
func TestRecordOpsAnswerAsDocumented(t *testing.T) {
	env := newFullEnv(t)
	oc := newOpenAPIChecker(t, env.url)
	do := func(method, path, docPath string, body any, want int) map[string]any {
		t.Helper()
		st, b := env.call(t, method, path, body)
		if st != want {
			t.Fatalf("%s %s = %d, want %d: %s", method, path, st, want, b)
		}
		oc.check(t, method, docPath, st, b)
		var m map[string]any
		json.Unmarshal(b, &m)
		return m
	}
	note := do("POST", "/v1/notes", "/v1/notes", map[string]any{"title": "Gateway", "content": "The pelican gateway documents itself",
		"tags": []string{"api"}, "extra": map[string]any{"mood": "calm"}}, 201)
	id := note["id"].(string)
	if d := note["data"].(map[string]any); d["mood"] != "calm" || d["title"] != "Gateway" || d["created_at"] == nil {
		t.Errorf("stored note %v", note)
	}
	do("GET", "/v1/notes/"+id, "/v1/notes/{id}", nil, 200)
	do("PATCH", "/v1/notes/"+id, "/v1/notes/{id}", map[string]any{"content": "Pelicans again"}, 200)
	do("GET", "/v1/notes?limit=1&order=oldest", "/v1/notes", nil, 200)
	do("POST", "/v1/contacts", "/v1/contacts", map[string]any{"name": "Pelle Pelican", "email": "pelle@example.org"}, 201)
	do("POST", "/v1/sources", "/v1/sources", map[string]any{"url": "https://example.org/pelicans", "title": "On pelicans"}, 201)
	post := do("POST", "/v1/blog-posts", "/v1/blog-posts", map[string]any{"title": "Pelicans, at last", "body": "…"}, 201)
	if d := post["data"].(map[string]any); d["slug"] != "pelicans-at-last" || d["status"] != "draft" {
		t.Errorf("blog post defaults %v", post)
	}
	do("PUT", "/v1/settings/theme", "/v1/settings/{key}", map[string]any{"value": map[string]any{"dark": true}}, 200)
	do("GET", "/v1/settings/theme", "/v1/settings/{key}", nil, 200)
	do("GET", "/v1/settings", "/v1/settings", nil, 200)
	do("PUT", "/v1/context", "/v1/context", map[string]any{"section": "style", "project": "crow", "content": "pelican-short answers"}, 200)
	ctxRow := do("GET", "/v1/context/entry?section=style&project=crow", "/v1/context/entry", nil, 200)
	do("GET", "/v1/context?project=crow", "/v1/context", nil, 200)
	res := do("GET", "/v1/search?q=pelican&tables=notes,contacts,crow_context", "/v1/search", nil, 200)
	tables := map[string]bool{}
	for _, h := range res["results"].([]any) {
		tables[h.(map[string]any)["table"].(string)] = true
	}
	if len(tables) != 3 || !tables["notes"] || !tables["contacts"] || !tables["crow_context"] {
		t.Errorf("search across notes, contacts and crow_context: %v", res)
	}
	do("GET", "/v1/search?q=pelican", "/v1/search", nil, 200)
	do("GET", "/v1/notifications?unread_first=true", "/v1/notifications", nil, 200)
	del := do("DELETE", "/v1/context/entry?section=style&project=crow", "/v1/context/entry", nil, 200)
	if del["id"] != ctxRow["id"] {
		t.Errorf("deleted %v, the row was %v", del, ctxRow)
	}
	do("DELETE", "/v1/settings/theme", "/v1/settings/{key}", nil, 200)
	do("DELETE", "/v1/notes/"+id, "/v1/notes/{id}", nil, 200)
	if st, b := env.call(t, "GET", "/v1/notes/"+id, nil); st != 404 || !strings.Contains(string(b), "crow_list_notes") {
		t.Errorf("a deleted note = %d %s", st, b)
	}
	if st, b := env.call(t, "GET", "/v1/context/entry?"+url.Values{"section": {"style"}}.Encode(), nil); st != 404 || !strings.Contains(string(b), "no context") {
		t.Errorf("an unset context = %d %s", st, b)
	}
}

// TestRecordBadInputSameVerdict: the record tables' own rules (package
// records) give the same verdict over REST and MCP.
func TestRecordBadInputSameVerdict(t *testing.T) {
	env := newGatewayEnv(t)
	c := owner(t, env.url+mcpPath)
	note := ok(t, c, "crow_store_note", map[string]any{"title": "t", "content": "c"})["id"].(string)
	cases := []badCase{
		{name: "note without title", op: app.Notes.Create, body: `{"content":"c"}`, args: `{"content":"c"}`,
			kind: app.KindInvalid, want: []string{"title is required"}, same: true},
		{name: "contact with a display-name address", op: app.Contacts.Create, body: `{"name":"Ada","email":"Ada <ada@example.org>"}`,
			args: `{"name":"Ada","email":"Ada <ada@example.org>"}`, kind: app.KindInvalid, want: []string{"email:", "not one e-mail address"}, same: true},
		{name: "source without a scheme", op: app.Sources.Create, body: `{"url":"example.org"}`, args: `{"url":"example.org"}`,
			kind: app.KindInvalid, want: []string{"url:", "not an absolute URL"}, same: true},
		{name: "blog post with a bad slug", op: app.BlogPosts.Create, body: `{"title":"t","body":"b","slug":"Bad Slug"}`,
			args: `{"title":"t","body":"b","slug":"Bad Slug"}`, kind: app.KindInvalid, want: []string{"slug:"}, same: true},
		{name: "blog post with an unknown status", op: app.BlogPosts.Create, body: `{"title":"t","body":"b","status":"gone"}`,
			args: `{"title":"t","body":"b","status":"gone"}`, kind: app.KindInvalid, want: []string{"status must be"}, same: true},
		{name: "extra shadowing a field", op: app.Notes.Create, body: `{"title":"t","content":"c","extra":{"title":"x"}}`,
			args: `{"title":"t","content":"c","extra":{"title":"x"}}`, kind: app.KindInvalid, want: []string{"extra.title"}, same: true},
		{name: "empty patch", op: app.Notes.Update, path: map[string]string{"id": note}, body: `{}`, args: `{"id":"` + note + `"}`,
			kind: app.KindInvalid, want: []string{"nothing to change"}, same: true},
		{name: "patch removing the title", op: app.Notes.Update, path: map[string]string{"id": note}, body: `{"title":""}`,
			args: `{"id":"` + note + `","title":""}`, kind: app.KindInvalid, want: []string{"title"}},
		{name: "missing note", op: app.Notes.Get, path: map[string]string{"id": "01NOPE"}, args: `{"id":"01NOPE"}`,
			kind: app.KindNotFound, want: []string{"no note with id \"01NOPE\""}, same: true},
		{name: "setting of null", op: app.SettingSet, path: map[string]string{"key": "k"}, body: `{"value":null}`,
			args: `{"key":"k","value":null}`, kind: app.KindInvalid, want: []string{"value"}},
		{name: "context without section", op: app.ContextSet, body: `{"content":"c"}`, args: `{"content":"c"}`,
			kind: app.KindInvalid, want: []string{"section is required"}, same: true},
		{name: "context key with a newline", op: app.ContextSet, body: `{"section":"s","device":"a\nb","content":"c"}`,
			args: `{"section":"s","device":"a\nb","content":"c"}`, kind: app.KindInvalid, want: []string{"device:"}, same: true},
		{name: "search of a table not indexed", op: app.SearchAll, query: "q=x&tables=projects", args: `{"query":"x","tables":["projects"]}`,
			kind: app.KindInvalid, want: []string{"\"projects\" is not searchable"}, same: true},
		{name: "unknown notification", op: app.NotificationsRead, path: map[string]string{"id": "nope"}, args: `{"id":"nope"}`,
			kind: app.KindNotFound, want: []string{"no notification with id nope"}, same: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sp := tc.op.Info()
			status, restMsg := restCall(t, env.url, sp, tc.path, tc.query, tc.body)
			kind, mcpMsg := mcpCall(t, c, sp.Tool, tc.args)
			if kind != tc.kind {
				t.Errorf("MCP %s: kind %v, want %v (%s)", sp.Tool, kind, tc.kind, mcpMsg)
			}
			if want := statusOfKind[tc.kind]; status != want {
				t.Errorf("REST %s %s: %d, want %d for kind %v (%s)", sp.Method, sp.Path, status, want, tc.kind, restMsg)
			}
			for _, w := range tc.want {
				if !strings.Contains(restMsg, w) || !strings.Contains(mcpMsg, w) {
					t.Errorf("messages do not say %q:\n REST: %s\n  MCP: %s", w, restMsg, mcpMsg)
				}
			}
			if tc.same && restMsg != mcpMsg {
				t.Errorf("the surfaces disagree:\n REST: %s\n  MCP: %s", restMsg, mcpMsg)
			}
		})
	}
	// The note is unchanged by the refused patches.
	got := ok(t, c, "crow_get_note", map[string]any{"id": note})
	if d := got["data"].(map[string]any); d["title"] != "t" {
		t.Errorf("after refused patches: %v", got)
	}
}
