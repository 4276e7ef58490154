package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/crow-sync/crow/conflicts"
	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/store"
)

// seedConflict records a conflict on table/rowID as the apply loop would:
// the live row is the winner, and a concurrent version from another instance
// with data changed by edit lost to it.
func seedConflict(t *testing.T, env *gatewayEnv, table, rowID string, op conflicts.Op, edit func(map[string]any)) *conflicts.Conflict {
	t.Helper()
	live, err := env.db.Get(table, rowID)
	if err != nil {
		t.Fatal(err)
	}
	var data map[string]any
	if err := json.Unmarshal(live.Data, &data); err != nil {
		t.Fatal(err)
	}
	edit(data)
	lost, _ := json.Marshal(data)
	winner := conflicts.Version{InstanceID: live.InstanceID, Lamport: live.LamportTS, VV: live.VV, Deleted: live.Deleted, Data: live.Data}
	loser := conflicts.Version{InstanceID: "inst-other", Lamport: 1, VV: store.VV{"inst-other": 1}, Data: lost}
	c, err := conflicts.New(table, rowID, winner, loser, op)
	if err != nil {
		t.Fatal(err)
	}
	err = env.db.Update(context.Background(), func(txn *store.Txn) error {
		_, err := env.cs.PutTxn(txn, c)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func conflictList(t *testing.T, v map[string]any) []map[string]any {
	t.Helper()
	raw, _ := v["conflicts"].([]any)
	out := make([]map[string]any, len(raw))
	for i, c := range raw {
		out[i] = c.(map[string]any)
	}
	return out
}

// The recovery tools through a real mcp-go client: list, restore (the row
// is written back and the conflict resolved), the guards (already resolved,
// stale, insert collision), keep and resolve-all; each result matches its
// output schema, and REST sees the same state.
func TestMCPConflictRecovery(t *testing.T) {
	env := newGatewayEnv(t)
	c := owner(t, env.url+mcpPath)
	sc := newSchemaChecker(t, c)
	ctx := context.Background()
	newMemory := func(content string) memory.Memory {
		m, err := env.mem.Add(ctx, memory.CreateInput{Content: content})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	setContent := func(s string) func(map[string]any) {
		return func(d map[string]any) { d["content"] = s }
	}

	m1, m2, m3, m4 := newMemory("one"), newMemory("two"), newMemory("three"), newMemory("four")
	c1 := seedConflict(t, env, store.TableMemories, m1.ID, conflicts.OpUpdate, setContent("one, edited elsewhere"))
	c2 := seedConflict(t, env, store.TableMemories, m2.ID, conflicts.OpUpdate, setContent("two, edited elsewhere"))
	c3 := seedConflict(t, env, store.TableMemories, m3.ID, conflicts.OpInsert, setContent("three, created elsewhere"))
	seedConflict(t, env, store.TableMemories, m4.ID, conflicts.OpUpdate, setContent("four, edited elsewhere"))

	list := ok(t, c, "crow_list_sync_conflicts", nil)
	sc.check(t, "crow_list_sync_conflicts", list)
	if got := conflictList(t, list); len(got) != 4 || got[0]["resolved"] != false {
		t.Fatalf("list = %v", list)
	}
	one := ok(t, c, "crow_list_sync_conflicts", map[string]any{"table": "memories", "row_id": m1.ID})
	if got := conflictList(t, one); len(got) != 1 || got[0]["id"] != c1.ID || got[0]["losing_data"].(map[string]any)["content"] != "one, edited elsewhere" {
		t.Fatalf("list of one row = %v", one)
	}

	// Restore: the overwritten content is live again, the conflict resolved.
	res := ok(t, c, "crow_sync_conflicts_restore_other", map[string]any{"id": c1.ID})
	sc.check(t, "crow_sync_conflicts_restore_other", res)
	if rc := res["conflict"].(map[string]any); rc["resolved"] != true || rc["resolution"] != "restore" || rc["resolved_at"] == nil {
		t.Fatalf("restored conflict = %v", rc)
	}
	if got, _ := env.mem.Get(ctx, m1.ID); got.Content != "one, edited elsewhere" {
		t.Fatalf("after restore the memory reads %q", got.Content)
	}
	row, _ := env.db.Get(store.TableMemories, m1.ID)
	if row.InstanceID != selfID || row.VV["inst-other"] != 0 || row.VV[selfID] < 2 {
		t.Fatalf("the restore is not a new local edit: %+v", row)
	}
	toolErr(t, c, "crow_sync_conflicts_restore_other", map[string]any{"id": c1.ID}, "already resolved", "restore")

	// Stale: the row changed after the conflict was recorded.
	if _, err := env.mem.Update(ctx, m2.ID, memory.PatchInput{Importance: new(9)}); err != nil {
		t.Fatal(err)
	}
	toolErr(t, c, "crow_sync_conflicts_restore_other", map[string]any{"id": c2.ID}, "stale", "changed since")
	if got, _ := env.mem.Get(ctx, m2.ID); got.Content != "two" || got.Importance != 9 {
		t.Fatalf("a refused restore changed the row: %+v", got)
	}
	// Insert collisions are never restored; both versions stay in the record.
	toolErr(t, c, "crow_sync_conflicts_restore_other", map[string]any{"id": c3.ID}, "insert collision")
	toolErr(t, c, "crow_sync_conflicts_restore_other", map[string]any{"id": "nope"}, "no sync conflict with id nope")
	toolErr(t, c, "crow_sync_conflicts_keep_current", map[string]any{}, "id is required")

	// Keep: idempotent, changes nothing in the row.
	kept := ok(t, c, "crow_sync_conflicts_keep_current", map[string]any{"id": c2.ID})
	sc.check(t, "crow_sync_conflicts_keep_current", kept)
	if kept["resolved"] != true || kept["resolution"] != "keep" {
		t.Fatalf("kept = %v", kept)
	}
	if again := ok(t, c, "crow_sync_conflicts_keep_current", map[string]any{"id": c2.ID}); again["resolved_at"] != kept["resolved_at"] {
		t.Fatalf("keep is not idempotent: %v then %v", kept, again)
	}

	// Resolve all: the two left (c3 and m4's).
	all := ok(t, c, "crow_sync_conflicts_resolve_all", nil)
	sc.check(t, "crow_sync_conflicts_resolve_all", all)
	if all["resolved"] != 2.0 {
		t.Fatalf("resolve all = %v, want 2", all)
	}
	if left := ok(t, c, "crow_list_sync_conflicts", nil); len(conflictList(t, left)) != 0 {
		t.Fatalf("unresolved after resolve all: %v", left)
	}
	if every := ok(t, c, "crow_list_sync_conflicts", map[string]any{"unresolved": false}); len(conflictList(t, every)) != 4 {
		t.Fatalf("all conflicts = %v", every)
	}
	if got, _ := env.mem.Get(ctx, m4.ID); got.Content != "four" {
		t.Fatalf("resolve all changed a row: %+v", got)
	}
	// REST agrees.
	rest := restGet(t, env.url+"/v1/sync/conflicts?unresolved=true")
	if len(conflictList(t, rest)) != 0 {
		t.Fatalf("REST unresolved = %v", rest)
	}
	if one := restGet(t, env.url+"/v1/sync/conflicts/"+c1.ID); one["resolution"] != "restore" {
		t.Fatalf("REST record = %v", one)
	}
}

// REST recovery endpoints: status codes and the error shape.
func TestRESTConflictRecovery(t *testing.T) {
	env := newGatewayEnv(t)
	ctx := context.Background()
	post := func(path, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, env.url+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+testKey)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	m, _ := env.mem.Add(ctx, memory.CreateInput{Content: "a note"})
	cu := seedConflict(t, env, store.TableMemories, m.ID, conflicts.OpUpdate, func(d map[string]any) { d["content"] = "other" })
	// A losing delete: restore deletes the row.
	m2, _ := env.mem.Add(ctx, memory.CreateInput{Content: "to be deleted"})
	live, _ := env.db.Get(store.TableMemories, m2.ID)
	cd, _ := conflicts.New(store.TableMemories, m2.ID,
		conflicts.Version{InstanceID: live.InstanceID, Lamport: live.LamportTS, VV: live.VV, Data: live.Data},
		conflicts.Version{InstanceID: "inst-other", Lamport: 1, VV: store.VV{"inst-other": 1}, Deleted: true, Data: live.Data},
		conflicts.OpDelete)
	env.db.Update(context.Background(), func(txn *store.Txn) error { _, err := env.cs.PutTxn(txn, cd); return err })

	if code, body := post("/v1/sync/conflicts/nope/keep", ""); code != 404 || body["error"] == nil {
		t.Fatalf("keep unknown = %d %v", code, body)
	}
	if code, body := post("/v1/sync/conflicts/resolve-all", `{"table":"bogus"}`); code != 400 || !strings.Contains(body["error"].(string), "bogus") {
		t.Fatalf("resolve-all of an unknown table = %d %v", code, body)
	}
	if code, body := post("/v1/sync/conflicts/"+cd.ID+"/restore", ""); code != 200 || body["row"].(map[string]any)["deleted"] != true {
		t.Fatalf("restore of a losing delete = %d %v", code, body)
	}
	if _, err := env.mem.Get(ctx, m2.ID); err == nil {
		t.Fatal("restoring a losing delete left the memory live")
	}
	if code, body := post("/v1/sync/conflicts/"+cd.ID+"/restore", ""); code != 409 || !strings.Contains(body["error"].(string), "already resolved") {
		t.Fatalf("restore twice = %d %v", code, body)
	}
	if code, body := post("/v1/sync/conflicts/resolve-all", `{"table":"notes"}`); code != 200 || body["resolved"] != 0.0 {
		t.Fatalf("resolve-all of notes = %d %v", code, body)
	}
	if code, body := post("/v1/sync/conflicts/resolve-all", ""); code != 200 || body["resolved"] != 1.0 {
		t.Fatalf("resolve-all = %d %v", code, body)
	}
	if c, _ := env.cs.Get(cu.ID); !c.Resolved || c.Resolution != conflicts.ActionKeep {
		t.Fatalf("after resolve-all: %+v", c)
	}
}
