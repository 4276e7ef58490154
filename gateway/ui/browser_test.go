package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"github.com/crow-sync/crow/gateway/ui"
	"github.com/crow-sync/crow/gateway/ui/uitest"
)

// The browser test drives the real pages in headless Chromium against a fake
// of the REST API: it checks what the owner sees and that the actions reach
// the API (the fake's state changes), not only that the pages load.

const testKey = "testkey"

// xss is row text that would run script if the UI parsed data as HTML.
const xss = `<img src=x onerror=alert(1)>`

// fakeConflict has the JSON shape of GET /v1/sync/conflicts/{id}.
type fakeConflict struct {
	ID                string            `json:"id"`
	TableName         string            `json:"table_name"`
	RowID             string            `json:"row_id"`
	WinningInstanceID string            `json:"winning_instance_id"`
	LosingInstanceID  string            `json:"losing_instance_id"`
	WinningLamportTS  uint64            `json:"winning_lamport_ts"`
	LosingLamportTS   uint64            `json:"losing_lamport_ts"`
	WinningData       map[string]any    `json:"winning_data"`
	LosingData        map[string]any    `json:"losing_data"`
	Op                string            `json:"op"`
	Resolved          bool              `json:"resolved"`
	ResolvedAt        *time.Time        `json:"resolved_at"`
	CreatedAt         time.Time         `json:"created_at"`
	WinningVV         map[string]uint64 `json:"winning_vv"`
	LosingVV          map[string]uint64 `json:"losing_vv"`
	WinningDeleted    bool              `json:"winning_deleted"`
	LosingDeleted     bool              `json:"losing_deleted"`
	Resolution        string            `json:"resolution"`

	stale bool // the live row changed since: restore answers 409
}

type fakeNotification struct {
	ID        string    `json:"id"`
	Kind      string    `json:"kind"`
	Priority  string    `json:"priority"`
	Title     string    `json:"title"`
	Body      string    `json:"body"`
	Link      string    `json:"link"`
	Read      bool      `json:"read"`
	CreatedAt time.Time `json:"created_at"`
}

// fakeAPI is an in-memory stand-in for the gateway's REST API.
type fakeAPI struct {
	mu            sync.Mutex
	conflicts     []*fakeConflict // newest first
	notifications []*fakeNotification
	calls         []string // the state-changing calls, e.g. "restore c1"
	unauthorized  int      // requests answered 401
	keyed         int      // requests that carried the right key

	projects []map[string]any // GET /v1/projects
	states   map[string]any   // project -> GET /v1/project/{name}/state
	verifies map[string]any   // project -> GET /v1/verify/{name}
	// verifyAuth has, per call of the public GET /v1/verify/{name}, the
	// credentials it carried (Authorization, x-api-key, Cookie): "" when none.
	verifyAuth []string

	// role is this instance's role in GET /health: "home" (inst-home, as
	// newFakeAPI makes it) or "satellite" (inst-laptop).
	role       string
	healthDown bool         // GET /health answers 503
	invites    []fakeInvite // every POST /v1/instances/invite, in order

	memories []map[string]any    // live memories, newest first (see memoryRoutes)
	rows     map[string]*fakeRow // table/row_id -> the live row of a conflict
	forgets  []fakeForget        // every POST /v1/memory/{id}/forget, in order
	searches []string            // the q of every GET /v1/memories/search
}

// Hashes of the fake project state versions.
var (
	hashV1     = "0x" + strings.Repeat("a1", 32)
	hashV2     = "0x" + strings.Repeat("a2", 32)
	hashForged = "0x" + strings.Repeat("ee", 32) // what home's record of alpha v2 commits
	projectID  = "0x" + strings.Repeat("5a", 32)
	contract   = "0x" + strings.Repeat("c0", 20)
	owner      = "0x" + strings.Repeat("b0", 20) // the anchoring address
)

const noStateMsg = "project beta notes has no state version yet (POST /v1/project/beta notes/state/ops creates one)"

func provenance(item map[string]any, evidence []int, created, updated int) map[string]any {
	item["evidence_memory_ids"] = evidence
	item["evidence_root"] = "0x" + strings.Repeat(fmt.Sprintf("%02x", evidence[0]), 32)
	item["created_version"] = created
	item["updated_version"] = updated
	return item
}

// rootOf is the fake Merkle root numbered id.
func rootOf(id int) string { return fmt.Sprintf("0x%064x", 0xd000+id) }

// checked is one version of a fake GET /v1/verify/{name} answer, with status
// (final, included, pending, mismatch, missing or unverified). Unless
// pending, the version is in root #rootID, sent in block, and has a packet
// whose state hash is record (home's record: another than stateHash makes a
// mismatch).
func checked(version int, stateHash, status, record string, rootID, block int) map[string]any {
	v := map[string]any{"version": version, "state_hash": stateHash, "status": status, "match": status != "mismatch" && status != "pending",
		"generated_at": time.Now().Add(-2 * time.Hour).UTC().Format(time.RFC3339)}
	if status == "pending" {
		return v
	}
	tx := "0x" + strings.Repeat(fmt.Sprintf("%02x", block), 32)
	v["root"], v["root_id"], v["anchored_by"], v["tx_hash"], v["block_number"] = rootOf(rootID), rootID, owner, tx, block
	if status == "final" || status == "included" {
		v["anchored_at"] = time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	}
	v["packet"] = map[string]any{"chain_id": 1337, "contract": contract, "project_id": projectID, "version": version,
		"state_hash": record, "leaf_types": []string{"bytes32", "uint64", "bytes32"}, "root": rootOf(rootID),
		"proof": []string{"0x" + strings.Repeat("9f", 32)}, "root_id": rootID, "tx_hash": tx, "block_number": block, "status": status,
		"anchoring_address": owner, "crow_id": "crow1fake", "root_public_key": "0x" + strings.Repeat("11", 32),
		"address_signature": "0x" + strings.Repeat("22", 64), "rpc_url": "http://127.0.0.1:1/v1/chain/rpc"}
	return v
}

const howTo = "Take a version's packet: check with OpenZeppelin's StandardMerkleTree.verify(root, ...), then call getRoot(root)"

const staleMsg = "stale: memories/mem-2 changed since the conflict was recorded; reload it and choose again"

