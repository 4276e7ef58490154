package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/gateway"
)

// statusOfKind is the HTTP status of each error kind, as app.Kind documents
// it (the gateway maps it once; this is the test's own copy).
var statusOfKind = map[app.Kind]int{
	app.KindInvalid: 400, app.KindUnauthorized: 401, app.KindForbidden: 403, app.KindNotFound: 404,
	app.KindConflict: 409, app.KindTooLarge: 413, app.KindUpstream: 502, app.KindUnavailable: 503,
	app.KindInsufficientStorage: 507, app.KindInternal: 500,
}

// badCase is one bad input, given to an operation over REST and over MCP.
type badCase struct {
	name string
	op   app.Op
	// REST: the path wildcards, the raw query and the body ("" for none).
	path  map[string]string
	query string
	body  string
	// MCP: the arguments, as raw JSON ("" for none).
	args string
	// kind is the verdict both surfaces must give.
	kind app.Kind
	// want are substrings both messages must hold; same requires the two
	// messages to be equal (the surfaces name the field the same way).
	want []string
	same bool
}

// TestBadInputSameVerdictOnRESTAndMCP runs every bad input through REST and
// MCP against one real gateway and expects the same verdict from both: the
// REST status is the status of the kind the MCP tool error carries in
// _meta[gateway.KindMetaKey], and where both surfaces name the field the same
// way the message is the same.
func TestBadInputSameVerdictOnRESTAndMCP(t *testing.T) {
	env := newGatewayEnv(t)
	c := owner(t, env.url+mcpPath)
	id := ok(t, c, "crow_store_memory", map[string]any{"content": "a memory to get wrong"})["id"].(string)
	mem := map[string]string{"id": id}
	nope := map[string]string{"id": "01NOPE"}
	long := func(n int) string { return strings.Repeat("a", n) }
	jsonStr := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	content64k := jsonStr(long(64<<10 + 1))
	project129 := long(129)
	tags33 := `["` + strings.TrimSuffix(strings.Repeat(`t",`+`"`, 33), `,"`) + `]`

	cases := []badCase{
		// Missing required fields.
		{name: "store without content", op: app.MemoryCreate, body: `{"project":"p"}`, args: `{"project":"p"}`,
			kind: app.KindInvalid, want: []string{"content is required"}, same: true},
		{name: "store with blank content", op: app.MemoryCreate, body: `{"content":"   "}`, args: `{"content":"   "}`,
			kind: app.KindInvalid, want: []string{"content is required"}, same: true},
		{name: "get without id", op: app.MemoryGet, path: map[string]string{"id": " "}, args: `{}`,
			kind: app.KindInvalid, want: []string{"id is required"}, same: true},
		{name: "register without gateway_url", op: app.InstancesRegister, body: `{}`, args: `{}`,
			kind: app.KindInvalid, want: []string{"gateway_url is required"}, same: true},
		{name: "keep without id", op: app.ConflictsKeep, path: map[string]string{"id": " "}, args: `{}`,
			kind: app.KindInvalid, want: []string{"id is required"}, same: true},
		{name: "revoke without id", op: app.InstancesRevoke, path: map[string]string{"id": " "}, args: `{}`,
			kind: app.KindInvalid, want: []string{"id is required"}, same: true},

		// Whole numbers out of range.
		{name: "min_importance 0", op: app.MemoryList, query: "min_importance=0", args: `{"min_importance":0}`,
			kind: app.KindInvalid, want: []string{"min_importance must be a whole number from 1 to 10, got 0"}, same: true},
		{name: "min_importance 11", op: app.MemoryList, query: "min_importance=11", args: `{"min_importance":11}`,
			kind: app.KindInvalid, want: []string{"min_importance must be a whole number from 1 to 10, got 11"}, same: true},
		{name: "list limit 0", op: app.MemoryList, query: "limit=0", args: `{"limit":0}`,
			kind: app.KindInvalid, want: []string{"limit must be a whole number from 1 to 1000, got 0"}, same: true},
		{name: "list limit 1001", op: app.MemoryList, query: "limit=1001", args: `{"limit":1001}`,
			kind: app.KindInvalid, want: []string{"limit must be a whole number from 1 to 1000, got 1001"}, same: true},
		{name: "conflicts limit 0", op: app.ConflictsList, query: "limit=0", args: `{"limit":0}`,
			kind: app.KindInvalid, want: []string{"limit must be a whole number from 1 to 1000, got 0"}, same: true},
		{name: "conflicts limit 1001", op: app.ConflictsList, query: "limit=1001", args: `{"limit":1001}`,
			kind: app.KindInvalid, want: []string{"limit must be a whole number from 1 to 1000, got 1001"}, same: true},
		{name: "store importance 11", op: app.MemoryCreate, body: `{"content":"x","importance":11}`, args: `{"content":"x","importance":11}`,
			kind: app.KindInvalid, want: []string{"importance must be a whole number from 1 to 10, got 11"}, same: true},
		{name: "store importance 0", op: app.MemoryCreate, body: `{"content":"x","importance":0}`, args: `{"content":"x","importance":0}`,
			kind: app.KindInvalid, want: []string{"importance must be a whole number from 1 to 10, got 0"}, same: true},
		{name: "update importance 0", op: app.MemoryUpdate, path: mem, body: `{"importance":0}`, args: `{"id":"` + id + `","importance":0}`,
			kind: app.KindInvalid, want: []string{"importance must be a whole number from 1 to 10, got 0"}, same: true},

		// Strings and lists too long.
		{name: "content over 64 KiB", op: app.MemoryCreate, body: `{"content":` + content64k + `}`, args: `{"content":` + content64k + `}`,
			kind: app.KindInvalid, want: []string{"content must be at most 65536 bytes long, got 65537"}, same: true},
		{name: "update content over 64 KiB", op: app.MemoryUpdate, path: mem, body: `{"content":` + content64k + `}`, args: `{"id":"` + id + `","content":` + content64k + `}`,
			kind: app.KindInvalid, want: []string{"content must be at most 65536 bytes long, got 65537"}, same: true},
		{name: "store project over 128", op: app.MemoryCreate, body: `{"content":"x","project":"` + project129 + `"}`, args: `{"content":"x","project":"` + project129 + `"}`,
			kind: app.KindInvalid, want: []string{"project must be at most 128 bytes long, got 129"}, same: true},
		{name: "list project over 128", op: app.MemoryList, query: "project=" + project129, args: `{"project":"` + project129 + `"}`,
			kind: app.KindInvalid, want: []string{"project must be at most 128 bytes long, got 129"}, same: true},
		{name: "store category over 64", op: app.MemoryCreate, body: `{"content":"x","category":"` + long(65) + `"}`, args: `{"content":"x","category":"` + long(65) + `"}`,
			kind: app.KindInvalid, want: []string{"category must be at most 64 bytes long, got 65"}, same: true},
		{name: "store 33 tags", op: app.MemoryCreate, body: `{"content":"x","tags":` + tags33 + `}`, args: `{"content":"x","tags":` + tags33 + `}`,
			kind: app.KindInvalid, want: []string{"tags may hold at most 32 items, got 33"}, same: true},
		{name: "update a tag over 64", op: app.MemoryUpdate, path: mem, body: `{"tags":["` + long(65) + `"]}`, args: `{"id":"` + id + `","tags":["` + long(65) + `"]}`,
			kind: app.KindInvalid, want: []string{"tags[0] must be at most 64 bytes long, got 65"}, same: true},
		{name: "store an empty tag", op: app.MemoryCreate, body: `{"content":"x","tags":[""]}`, args: `{"content":"x","tags":[""]}`,
			kind: app.KindInvalid, want: []string{"tags[0] must not be empty"}, same: true},

		// Bad enums.
		{name: "order sideways", op: app.MemoryList, query: "order=sideways", args: `{"order":"sideways"}`,
			kind: app.KindInvalid, want: []string{`order must be newest or oldest, got "sideways"`}, same: true},

		// Unknown fields and arguments (REST says field or query parameter,
		// MCP says argument: same kind, both name it).
		{name: "store with an unknown field", op: app.MemoryCreate, body: `{"content":"x","colour":"red"}`, args: `{"content":"x","colour":"red"}`,
			kind: app.KindInvalid, want: []string{"unknown", `"colour"`}},
		{name: "list with an unknown parameter", op: app.MemoryList, query: "colour=red", args: `{"colour":"red"}`,
			kind: app.KindInvalid, want: []string{"unknown", `"colour"`}},
		{name: "update with an unknown field", op: app.MemoryUpdate, path: mem, body: `{"colour":"red"}`, args: `{"id":"` + id + `","colour":"red"}`,
			kind: app.KindInvalid, want: []string{"unknown", `"colour"`}},
		{name: "sync status with an unknown parameter", op: app.SyncStatusOp, query: "verbose=true", args: `{"verbose":true}`,
			kind: app.KindInvalid, want: []string{"verbose"}},
		{name: "instances with an unknown parameter", op: app.InstancesList, query: "verbose=true", args: `{"verbose":true}`,
			kind: app.KindInvalid, want: []string{"verbose"}},
		{name: "resolve-all with an unknown field", op: app.ConflictsResolveAll, body: `{"tabel":"notes"}`, args: `{"tabel":"notes"}`,
			kind: app.KindInvalid, want: []string{"unknown", `"tabel"`}},

		// Wrong JSON types.
		{name: "importance as a string", op: app.MemoryCreate, body: `{"content":"x","importance":"high"}`, args: `{"content":"x","importance":"high"}`,
			kind: app.KindInvalid, want: []string{`"importance" must be a whole number, got a JSON string`}},
		{name: "tags as a string", op: app.MemoryCreate, body: `{"content":"x","tags":"a,b"}`, args: `{"content":"x","tags":"a,b"}`,
			kind: app.KindInvalid, want: []string{`"tags" must be a JSON array, got a JSON string`}},
		{name: "content as a number", op: app.MemoryCreate, body: `{"content":7}`, args: `{"content":7}`,
			kind: app.KindInvalid, want: []string{`"content" must be a string, got a JSON number`}},
		{name: "update content as a number", op: app.MemoryUpdate, path: mem, body: `{"content":7}`, args: `{"id":"` + id + `","content":7}`,
			kind: app.KindInvalid, want: []string{`"content" must be a string, got a JSON number`}},
		{name: "register gateway_url as a number", op: app.InstancesRegister, body: `{"gateway_url":5}`, args: `{"gateway_url":5}`,
			kind: app.KindInvalid, want: []string{`"gateway_url" must be a string, got a JSON number`}},
		{name: "limit as a word", op: app.MemoryList, query: "limit=ten", args: `{"limit":"ten"}`,
			kind: app.KindInvalid, want: []string{"limit", "whole number"}},
		{name: "unresolved as a word", op: app.ConflictsList, query: "unresolved=maybe", args: `{"unresolved":"maybe"}`,
			kind: app.KindInvalid, want: []string{"unresolved", "true or false"}},

		// What the input names does not exist.
		{name: "get an unknown memory", op: app.MemoryGet, path: nope, args: `{"id":"01NOPE"}`,
			kind: app.KindNotFound, want: []string{`no memory with id "01NOPE"`}, same: true},
		{name: "update an unknown memory", op: app.MemoryUpdate, path: nope, body: `{"content":"y"}`, args: `{"id":"01NOPE","content":"y"}`,
			kind: app.KindNotFound, want: []string{`no memory with id "01NOPE"`}, same: true},
		{name: "delete an unknown memory", op: app.MemoryDelete, path: nope, args: `{"id":"01NOPE"}`,
			kind: app.KindNotFound, want: []string{`no memory with id "01NOPE"`}, same: true},
		{name: "keep an unknown conflict", op: app.ConflictsKeep, path: map[string]string{"id": "nope"}, args: `{"id":"nope"}`,
			kind: app.KindNotFound, want: []string{"no sync conflict with id nope"}, same: true},
		{name: "restore an unknown conflict", op: app.ConflictsRestore, path: map[string]string{"id": "nope"}, args: `{"id":"nope"}`,
			kind: app.KindNotFound, want: []string{"no sync conflict with id nope"}, same: true},
		{name: "revoke an unknown instance", op: app.InstancesRevoke, path: map[string]string{"id": "nobody"}, args: `{"id":"nobody"}`,
			kind: app.KindNotFound, want: []string{"crow_list_instances"}, same: true},

		// Rules between fields and of the domain.
		{name: "row_id without table", op: app.ConflictsList, query: "row_id=r1", args: `{"row_id":"r1"}`,
			kind: app.KindInvalid, want: []string{"row_id needs table"}, same: true},
		{name: "conflicts of an unknown table", op: app.ConflictsList, query: "table=bogus", args: `{"table":"bogus"}`,
			kind: app.KindInvalid, want: []string{`unknown table "bogus"`}, same: true},
		{name: "resolve-all of an unknown table", op: app.ConflictsResolveAll, body: `{"table":"bogus"}`, args: `{"table":"bogus"}`,
			kind: app.KindInvalid, want: []string{`unknown table "bogus"`}, same: true},
		{name: "update with nothing to change", op: app.MemoryUpdate, path: mem, body: `{}`, args: `{"id":"` + id + `"}`,
			kind: app.KindInvalid, want: []string{"nothing to change"}, same: true},
		{name: "a cursor that is not one", op: app.ConflictsList, query: "cursor=garbage", args: `{"cursor":"garbage"}`,
			kind: app.KindInvalid, want: []string{"cursor"}, same: true},
		{name: "revoke this instance", op: app.InstancesRevoke, path: map[string]string{"id": selfID}, args: `{"id":"` + selfID + `"}`,
			kind: app.KindInvalid, want: []string{"refusing to revoke this instance itself"}, same: true},
		{name: "search without a query", op: app.MemorySearch, query: "q=", args: `{"query":" "}`,
			kind: app.KindInvalid, want: []string{"is required"}},
		{name: "search limit 1001", op: app.MemorySearch, query: "q=x&limit=1001", args: `{"query":"x","limit":1001}`,
			kind: app.KindInvalid, want: []string{"limit must be a whole number from 1 to 1000, got 1001"}, same: true},
		{name: "search instances that name none", op: app.MemorySearch, query: "q=x&instances=,", args: `{"query":"x","instances":","}`,
			kind: app.KindInvalid, want: []string{"instances must be local, all, or a comma-separated list of instance ids"}, same: true},
		{name: "state of a project without one", op: app.ProjectStateGet, path: map[string]string{"name": "nostate"}, args: `{"project":"nostate"}`,
			kind: app.KindNotFound, want: []string{"project nostate has no state version yet"}, same: true},
		{name: "consolidate without ops", op: app.ProjectConsolidate, path: map[string]string{"name": "p"}, body: `{}`, args: `{"project":"p"}`,
			kind: app.KindInvalid, want: []string{"ops is required"}, same: true},
		{name: "consolidate ops of the wrong type", op: app.ProjectConsolidate, path: map[string]string{"name": "p"}, body: `{"ops":{}}`, args: `{"project":"p","ops":{}}`,
			kind: app.KindInvalid, want: []string{`"ops" must be a JSON array`}},
		{name: "register a URL that is not http", op: app.InstancesRegister, body: `{"gateway_url":"ftp://x"}`, args: `{"gateway_url":"ftp://x"}`,
			kind: app.KindInvalid, want: []string{"invalid gateway URL"}, same: true},
	}

	walked := map[string]bool{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sp := tc.op.Info()
			walked[sp.Name] = true
			status, restMsg := restCall(t, env.url, sp, tc.path, tc.query, tc.body)
			kind, mcpMsg := mcpCall(t, c, sp.Tool, tc.args)
			if kind != tc.kind {
				t.Errorf("MCP %s: kind %v, want %v (%s)", sp.Tool, kind, tc.kind, mcpMsg)
			}
			if want := statusOfKind[tc.kind]; status != want {
				t.Errorf("REST %s %s: %d, want %d for kind %v (%s)", sp.Method, sp.Path, status, want, tc.kind, restMsg)
			}
			for _, w := range tc.want {
				if !strings.Contains(restMsg, w) {
					t.Errorf("REST message %q does not say %q", restMsg, w)
				}
				if !strings.Contains(mcpMsg, w) {
					t.Errorf("MCP message %q does not say %q", mcpMsg, w)
				}
			}
			if tc.same && restMsg != mcpMsg {
				t.Errorf("the surfaces disagree:\n REST: %s\n  MCP: %s", restMsg, mcpMsg)
			}
		})
	}
	// An operation with no case of its own above (one added later) still
	// gets one, derived from its definition: an unknown field or argument,
	// which both surfaces refuse as invalid input. Adding an operation needs
	// no edit here.
	for _, op := range app.Ops() {
		sp := op.Info()
		if sp.Method == "" || sp.Tool == "" || walked[sp.Name] {
			continue
		}
		t.Run("derived: "+sp.Name+" with an unknown field", func(t *testing.T) {
			path := map[string]string{}
			for _, f := range op.Input().Fields {
				if f.In == app.InPath {
					path[f.RESTName] = "x"
				}
			}
			query, body := "no_such_field=1", ""
			if op.Input().Body {
				query, body = "", `{"no_such_field":1}`
			}
			status, restMsg := restCall(t, env.url, sp, path, query, body)
			kind, mcpMsg := mcpCall(t, c, sp.Tool, `{"no_such_field":1}`)
			if kind != app.KindInvalid || status != statusOfKind[app.KindInvalid] {
				t.Errorf("unknown field: REST %d %q, MCP %v %q; want invalid on both", status, restMsg, kind, mcpMsg)
			}
			for _, msg := range []string{restMsg, mcpMsg} {
				if !strings.Contains(msg, "no_such_field") {
					t.Errorf("message %q does not name the unknown field", msg)
				}
			}
		})
	}
	// None of it stored anything.
	if n := len(ok(t, c, "crow_list_memories", nil)["memories"].([]any)); n != 1 {
		t.Errorf("%d memories after the bad inputs, want the 1 stored first", n)
	}
}