func newFakeAPI() *fakeAPI {
	now := time.Now().UTC().Truncate(time.Second)
	f := &fakeAPI{
		role:     "home",
		memories: fakeMemories(now),
		conflicts: []*fakeConflict{
			{
				ID: "c1", TableName: "memories", RowID: "mem-1", Op: "update", CreatedAt: now.Add(-1 * time.Minute),
				WinningInstanceID: "inst-home", WinningLamportTS: 12, WinningVV: map[string]uint64{"inst-home": 12},
				WinningData:      map[string]any{"content": "the current text", "importance": 5, "tags": []string{"a", "b"}},
				LosingInstanceID: "inst-laptop", LosingLamportTS: 11, LosingVV: map[string]uint64{"inst-laptop": 11},
				LosingData: map[string]any{"content": xss, "importance": 5, "category": "old"},
			},
			{
				ID: "c2", TableName: "notes", RowID: "note-7", Op: "insert", CreatedAt: now.Add(-2 * time.Minute),
				WinningInstanceID: "inst-home", WinningLamportTS: 3, WinningVV: map[string]uint64{"inst-home": 3},
				WinningData:      map[string]any{"title": "home's note"},
				LosingInstanceID: "inst-laptop", LosingLamportTS: 2, LosingVV: map[string]uint64{"inst-laptop": 2},
				LosingData: map[string]any{"title": "laptop's note"},
			},
			{
				ID: "c3", TableName: "memories", RowID: "mem-2", Op: "update", CreatedAt: now.Add(-3 * time.Minute), stale: true,
				WinningInstanceID: "inst-laptop", WinningLamportTS: 9, WinningVV: map[string]uint64{"inst-laptop": 9},
				WinningData:      map[string]any{"content": "laptop edit"},
				LosingInstanceID: "inst-home", LosingLamportTS: 8, LosingVV: map[string]uint64{"inst-home": 8},
				LosingData: map[string]any{"content": "home edit"},
			},
			{
				// The laptop deleted mem-4 while home edited it; home's edit won.
				ID: "c4", TableName: "memories", RowID: "mem-4", Op: "delete", CreatedAt: now.Add(-4 * time.Minute),
				WinningInstanceID: "inst-home", WinningLamportTS: 6, WinningVV: map[string]uint64{"inst-home": 6},
				WinningData:      map[string]any{"content": "kept by home", "tags": []string{"x"}},
				LosingInstanceID: "inst-laptop", LosingLamportTS: 5, LosingVV: map[string]uint64{"inst-laptop": 5},
				LosingDeleted: true,
			},
		},
		notifications: []*fakeNotification{
			{ID: "n1", Kind: "sync_conflict", Priority: "high", Title: "Sync conflicts need a look",
				Body: "2 instances changed the same rows", Link: "/ui/conflicts", CreatedAt: now.Add(-time.Minute)},
			{ID: "n2", Kind: "instance", Priority: "normal", Title: "laptop is offline",
				Body: "<script>alert(2)</script>", Link: "javascript:alert(3)", Read: true, CreatedAt: now.Add(-time.Hour)},
		},
		projects: []map[string]any{
			{"name": "alpha", "description": "the crow daemon", "memories": 12, "state_version": 2, "state_hash": hashV2},
			{"name": "beta notes", "description": "", "memories": 0, "state_version": 0, "state_hash": ""},
		},
		states: map[string]any{"alpha": map[string]any{
			"project": "alpha", "schema_version": 2, "version": 2, "state_hash": hashV2, "generated_at": now.Add(-2 * time.Hour).Format(time.RFC3339),
			"state": map[string]any{
				"phase": "build", "current_focus": "ship the verify page",
				"decisions": []map[string]any{
					provenance(map[string]any{"id": "dec_0001", "title": "Store in SQLite", "statement": "Use SQLite.", "status": "superseded", "superseded_by": "dec_0002"}, []int{1, 2}, 1, 2),
					provenance(map[string]any{"id": "dec_0002", "title": "Store in badger", "statement": xss, "status": "confirmed", "superseded_by": nil}, []int{4}, 2, 2),
				},
				"milestones": []map[string]any{provenance(map[string]any{"id": "mil_0001", "title": "First sync", "status": "done"}, []int{3}, 1, 1)},
				"risks": []map[string]any{
					provenance(map[string]any{"id": "risk_0001", "title": "Chain outage " + xss, "severity": "high", "status": "open"}, []int{5}, 2, 2),
				},
				"assumptions": []any{}, "open_questions": []any{}, "priorities": []any{}, "constraints": []any{}, "vision": []any{},
				"vocabulary": []map[string]any{provenance(map[string]any{"id": "voc_0001", "term": "anchor", "definition": "a state hash written on chain"}, []int{5}, 2, 2)},
				"metrics":    []any{},
				"state_meta": map[string]any{"version": 2, "consolidated_until_event": 5, "previous_state_hash": hashV1},
			},
			"stale_evidence": map[string]any{"mil_0001": []map[string]any{{"number": 3, "superseded_by": 9}}},
		}},
		verifies: map[string]any{
			// alpha: v1 final; home's record of v2 commits another hash.
			"alpha": map[string]any{"project": "alpha", "project_id": projectID,
				"chain":    map[string]any{"kind": "embedded", "chain_id": 1337, "contract": contract},
				"versions": []map[string]any{checked(1, hashV1, "final", hashV1, 1, 7), checked(2, hashV2, "mismatch", hashForged, 2, 9)},
				"verified": false, "how_to_verify": howTo},
			// gamma: v1 final, v2 in a block, not final yet.
			"gamma": map[string]any{"project": "gamma", "project_id": "0x" + strings.Repeat("6b", 32),
				"chain":    map[string]any{"kind": "embedded", "chain_id": 1337, "contract": contract},
				"versions": []map[string]any{checked(1, hashV1, "final", hashV1, 1, 3), checked(2, hashV2, "included", hashV2, 2, 5)},
				"verified": true, "how_to_verify": howTo},
			// delta: v1's root is not on the chain read; v2 pending.
			"delta": map[string]any{"project": "delta", "project_id": "0x" + strings.Repeat("7c", 32),
				"chain":    map[string]any{"kind": "embedded", "chain_id": 1337, "contract": contract},
				"versions": []map[string]any{checked(1, hashV1, "missing", hashV1, 4, 11), checked(2, hashV2, "pending", "", 0, 0)},
				"verified": false, "how_to_verify": howTo},
			// zeta: its only version, final.
			"zeta": map[string]any{"project": "zeta", "project_id": "0x" + strings.Repeat("9e", 32),
				"chain":    map[string]any{"kind": "embedded", "chain_id": 1337, "contract": contract},
				"versions": []map[string]any{checked(1, hashV1, "final", hashV1, 1, 3)},
				"verified": true, "how_to_verify": howTo},
			// epsilon: read on an instance with no chain.
			"epsilon": map[string]any{"project": "epsilon", "project_id": "0x" + strings.Repeat("8d", 32), "chain": nil,
				"versions": []map[string]any{checked(1, hashV1, "unverified", hashV1, 1, 3)},
				"verified": false, "how_to_verify": howTo},
		},
	}
	f.liveRows()
	return f
}

// fakeRow is the live row of a conflict (GET /v1/tables/{table}/rows/{row_id}).
type fakeRow struct {
	Table      string         `json:"table"`
	RowID      string         `json:"row_id"`
	Data       map[string]any `json:"data"`
	Deleted    bool           `json:"deleted"`
	InstanceID string         `json:"instance_id"`
	LamportTS  uint64         `json:"lamport_ts"`
}

// liveRows makes the live row of each conflict: its winning version.
func (f *fakeAPI) liveRows() {
	f.rows = map[string]*fakeRow{}
	for _, c := range f.conflicts {
		f.rows[c.TableName+"/"+c.RowID] = &fakeRow{Table: c.TableName, RowID: c.RowID, Data: c.WinningData,
			Deleted: c.WinningDeleted, InstanceID: c.WinningInstanceID, LamportTS: c.WinningLamportTS}
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, status int, format string, args ...any) {
	writeJSON(w, status, map[string]string{"error": fmt.Sprintf(format, args...)})
}

func (f *fakeAPI) find(id string) *fakeConflict {
	for _, c := range f.conflicts {
		if c.ID == id {
			return c
		}
	}
	return nil
}

func (f *fakeAPI) resolve(c *fakeConflict, how string) {
	now := time.Now().UTC()
	c.Resolved, c.ResolvedAt, c.Resolution = true, &now, how
}

func (f *fakeAPI) record(call string) { f.calls = append(f.calls, call) }

func (f *fakeAPI) called(call string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Contains(f.calls, call)
}

// requests returns how many /v1 calls carried the key and how many were
// refused, and the credentials of each public verify call.
func (f *fakeAPI) requests() (keyed, unauthorized int, verifyAuth []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.keyed, f.unauthorized, slices.Clone(f.verifyAuth)
}

func (f *fakeAPI) snapshot() (calls []string, unauthorized int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls), f.unauthorized
}

func (f *fakeAPI) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/ui/", ui.Handler())
	mux.HandleFunc("GET /v1/sync/conflicts", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		list := []*fakeConflict{}
		for _, c := range f.conflicts {
			if q.Get("unresolved") == "true" && c.Resolved {
				continue
			}
			if t := q.Get("table"); t != "" && c.TableName != t {
				continue
			}
			list = append(list, c)
		}
		writeJSON(w, http.StatusOK, map[string]any{"conflicts": list, "next_cursor": ""})
	})
	mux.HandleFunc("GET /v1/sync/conflicts/{id}", func(w http.ResponseWriter, r *http.Request) {
		if c := f.find(r.PathValue("id")); c != nil {
			writeJSON(w, http.StatusOK, c)
			return
		}
		writeErr(w, http.StatusNotFound, "no sync conflict with id %s", r.PathValue("id"))
	})
	mux.HandleFunc("POST /v1/sync/conflicts/{id}/keep", func(w http.ResponseWriter, r *http.Request) {
		c := f.find(r.PathValue("id"))
		if c == nil {
			writeErr(w, http.StatusNotFound, "no sync conflict with id %s", r.PathValue("id"))
			return
		}
		f.record("keep " + c.ID)
		if !c.Resolved {
			f.resolve(c, "keep")
		}
		writeJSON(w, http.StatusOK, c)
	})
	mux.HandleFunc("POST /v1/sync/conflicts/{id}/restore", func(w http.ResponseWriter, r *http.Request) {
		c := f.find(r.PathValue("id"))
		if c == nil {
			writeErr(w, http.StatusNotFound, "no sync conflict with id %s", r.PathValue("id"))
			return
		}
		f.record("restore " + c.ID)
		switch {
		case c.Resolved:
			writeErr(w, http.StatusConflict, "conflict %s is already resolved", c.ID)
		case c.Op == "insert":
			writeErr(w, http.StatusConflict, "restore refused: %s/%s is an insert collision; resolve it by hand", c.TableName, c.RowID)
		case c.stale:
			writeErr(w, http.StatusConflict, "%s", staleMsg)
		default:
			f.resolve(c, "restore")
			row := f.rows[c.TableName+"/"+c.RowID]
			row.Data, row.Deleted, row.InstanceID, row.LamportTS = c.LosingData, c.LosingDeleted, f.self(), row.LamportTS+10
			writeJSON(w, http.StatusOK, map[string]any{"conflict": c, "row": map[string]any{"table": c.TableName, "row_id": c.RowID, "data": c.LosingData}})
		}
	})
	mux.HandleFunc("POST /v1/sync/conflicts/resolve-all", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Table string `json:"table"`
		}
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			writeErr(w, http.StatusBadRequest, "body: %v", err)
			return
		}
		f.record("resolve-all " + in.Table)
		n := 0
		for _, c := range f.conflicts {
			if !c.Resolved && (in.Table == "" || c.TableName == in.Table) {
				f.resolve(c, "keep")
				n++
			}
		}
		writeJSON(w, http.StatusOK, map[string]int{"resolved": n})
	})
	mux.HandleFunc("GET /v1/tables/{table}/rows/{row_id}", func(w http.ResponseWriter, r *http.Request) {
		row := f.rows[r.PathValue("table")+"/"+r.PathValue("row_id")]
		if row == nil || row.Deleted && r.URL.Query().Get("deleted") != "true" {
			writeErr(w, http.StatusNotFound, "no row %s in %s", r.PathValue("row_id"), r.PathValue("table"))
			return
		}
		writeJSON(w, http.StatusOK, row)
	})
	mux.HandleFunc("GET /v1/notifications", func(w http.ResponseWriter, r *http.Request) {
		unread := 0
		for _, n := range f.notifications {
			if !n.Read {
				unread++
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{"notifications": f.notifications, "unread": unread, "next_cursor": ""})
	})
	mux.HandleFunc("POST /v1/notifications/{id}/read", func(w http.ResponseWriter, r *http.Request) {
		for _, n := range f.notifications {
			if n.ID == r.PathValue("id") {
				f.record("read " + n.ID)
				n.Read = true
				writeJSON(w, http.StatusOK, map[string]any{"id": n.ID, "read": true})
				return
			}
		}
		writeErr(w, http.StatusNotFound, "no notification with id %s", r.PathValue("id"))
	})
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		if f.healthDown {
			writeErr(w, http.StatusServiceUnavailable, "health is down for the test")
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "instance_id": f.self(), "role": f.role,
			"crow_id": "crow-fake", "public_key": "ab", "version": "test", "sync_addrs": []string{}})
	})
	f.inviteRoutes(mux)
	f.memoryRoutes(mux)
	mux.HandleFunc("GET /v1/instances", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"self": f.self(), "instances": []map[string]any{
			{"id": "inst-home", "name": "home", "role": "home", "gateway_url": "http://127.0.0.1:3001", "status": "online",
				"last_seen": time.Now().Unix(), "public_key": "ab", "sync_addrs": []string{}},
			{"id": "inst-laptop", "name": "laptop", "role": "satellite", "gateway_url": "http://100.64.0.2:3001", "status": "offline",
				"last_seen": 0, "public_key": "cd", "sync_addrs": []string{}},
		}})
	})
	mux.HandleFunc("GET /v1/sync/status", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"instance_id": "inst-home", "paused": false,
			"feeds": []map[string]any{
				{"feed": strings.Repeat("ab", 32), "instance_id": "inst-home", "name": "home", "length": 40},
				{"feed": strings.Repeat("cd", 32), "instance_id": "inst-laptop", "name": "laptop", "length": 33},
			},
			"peers": []map[string]any{
				{"instance_id": "inst-laptop", "name": "laptop", "peer_id": "12D3KooWfake", "connected": false, "lag": 7,
					"last_seen": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), "entries_received": 33, "entries_sent": 40, "feeds": []any{}},
			}})
	})
	mux.HandleFunc("GET /v1/projects", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"projects": f.projects})
	})
	noState := func(w http.ResponseWriter, name string) {
		writeErr(w, http.StatusNotFound, "project %s has no state version yet (POST /v1/project/%s/state/ops creates one)", name, name)
	}
	mux.HandleFunc("GET /v1/project/{name}/state", func(w http.ResponseWriter, r *http.Request) {
		if v, ok := f.states[r.PathValue("name")]; ok {
			writeJSON(w, http.StatusOK, v)
			return
		}
		noState(w, r.PathValue("name"))
	})
	// Public, like the gateway's: the wrapper below lets it through without a key.
	mux.HandleFunc("GET /v1/verify/{name}", func(w http.ResponseWriter, r *http.Request) {
		if v, ok := f.verifies[r.PathValue("name")]; ok {
			writeJSON(w, http.StatusOK, v)
			return
		}
		noState(w, r.PathValue("name"))
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if strings.HasPrefix(r.URL.Path, "/v1/verify/") {
			f.verifyAuth = append(f.verifyAuth, r.Header.Get("Authorization")+r.Header.Get("X-Api-Key")+r.Header.Get("Cookie"))
			mux.ServeHTTP(w, r)
			return
		}
		if strings.HasPrefix(r.URL.Path, "/v1/") {
			switch r.Header.Get("Authorization") {
			case "Bearer " + testKey:
				f.keyed++
			case "":
				f.unauthorized++
				writeErr(w, http.StatusUnauthorized, "missing API key: send Authorization: Bearer <key>")
				return
			default:
				f.unauthorized++
				writeErr(w, http.StatusUnauthorized, "wrong API key")
				return
			}
		}
		mux.ServeHTTP(w, r)
	})
}

// startBrowser starts headless Chromium with one tab on the server at base
// (the caller registers the server's Close with t.Cleanup first, so the
// browser goes before it). Every wait is bounded by 10 s, the whole test,
// browser included, ends within a minute whatever happens.
// centred clicks the element sel after scrolling it to the middle of the
// view: the sticky status area covers the top of it.
func centred(sel string) []chromedp.Action[chromedp.Void] {
	return []chromedp.Action[chromedp.Void]{
		chromedp.Evaluate[chromedp.Void](`document.querySelector(` + uitest.JS(sel) + `).scrollIntoView({block: 'center'})`),
		chromedp.Click(chromedp.CSS(sel)),
	}
}