// restCall sends the REST request of sp with the owner key; it requires
// the one error shape and returns the status and the message.
func restCall(t *testing.T, base string, sp *app.Spec, path map[string]string, query, body string) (int, string) {
	t.Helper()
	p := sp.Path
	for k, v := range path {
		p = strings.Replace(p, "{"+k+"}", url.PathEscape(v), 1)
	}
	if query != "" {
		p += "?" + query
	}
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(sp.Method, base+p, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testKey)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		t.Fatalf("REST %s %s: %d, not a JSON answer: %v", sp.Method, p, resp.StatusCode, err)
	}
	msg, _ := e["error"].(string)
	if resp.StatusCode < 400 || msg == "" || len(e) != 1 {
		t.Fatalf(`REST %s %s: %d %v, want a 4xx {"error": "..."}`, sp.Method, p, resp.StatusCode, e)
	}
	return resp.StatusCode, msg
}

// mcpCall calls tool with the raw JSON arguments; it requires a tool error
// carrying its kind and returns the kind and the message.
func mcpCall(t *testing.T, c interface {
	CallTool(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error)
}, tool, args string) (app.Kind, string) {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	if args != "" {
		req.Params.Arguments = json.RawMessage(args)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("MCP %s: protocol error: %v", tool, err)
	}
	msg := text(res)
	if !res.IsError {
		t.Fatalf("MCP %s(%s): succeeded (%s), want a tool error", tool, args, msg)
	}
	if res.Meta == nil {
		t.Fatalf("MCP %s: tool error without _meta: %s", tool, msg)
	}
	name, _ := res.Meta.AdditionalFields[gateway.KindMetaKey].(string)
	if name == "" {
		t.Fatalf("MCP %s: tool error without _meta[%q]: %v", tool, gateway.KindMetaKey, res.Meta.AdditionalFields)
	}
	return app.ParseKind(name), msg
}