func startBrowser(t *testing.T, base string) *uitest.Tab {
	t.Helper()
	execPath := uitest.FindBrowser(t, "the web UI browser test")
	return uitest.NewTab(t, execPath, base, uitest.Options{
		Budget:  uitest.Budget{Wait: 10 * time.Second, Total: time.Minute, Deadline: time.Now().Add(time.Minute)},
		Poll:    8 * time.Second,
		Start:   time.Minute,
		Confirm: "(no window dialog is expected: the pages confirm with their own dialog element)",
	})
}

func TestBrowserRecoveryView(t *testing.T) {
	began := time.Now()
	api := newFakeAPI()
	srv := httptest.NewServer(api.handler())
	t.Cleanup(srv.Close)
	s := startBrowser(t, srv.URL)
	dialog := `document.getElementById('confirm-dialog')`
	confirmText := `document.getElementById('confirm-text').textContent`

	// --- The key form: no key yet, then a wrong key (401), then the right one.
	s.Do("open /ui/conflicts", chromedp.Navigate(s.Base+"/ui/conflicts"))
	s.Wait("the key form", `document.getElementById('login') && !document.getElementById('login').hidden`)
	s.Check("the form names the key file", `document.querySelector('#login label').textContent === 'Owner API key (the content of $CROW_HOME/api-key)'`)
	s.Check("no data shown before a key", `document.getElementById('content').hidden`)

	s.Do("enter a wrong key", chromedp.SendKeys(chromedp.ID("login-key"), "not-the-key"), chromedp.Click(chromedp.ID("login-submit")))
	s.Wait("the 401 message", `!document.getElementById('login-msg').hidden && document.getElementById('login-msg').textContent.includes('wrong API key')`)
	s.Check("the refused key is forgotten", `sessionStorage.getItem('crow-api-key') === null && !document.getElementById('login').hidden && document.getElementById('content').hidden`)

	s.Do("enter the key", chromedp.SendKeys(chromedp.ID("login-key"), testKey), chromedp.Click(chromedp.ID("login-submit")))
	s.Wait("4 unresolved conflicts", uitest.Count(`#conflict-list tbody tr`)+` === 4`)
	s.Check("the key is kept for the tab", `sessionStorage.getItem('crow-api-key') === 'testkey' && document.getElementById('login').hidden`)
	s.Check("newest first", `[...document.querySelectorAll('#conflict-list tbody tr')].map(r => r.dataset.id).join() === 'c1,c2,c3,c4'`)
	s.Check("the list names the instances, the ids on hover",
		`(r => r.querySelector('[data-field="winning"]').textContent === 'home' && r.querySelector('[data-field="winning"]').title === 'inst-home'`+
			` && r.querySelector('[data-field="losing"]').textContent === 'laptop' && r.querySelector('[data-field="losing"]').title === 'inst-laptop'`+
			` && r.querySelector('[data-field="instances"]').textContent === 'home @12 vs laptop @11')(document.querySelector('#conflict-list tr[data-id="c1"]'))`)

	// --- Detail of c1: both versions side by side and the per-field diff.
	s.Do("open c1", centred(`button[data-open="c1"]`)...)
	s.Wait("the detail of c1", `!document.getElementById('detail').hidden && document.getElementById('detail-title').textContent.includes('mem-1')`)
	s.Check("current version: instance, lamport, deleted flag",
		`(t => t.includes('inst-home') && t.includes('12') && t.includes('Deleted') && t.includes('no') && t.includes('the current text'))(document.getElementById('version-current').textContent)`)
	s.Check("overwritten version: instance, lamport, data",
		`(t => t.includes('inst-laptop') && t.includes('11') && t.includes('"category": "old"'))(document.getElementById('version-overwritten').textContent)`)
	s.Check("instance names from /v1/instances, the id in a detail line",
		`document.querySelector('#version-current [data-field="instance"]').textContent === 'home' && document.querySelector('#version-current dd[data-field="instance_id"]').textContent === 'inst-home'`+
			` && document.querySelector('#version-overwritten [data-field="instance"]').textContent === 'laptop' && document.querySelector('#detail-meta [data-field="between"]').textContent === 'home (current) and laptop (overwritten)'`)
	s.Check("the live row is the current version", `(d => d.dataset.side === 'winning' && d.textContent.startsWith('the current version (as below) · written by home at Lamport 12'))(document.querySelector('#detail-meta [data-field="live"]'))`+
		` && document.querySelector('#version-current h3 .sub').textContent === '(winning, live now)' && document.querySelector('#version-overwritten h3 .sub').textContent === '(losing)'`)
	s.Check("the raw JSON is behind a toggle", `[...document.querySelectorAll('.versions details.raw')].every(d => !d.open && d.querySelector('summary').textContent === 'Raw JSON' && !d.querySelector('pre').checkVisibility())`)
	s.Check("side by side", `(a => a[0].top === a[1].top && a[0].right <= a[1].left)([...document.querySelectorAll('.versions .version')].map(e => e.getBoundingClientRect()))`)
	for field, change := range map[string]string{"content": "changed", "tags": "removed", "category": "added", "importance": "same"} {
		s.Check("diff marks "+field+" "+change, fmt.Sprintf(`(r => r !== null && r.dataset.change === %q && r.classList.contains('diff-%s'))(document.querySelector('#diff tr[data-field="%s"]'))`, change, change, field))
	}
	s.Check("a changed field is highlighted (CSS loaded under the CSP)",
		`getComputedStyle(document.querySelector('#diff tr[data-field="content"] td')).backgroundColor !== getComputedStyle(document.querySelector('#diff tr[data-field="importance"] td')).backgroundColor`)
	s.Check("content as a word diff: the current text removed, the overwritten added",
		`(r => r.dataset.kind === 'text' && [...r.querySelectorAll('del.w-del')].map(e => e.textContent).join('|') === 'the current text'`+
			` && [...r.querySelectorAll('ins.w-ins')].map(e => e.textContent).join('|') === `+uitest.JS(xss)+`)(document.querySelector('#diff tr[data-field="content"]'))`)
	s.Check("tags as a set: a and b removed", `(r => r.dataset.kind === 'set' && [...r.querySelectorAll('.chip.removed')].map(e => e.textContent).join() === '− a,− b' && r.querySelectorAll('.chip.added').length === 0)(document.querySelector('#diff tr[data-field="tags"]'))`)
	s.Check("a field only in the overwritten version: absent → value", `document.querySelector('#diff tr[data-field="category"] td.human').textContent === '(absent) → old'`)
	s.Check("the summary", `document.getElementById('diff-summary').textContent.startsWith('3 fields differ: 1 changed, 1 only in overwritten, 1 only in current; 1 unchanged.')`)
	s.Check("markup in row data is shown as text", `document.getElementById('version-overwritten').textContent.includes('<img src=x onerror=alert(1)>') && document.querySelector('#diff tr[data-field="content"]').textContent.includes('<img src=x onerror=alert(1)>')`)
	s.Check("restore offered for an update", `!document.getElementById('restore').disabled && document.getElementById('restore-note').hidden`)
	s.Clean("detail of c1")

	// --- Restore c1: a confirmation that says which version becomes live;
	// Cancel sends nothing.
	s.Do("restore c1", chromedp.Click(chromedp.ID("restore")))
	s.Wait("the confirmation", dialog+`.open && `+dialog+`.matches(':modal')`)
	s.Check("it says what the restore does", `document.getElementById('confirm-title').textContent === 'Restore the overwritten version of memories / mem-1?'`+
		` && `+confirmText+`.includes('The overwritten version from laptop (Lamport 11) becomes the live version of memories / mem-1 on every instance, as a new edit; the current version from home is replaced.')`+
		` && `+confirmText+`.includes('Fields that change: content, tags, category.') && document.getElementById('confirm-ok').textContent === 'Restore'`+
		` && document.activeElement === document.getElementById('confirm-cancel')`)
	s.Do("cancel", chromedp.Click(chromedp.ID("confirm-cancel")))
	s.Wait("closed", `!`+dialog+`.open`)
	if api.called("restore c1") {
		t.Fatal("Cancel restored c1")
	}
	s.Do("restore c1, confirmed", chromedp.Click(chromedp.ID("restore")))
	s.Wait("the confirmation", dialog+`.open`)
	s.Do("confirm", chromedp.Click(chromedp.ID("confirm-ok")))
	s.Wait("c1 gone from the unresolved list", uitest.Count(`#conflict-list tbody tr`)+` === 3 && !document.querySelector('#conflict-list tr[data-id="c1"]')`)
	if !api.called("restore c1") {
		t.Error("the fake API saw no restore of c1")
	}
	s.Check("restore reported", `document.getElementById('status').className === 'ok' && document.getElementById('status').textContent.includes('Restored the overwritten version of memories / mem-1')`)
	s.Check("the detail shows c1 resolved", `document.querySelector('#detail-meta [data-field="state"]').textContent.startsWith('resolved · restored') && document.getElementById('keep').disabled && document.getElementById('restore').disabled`)
	s.Check("the live row re-read: the restored version is live now, not the old one",
		`(d => d.dataset.side === 'losing' && d.textContent.startsWith('the overwritten version (it was restored) · written by home at Lamport 22'))(document.querySelector('#detail-meta [data-field="live"]'))`+
			` && document.querySelector('#version-current h3 .sub').textContent === '(winning, no longer live)' && document.querySelector('#version-overwritten h3 .sub').textContent === '(losing, restored: live now)'`+
			` && !document.getElementById('version-current').textContent.includes('live now')`)

	// --- Restore of a stale conflict: the 409 text is shown; then Keep.
	s.Do("open c3", centred(`button[data-open="c3"]`)...)
	s.Wait("the detail of c3", `document.getElementById('detail-title').textContent.includes('mem-2') && !document.getElementById('restore').disabled`)
	s.Do("restore c3", chromedp.Click(chromedp.ID("restore")))
	s.Wait("the confirmation", dialog+`.open`)
	s.Do("confirm", chromedp.Click(chromedp.ID("confirm-ok")))
	s.Wait("the 409 message", `document.getElementById('status').className === 'error' && document.getElementById('status').textContent.includes(`+uitest.JS(staleMsg)+`)`)
	s.Wait("c3 still unresolved, keep offered", uitest.Count(`#conflict-list tbody tr[data-id="c3"]`)+` === 1 && !document.getElementById('keep').disabled`)
	s.Do("keep c3", chromedp.Click(chromedp.ID("keep")))
	s.Wait("the confirmation of keep", dialog+`.open && document.getElementById('confirm-title').textContent === 'Keep the current version of memories / mem-2?'`)
	s.Check("it says what keep does", confirmText+`.includes('The current version from laptop (Lamport 9) stays live; nothing is written to the row.')`+
		` && `+confirmText+`.includes('The overwritten version from home is not brought back.')`)
	s.Do("confirm", chromedp.Click(chromedp.ID("confirm-ok")))
	s.Wait("c3 gone from the unresolved list", uitest.Count(`#conflict-list tbody tr`)+` === 2 && !document.querySelector('#conflict-list tr[data-id="c3"]')`)
	if !api.called("keep c3") {
		t.Error("the fake API saw no keep of c3")
	}
	s.Check("keep reported", `document.getElementById('status').className === 'ok' && document.getElementById('status').textContent.includes('Kept the current version of memories / mem-2')`)

	// --- Delete vs update: restoring the loser deletes the row, and says so.
	s.Do("open c4", centred(`button[data-open="c4"]`)...)
	s.Wait("the detail of c4", `document.getElementById('detail-title').textContent.includes('mem-4') && !document.getElementById('restore').disabled`)
	s.Check("the overwritten version is a deletion", `document.querySelector('#version-overwritten dd[data-field="deleted"]').textContent === 'yes (a tombstone)'`)
	s.Do("restore c4", chromedp.Click(chromedp.ID("restore")))
	s.Wait("the confirmation", dialog+`.open`)
	s.Check("it says the restore DELETES the row", `document.getElementById('confirm-title').textContent === 'Delete memories / mem-4 by restoring?'`+
		` && `+confirmText+`.startsWith('Restoring DELETES the row memories / mem-4 on every instance: the overwritten version is the deletion made on laptop.')`+
		` && document.getElementById('confirm-ok').textContent === 'Restore (delete the row)'`)
	s.Do("confirm", chromedp.Click(chromedp.ID("confirm-ok")))
	s.Wait("c4 resolved, the row deleted", uitest.Count(`#conflict-list tbody tr`)+` === 1 && document.querySelector('#detail-meta [data-field="live"]').dataset.side === 'losing'`)
	s.Check("the live row is the tombstone", `document.querySelector('#detail-meta [data-field="live"]').textContent.includes('(a tombstone)') && document.querySelector('#version-current h3 .sub').textContent === '(winning, no longer live)'`)
	s.Check("restore of a delete reported", `document.getElementById('status').textContent.includes('the row is deleted on every instance')`)

	// --- The insert collision: restore is not offered, with the reason.
	s.Do("open c2", centred(`button[data-open="c2"]`)...)
	s.Wait("the detail of c2", `document.getElementById('detail-title').textContent.includes('note-7')`)
	s.Check("restore disabled for an insert collision, with the reason",
		`document.getElementById('restore').disabled && !document.getElementById('restore-note').hidden && document.getElementById('restore-note').textContent.includes('insert collision') && !document.getElementById('keep').disabled`)
	s.Check("both versions of the collision are shown", `document.getElementById('version-current').textContent.includes("home's note") && document.getElementById('version-overwritten').textContent.includes("laptop's note")`)
	if api.called("restore c2") {
		t.Error("the UI asked to restore an insert collision")
	}
	// The server has the last word: a restore that reaches it anyway (a page
	// older than a server rule) shows the server's 409 text.
	s.Do("force a restore of c2", chromedp.Evaluate[chromedp.Void](`(b => { b.disabled = false; b.click(); })(document.getElementById('restore'))`))
	s.Wait("the confirmation", dialog+`.open`)
	s.Do("confirm", chromedp.Click(chromedp.ID("confirm-ok")))
	s.Wait("the 409 of the insert collision", `document.getElementById('status').className === 'error' && document.getElementById('status').textContent.includes('restore refused: notes/note-7 is an insert collision; resolve it by hand')`)
	s.Wait("restore disabled again", `document.getElementById('restore').disabled && !document.getElementById('keep').disabled`)
	if !api.called("restore c2") {
		t.Error("the forced restore of c2 did not reach the fake API")
	}

	// --- Resolve all, confirmed in the dialog.
	s.Do("resolve all", chromedp.Click(chromedp.ID("resolve-all")))
	s.Wait("the confirmation", dialog+`.open`)
	s.Check("it says how many", `document.getElementById('confirm-title').textContent === 'Resolve 1 unresolved conflict?'`+
		` && `+confirmText+`.startsWith('Resolve all: 1 unresolved conflict in all tables (the one listed) will be resolved by keeping its current version.')`+
		` && document.getElementById('confirm-ok').textContent === 'Resolve 1 conflict'`)
	s.Do("confirm", chromedp.Click(chromedp.ID("confirm-ok")))
	s.Wait("an empty unresolved list", uitest.Count(`#conflict-list tbody tr`)+` === 0 && !document.getElementById('conflict-empty').hidden && document.getElementById('conflict-empty').textContent === 'No unresolved conflicts.'`)
	if !api.called("resolve-all ") {
		calls, _ := api.snapshot()
		t.Errorf("the fake API saw no resolve-all of every table; calls: %v", calls)
	}
	if d := s.Dialogs(); len(d) != 0 {
		t.Errorf("window dialogs %q: the page must confirm with its own dialog element", d)
	}
	s.Check("resolve all disabled with nothing to resolve", `document.getElementById('resolve-all').disabled`)
	s.Check("resolve all reported", `document.getElementById('status').textContent === 'Resolved 1 conflict by keeping the current versions.'`)
	s.Check("the open detail is refreshed", `document.querySelector('#detail-meta [data-field="state"]').textContent.startsWith('resolved · kept current')`)

	// --- Filters: all, then one table.
	s.Do("show all", chromedp.Evaluate[chromedp.Void](`(s => { s.value = 'all'; s.dispatchEvent(new Event('change')); })(document.getElementById('filter-resolved'))`))
	s.Wait("all 4 conflicts, resolved", uitest.Count(`#conflict-list tbody tr`)+` === 4 && `+uitest.Count(`#conflict-list .badge.resolved`)+` === 4`)
	s.Do("only notes", chromedp.Evaluate[chromedp.Void](`(s => { s.value = 'notes'; s.dispatchEvent(new Event('change')); })(document.getElementById('filter-table'))`))
	s.Wait("only the notes conflict", uitest.Count(`#conflict-list tbody tr`)+` === 1 && document.querySelector('#conflict-list tbody tr').dataset.id === 'c2'`)
	s.Clean("recovery view")

	// --- Overview: counts from the API (the key is kept for the tab).
	s.Open("/ui/")
	s.Wait("overview counts", `document.getElementById('ov-unread').textContent === '1 unread notification' && document.getElementById('ov-conflicts').textContent === 'No unresolved conflicts' && document.getElementById('ov-instances').textContent === '2 instances, 1 online'`)
	s.Clean("overview")

	// --- Notifications: mark the conflict notification read.
	s.Open("/ui/notifications")
	s.Wait("2 notifications", uitest.Count(`#notification-list li`)+` === 2 && document.getElementById('unread-summary').textContent === '1 unread.'`)
	s.Check("the conflict notification links the recovery view", `document.querySelector('#notification-list li[data-id="n1"] a').getAttribute('href') === '/ui/conflicts'`)
	s.Check("a javascript: link is not made a link", `document.querySelectorAll('#notification-list a').length === 1`)
	s.Check("markup in a notification is text", `document.querySelector('#notification-list li[data-id="n2"]').textContent.includes('<script>alert(2)</script>')`)
	s.Do("mark n1 read", chromedp.Click(chromedp.CSS(`button[data-read="n1"]`)))
	s.Wait("n1 read", `document.querySelector('#notification-list li[data-id="n1"]').classList.contains('read') && document.getElementById('unread-summary').textContent === '0 unread.' && !document.querySelector('button[data-read]')`)
	if !api.called("read n1") {
		t.Error("the fake API saw no read of n1")
	}
	s.Clean("notifications")

	// --- Instances: registry and replication status.
	s.Open("/ui/instances")
	s.Wait("2 instances", uitest.Count(`#instance-list tbody tr`)+` === 2`)
	s.Check("the offline satellite: never seen, not connected, lag 7",
		`(t => t.includes('laptop') && t.includes('offline') && t.includes('never') && t.includes('not connected, lag 7'))(document.querySelector('#instance-list tr[data-id="inst-laptop"]').textContent)`)
	s.Check("self is marked", `document.querySelector('#instance-list tr[data-id="inst-home"]').textContent.includes('(this instance)')`)
	s.Check("peer lag", `document.querySelector('#peer-list tr[data-id="inst-laptop"] [data-field="lag"]').textContent === '7'`)
	s.Check("feeds", uitest.Count(`#feed-list tbody tr`)+` === 2 && document.getElementById('sync-summary').textContent.startsWith('Replication is running.')`)
	s.Clean("instances")

	// --- Forget the key: the form comes back and the API is not called.
	_, before := api.snapshot()
	s.Do("forget the key", chromedp.Click(chromedp.ID("forget-key")))
	s.Wait("the key form again", `!document.getElementById('login').hidden && sessionStorage.getItem('crow-api-key') === null`)
	if _, after := api.snapshot(); after != before {
		t.Errorf("the UI called the API without a key")
	}

	t.Logf("browser test took %s", time.Since(began).Round(time.Millisecond))
}

// setValue sets the value of the input with this id.
func setValue(id, value string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](`document.getElementById(` + uitest.JS(id) + `).value = ` + uitest.JS(value))
}

// noCredentials checks that every public verify call since the first from
// carried no credential, and that there were some.
func noCredentials(t *testing.T, where string, auth []string, from int) {
	t.Helper()
	if len(auth) <= from {
		t.Errorf("%s: no GET /v1/verify/{name} reached the fake API", where)
	}
	for i, a := range auth[min(from, len(auth)):] {
		if a != "" {
			t.Errorf("%s: verify call %d sent credentials %q", where, from+i+1, a)
		}
	}
}

func TestBrowserProjectsAndVerify(t *testing.T) {
	began := time.Now()
	api := newFakeAPI()
	srv := httptest.NewServer(api.handler())
	t.Cleanup(srv.Close)
	s := startBrowser(t, srv.URL)

	verdict := `document.getElementById('verify-verdict')`
	noKeyForm := `!document.getElementById('login') && document.getElementById('forget-key').hidden && !document.getElementById('content').hidden`

	// --- The public verify page in a tab that never had a key.
	s.Open("/ui/verify?project=alpha")
	s.Wait("the verdict on alpha", `!`+verdict+`.hidden`)
	s.Check("no key form, no forget-key", noKeyForm)
	s.Check("the name is pre-filled", `document.getElementById('verify-name').value === 'alpha'`)
	s.Check("the verdict: not verified because of version 2",
		`(v => v.className === 'verdict error' && v.dataset.verified === 'false' && v.textContent.startsWith('NOT verified') && v.textContent.includes('version 2 (mismatch)'))(`+verdict+`)`)
	s.Check("project id, chain and contract",
		`document.querySelector('#verify-meta [data-field="project_id"]').textContent === `+uitest.JS(projectID)+
			` && document.querySelector('#verify-meta [data-field="chain"]').textContent === 'embedded (chain id 1337)'`+
			` && document.querySelector('#verify-meta [data-field="contract"]').textContent === `+uitest.JS(contract))
	s.Check("two versions", uitest.Count(`#verify-list tbody tr`)+` === 2 && document.getElementById('verify-empty').hidden`)
	row := func(v int) string {
		return fmt.Sprintf(`document.querySelector('#verify-list tr[data-version="%d"]')`, v)
	}
	s.Check("the columns", `[...document.querySelectorAll('#verify-list th')].map(th => th.textContent).join() === 'Version,Status,State hash,Root,Anchored,Transaction,Packet'`)
	s.Check("version 1 final: its hash, root #1, anchoring, transaction",
		`(r => r.dataset.status === 'final' && !r.classList.contains('anchor-error')`+
			` && (b => b.textContent === 'final' && b.classList.contains('ok'))(r.querySelector('[data-field="status"] .badge'))`+
			` && r.querySelector('[data-field="status"]').textContent.includes('enough confirmations')`+
			` && r.querySelector('[data-field="local_state_hash"]').textContent === `+uitest.JS(hashV1)+` && !r.querySelector('[data-field="record_state_hash"]')`+
			` && r.querySelector('[data-field="root_hash"]').textContent === `+uitest.JS(rootOf(1))+` && r.querySelector('[data-field="root_id"]').textContent === '#1'`+
			` && r.querySelector('[data-field="anchored_by"]').textContent === `+uitest.JS(owner)+` && r.querySelector('[data-field="anchored"]').textContent.includes('ago')`+
			` && r.querySelector('[data-field="tx_hash"]').textContent === `+uitest.JS("0x"+strings.Repeat("07", 32))+` && r.querySelector('[data-field="block_number"]').textContent === 'block 7'`+
			`)(`+row(1)+`)`)
	s.Check("version 1's packet: folded, its JSON and a download",
		`(c => (d => d && !d.open && d.querySelector('summary').textContent === 'packet')(c.querySelector('details'))`+
			` && (p => p.version === 1 && p.state_hash === `+uitest.JS(hashV1)+` && p.root === `+uitest.JS(rootOf(1))+` && p.project_id === `+uitest.JS(projectID)+
			` && p.proof.length === 1 && p.anchoring_address === `+uitest.JS(owner)+`)(JSON.parse(c.querySelector('[data-field="packet_json"]').textContent))`+
			` && (a => a.getAttribute('download') === 'crow-alpha-v1-packet.json' && a.href.startsWith('blob:'))(c.querySelector('[data-field="packet_download"]'))`+
			`)(`+row(1)+`.querySelector('[data-field="packet"]'))`)
	s.Check("version 2 mismatch, highlighted, both hashes shown",
		`(r => r.dataset.status === 'mismatch' && r.classList.contains('anchor-error')`+
			` && (b => b.textContent === 'mismatch' && b.classList.contains('error'))(r.querySelector('.badge'))`+
			` && r.querySelector('[data-field="local_state_hash"]').textContent === `+uitest.JS(hashV2)+` && r.querySelector('[data-field="record_state_hash"]').textContent === `+uitest.JS(hashForged)+
			` && r.querySelector('[data-field="root_id"]').textContent === '#2'`+
			` && JSON.parse(r.querySelector('[data-field="packet_json"]').textContent).state_hash === `+uitest.JS(hashForged)+
			` && getComputedStyle(r.querySelector('td')).backgroundColor !== getComputedStyle(`+row(1)+`.querySelector('td')).backgroundColor`+
			`)(`+row(2)+`)`)
	s.Check("how to verify, and what to do with a packet",
		`(h => !h.hidden && h.textContent.includes(`+uitest.JS(howTo)+`) && h.querySelector('[data-field="packet_howto"]').textContent.includes('crow verify --packet FILE')`+
			` && h.textContent.includes('docs/VERIFY.md'))(document.getElementById('verify-howto'))`)
	// Opening the packet shows its JSON; the link downloads exactly that.
	s.Do("open version 1's packet", chromedp.Click(chromedp.CSS(`#verify-list tr[data-version="1"] details summary`)))
	s.Check("the packet is open", row(1)+`.querySelector('details').open && `+row(1)+`.querySelector('[data-field="packet_json"]').offsetHeight > 0`)
	downloads := t.TempDir()
	s.Do("download version 1's packet",
		chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.CallBrowser(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
				Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: downloads})
			return err
		}),
		chromedp.Click(chromedp.CSS(`#verify-list tr[data-version="1"] [data-field="packet_download"]`)))
	file := filepath.Join(downloads, "crow-alpha-v1-packet.json")
	var got []byte
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if b, err := os.ReadFile(file); err == nil && len(b) > 0 && json.Valid(b) {
			got = b
			break
		}
		if time.Now().After(deadline) {
			entries, _ := os.ReadDir(downloads)
			t.Fatalf("the packet was not downloaded to %s within 10s (the directory holds %v)", file, entries)
		}
	}
	want, _ := json.Marshal(api.verifies["alpha"].(map[string]any)["versions"].([]map[string]any)[0]["packet"])
	var gotV, wantV any
	json.Unmarshal(got, &gotV)
	json.Unmarshal(want, &wantV)
	if !reflect.DeepEqual(gotV, wantV) {
		t.Errorf("the downloaded packet:\n%s\nwant the API's:\n%s", got, want)
	}
	s.Clean("verify alpha")

	// The form: another project, anchored, its version 2 not final yet.
	s.Do("verify gamma", setValue("verify-name", ""), chromedp.SendKeys(chromedp.ID("verify-name"), "gamma"), chromedp.Click(chromedp.ID("verify-submit")))
	s.Wait("the verdict on gamma", verdict+`.className === 'verdict ok' && `+verdict+`.textContent.startsWith('Verified: all 2 versions of gamma')`)
	s.Check("the verdict counts the version waiting for confirmations", verdict+`.textContent.endsWith('1 in a block, waiting for confirmations.')`)
	s.Check("the address names the project", `location.search === '?project=gamma' && document.getElementById('verify-title').textContent === 'Project gamma'`)
	s.Check("version 2 included: ok, not final yet",
		`(r => r.dataset.status === 'included' && !r.classList.contains('anchor-error')`+
			` && (b => b.textContent === 'included' && b.classList.contains('included') && !b.classList.contains('ok'))(r.querySelector('.badge'))`+
			` && r.querySelector('[data-field="status"]').textContent === 'included in a block, waiting for confirmations'`+
			` && r.querySelector('[data-field="packet_download"]').getAttribute('download') === 'crow-gamma-v2-packet.json')(`+row(2)+`)`)
	s.Check("version 1 final", `(b => b.textContent === 'final' && b.classList.contains('ok'))(`+row(1)+`.querySelector('.badge'))`)

	// One version: "the only version", not "all 1 version".
	s.Do("verify zeta", setValue("verify-name", "zeta"), chromedp.Click(chromedp.ID("verify-submit")))
	s.Wait("the verdict on zeta", verdict+`.className === 'verdict ok' && `+verdict+`.textContent === 'Verified: the only version of zeta is in a root anchored on chain, with a matching hash and proof.'`)

	// A root the chain does not have, and a version not anchored yet.
	s.Do("verify delta", setValue("verify-name", "delta"), chromedp.Click(chromedp.ID("verify-submit")))
	s.Wait("the verdict on delta", verdict+`.className === 'verdict error' && `+verdict+`.textContent.includes('version 1 (missing)')`)
	s.Check("the verdict names only version 1", `!`+verdict+`.textContent.includes('version 2') && `+verdict+`.textContent.includes('1 missing, 1 pending')`)
	s.Check("version 1 missing: an error, with its root and packet",
		`(r => r.dataset.status === 'missing' && r.classList.contains('anchor-error') && r.querySelector('.badge').classList.contains('error')`+
			` && r.querySelector('[data-field="status"]').textContent.includes('the chain has no such root')`+
			` && r.querySelector('[data-field="root_hash"]').textContent === `+uitest.JS(rootOf(4))+` && r.querySelector('[data-field="packet_json"]') !== null`+
			` && r.querySelector('[data-field="anchored"]').textContent.startsWith('—'))(`+row(1)+`)`)
	s.Check("version 2 pending: waiting, no root, no packet",
		`(r => r.dataset.status === 'pending' && !r.classList.contains('anchor-error') && r.querySelector('.badge').classList.contains('waiting')`+
			` && r.querySelector('[data-field="root"]').textContent === '—' && r.querySelector('[data-field="tx"]').textContent === '—'`+
			` && r.querySelector('[data-field="packet"]').textContent === '—' && !r.querySelector('[data-field="packet"] a'))(`+row(2)+`)`)

	// An instance that reads no chain: home's records, unverified.
	s.Do("verify epsilon", setValue("verify-name", "epsilon"), chromedp.Click(chromedp.ID("verify-submit")))
	s.Wait("the verdict on epsilon", verdict+`.className === 'verdict info' && `+verdict+`.textContent.startsWith('Not verified here')`)
	s.Check("version 1 unverified: neutral, with its packet to check elsewhere",
		`(r => r.dataset.status === 'unverified' && !r.classList.contains('anchor-error')`+
			` && (b => b.classList.contains('neutral') && !b.classList.contains('ok') && !b.classList.contains('error'))(r.querySelector('.badge'))`+
			` && r.querySelector('[data-field="packet_download"]') !== null)(`+row(1)+`)`+
			` && document.querySelector('#verify-meta [data-field="chain"]').textContent.startsWith('none:')`)
	// A project without a state: the server's message, still no key form.
	s.Do("verify beta notes", setValue("verify-name", "beta notes"), chromedp.Click(chromedp.ID("verify-submit")))
	s.Wait("the 404 message", `document.getElementById('status').className === 'error' && document.getElementById('status').textContent.includes(`+uitest.JS(noStateMsg)+`)`)
	s.Check("no result, no key form", `document.getElementById('verify-result').hidden && `+noKeyForm)
	keyed, unauthorized, auth := api.requests()
	if keyed != 0 || unauthorized != 0 {
		t.Errorf("the verify page made other API calls: %d with a key, %d refused", keyed, unauthorized)
	}
	noCredentials(t, "verify page without a key", auth, 0)
	s.Clean("verify form")

	// --- Projects: the key form first, then the list.
	s.Do("open /ui/projects", chromedp.Navigate(s.Base+"/ui/projects"))
	s.Wait("the key form", `document.getElementById('login') && !document.getElementById('login').hidden`)
	s.Do("enter the key", chromedp.SendKeys(chromedp.ID("login-key"), testKey), chromedp.Click(chromedp.ID("login-submit")))
	s.Wait("2 projects", uitest.Count(`#project-list tbody tr`)+` === 2`)
	s.Check("alpha has state version 2, beta none", `document.querySelector('#project-list tr[data-name="alpha"] [data-field="state_version"]').textContent === '2'`+
		` && document.querySelector('#project-list tr[data-name="beta notes"] [data-field="state_version"]').textContent === 'none yet'`)

	s.Do("open alpha", chromedp.Click(chromedp.CSS(`button[data-open="alpha"]`)))
	s.Wait("alpha's decisions", uitest.Count(`#state-decisions tbody tr`)+` === 2`)
	s.Check("the address names the project", `location.search === '?name=alpha' && document.getElementById('project-title').textContent === 'Project alpha'`)
	s.Check("phase, focus and version", `document.querySelector('#state-meta [data-field="phase"]').textContent === 'build'`+
		` && document.querySelector('#state-meta [data-field="current_focus"]').textContent === 'ship the verify page'`+
		` && document.querySelector('#state-meta [data-field="version"]').textContent === '2'`)
	s.Check("a decision's fields", `(r => r.querySelector('[data-field="status"]').textContent === 'superseded' && r.querySelector('[data-field="superseded_by"]').textContent === 'dec_0002'`+
		` && r.querySelector('[data-field="evidence_memory_ids"]').textContent === '#1, #2' && r.querySelector('[data-field="title"]').textContent === 'Store in SQLite')(document.querySelector('#state-decisions tr[data-id="dec_0001"]'))`)
	s.Check("the item fields first, the provenance last",
		`[...document.querySelectorAll('#state-decisions th')].map(th => th.textContent).join() === 'Id,Title,Statement,Status,Superseded by,Evidence memory ids,Evidence root,Created version,Updated version'`)
	s.Check("markup in a decision and a risk is text",
		`document.querySelector('#state-decisions tr[data-id="dec_0002"] [data-field="statement"]').textContent === `+uitest.JS(xss)+
			` && document.querySelector('#state-risks tr[data-id="risk_0001"] [data-field="title"]').textContent === `+uitest.JS("Chain outage "+xss))
	s.Check("the milestone's superseded evidence is flagged, no other item's",
		`(r => r.dataset.stale === 'true' && r.querySelector('[data-field="evidence_memory_ids"] [data-field="stale_evidence"]').textContent === 'stale evidence: #3 \u2192 #9')(document.querySelector('#state-milestones tr[data-id="mil_0001"]'))`+
			` && document.querySelectorAll('#state-lists [data-field="stale_evidence"]').length === 1 && document.querySelectorAll('#state-lists tr[data-stale]').length === 1`)
	s.Check("the risk's severity", `document.querySelector('#state-risks tr[data-id="risk_0001"] [data-field="severity"] .badge').textContent === 'high'`)
	s.Check("every non-empty list is a table, empty ones are not shown",
		`[...document.querySelectorAll('#state-lists table')].map(t => t.id).join() === 'state-decisions,state-milestones,state-risks,state-vocabulary'`+
			` && document.querySelector('#state-vocabulary [data-field="definition"]').textContent === 'a state hash written on chain'`)
	s.Wait("alpha's anchors", uitest.Count(`#verify-list tbody tr`)+` === 2`)
	s.Check("version 1 final, with its packet", `document.querySelector('#verify-list tr[data-version="1"] [data-field="status"] .badge').textContent === 'final'`+
		` && document.querySelector('#verify-list tr[data-version="1"] [data-field="packet_download"]').getAttribute('download') === 'crow-alpha-v1-packet.json'`)
	s.Check("version 2 mismatch, highlighted as an error",
		`(r => r.classList.contains('anchor-error') && r.querySelector('.badge').textContent === 'mismatch' && getComputedStyle(r.querySelector('td')).color !== getComputedStyle(document.querySelector('#verify-list tr[data-version="1"] td')).color)(document.querySelector('#verify-list tr[data-version="2"]'))`)
	s.Check("the verdict", verdict+`.className === 'verdict error'`)
	s.Check("the public verify link", `document.getElementById('project-verify-link').getAttribute('href') === '/ui/verify?project=alpha'`)
	s.Clean("project alpha")

	s.Do("open beta notes", chromedp.Click(chromedp.CSS(`button[data-open="beta notes"]`)))
	s.Wait("beta's missing state", `!document.getElementById('state-missing').hidden && document.getElementById('state-missing').textContent === `+uitest.JS(noStateMsg))
	s.Wait("no anchors for beta", `!document.getElementById('verify-empty').hidden && document.getElementById('verify-empty').textContent === `+uitest.JS(noStateMsg))
	s.Check("no state, no anchors table", `document.getElementById('state-view').hidden && document.getElementById('verify-list').hidden && `+verdict+`.hidden`)
	s.Check("the address", `location.search === '?name=beta%20notes'`)
	s.Clean("project beta")

	s.Open("/ui/projects?name=alpha")
	s.Wait("alpha opened from the address", uitest.Count(`#state-decisions tbody tr`)+` === 2 && `+uitest.Count(`#verify-list tbody tr`)+` === 2`)
	s.Check("alpha selected", `document.querySelector('#project-list tr.selected').dataset.name === 'alpha'`)
	s.Clean("projects?name=alpha")

	// --- The verify page again, now that the tab holds the key: still not sent.
	keyed, _, auth = api.requests()
	s.Open("/ui/verify?project=alpha")
	s.Wait("the verdict on alpha", `!`+verdict+`.hidden && `+uitest.Count(`#verify-list tbody tr`)+` === 2`)
	s.Check("no key form, the key kept for the other pages", noKeyForm+` && sessionStorage.getItem('crow-api-key') === 'testkey'`)
	keyedAfter, _, authAfter := api.requests()
	if keyedAfter != keyed {
		t.Errorf("the verify page made %d calls with the key", keyedAfter-keyed)
	}
	noCredentials(t, "verify page with the key in the tab", authAfter, len(auth))
	s.Clean("verify with a key in the tab")

	t.Logf("browser test took %s", time.Since(began).Round(time.Millisecond))
}
