package app

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

// TestEncodeRESTBindRESTRoundTrip checks the typed client's encoding against
// the gateway's binding for sample inputs: what the client sends is what
// the operation receives.
func TestEncodeRESTBindRESTRoundTrip(t *testing.T) {
	imp, five := 7, 5
	content := "new text"
	tags := []string{"x", "y"}
	yes := true
	cases := []struct {
		op Op
		in any
	}{
		{MemoryCreate, &MemoryCreateIn{Content: "hello", Project: "p", Importance: &imp, Tags: []string{"a", "b"}, Source: "cli"}},
		{MemoryGet, &MemoryID{ID: "01H/odd id"}},
		{MemoryProof, &MemoryNumber{Number: 12}},
		{MemoryUpdate, &MemoryUpdateIn{ID: "m1", Content: &content, Tags: &tags}},
		{MemoryList, &MemoryListIn{MemoryFilter: MemoryFilter{Project: "p", MinImportance: &five, Tags: []string{"a", "b"}}, Limit: 10, Cursor: "c", Order: "oldest"}},
		{ConflictsList, &ConflictListIn{Unresolved: &yes, Table: "memories", Limit: 3}},
		{ConflictsResolveAll, &ResolveAllIn{Table: "notes"}},
		{TablesPut, &RowPutIn{Table: "notes", RowID: "n1", Data: map[string]json.RawMessage{"text": json.RawMessage(`"hi"`)}}},
		{TablesRows, &RowsIn{Table: "notes", Limit: 2, Deleted: true, Order: "desc"}},
		{InstanceHealth, &HealthIn{Challenge: "00112233445566778899aabbccddeeff"}},
	}
	for _, c := range cases {
		sp := c.op.Info()
		path, q, body, err := c.op.Input().EncodeREST(sp.Path, c.in)
		if err != nil {
			t.Fatalf("%s: encode: %v", sp.Name, err)
		}
		values := pathValues(t, sp.Path, path)
		got, err := c.op.Input().BindREST(REST{Method: sp.Method, Path: path, Value: func(n string) string { return values[n] }, Query: q, Body: body})
		if err != nil {
			t.Fatalf("%s: bind %s ?%s %s: %v", sp.Name, path, q.Encode(), body, err)
		}
		if !reflect.DeepEqual(got.Interface(), c.in) {
			t.Errorf("%s: round trip\n got %+v\nwant %+v", sp.Name, got.Elem().Interface(), reflect.ValueOf(c.in).Elem().Interface())
		}
	}
}

// pathValues matches a concrete path against a pattern's {wildcards}.
func pathValues(t *testing.T, pattern, path string) map[string]string {
	t.Helper()
	ps, cs := strings.Split(pattern, "/"), strings.Split(path, "/")
	if len(ps) != len(cs) {
		t.Fatalf("path %q does not match %q", path, pattern)
	}
	out := map[string]string{}
	for i, p := range ps {
		if strings.HasPrefix(p, "{") {
			v, err := url.PathUnescape(cs[i])
			if err != nil {
				t.Fatal(err)
			}
			out[strings.Trim(p, "{}")] = v
		}
	}
	return out
}

// TestKindStatusRoundTrip: every kind has its own status, and the typed
// client reads the kind back from it.
func TestKindStatusRoundTrip(t *testing.T) {
	seen := map[int]Kind{}
	for k := KindInternal; k <= KindInsufficientStorage; k++ {
		st := k.HTTPStatus()
		if prev, dup := seen[st]; dup {
			t.Errorf("%v and %v share status %d", prev, k, st)
		}
		seen[st] = k
		if got := KindOfStatus(st); got != k {
			t.Errorf("KindOfStatus(%d) = %v, want %v", st, got, k)
		}
		if ParseKind(k.String()) != k {
			t.Errorf("ParseKind(%q) != %v", k.String(), k)
		}
	}
}

// TestPeerAccessEnforcedInApp: a federated call reaches only the operations
// the table opens to peers, whatever surface carried it.
func TestPeerAccessEnforcedInApp(t *testing.T) {
	a := New(Deps{Self: Self{InstanceID: "home-1", Role: "satellite"}})
	peer := WithCaller(context.Background(), Caller{Surface: SurfaceGo, Peer: "sat-1"})
	if _, err := Call(peer, a, MemoryDelete, MemoryID{ID: "m1"}); !errors.Is(err, ErrPeerDenied) || KindOf(peer, err) != KindForbidden {
		t.Errorf("a peer deleting a memory: %v, want ErrPeerDenied (forbidden)", err)
	}
	if _, err := Call(peer, a, ProjectConsolidate, ConsolidateIn{Project: "p", Ops: []json.RawMessage{json.RawMessage(`{}`)}}); !errors.Is(err, ErrPeerDenied) {
		t.Errorf("a peer consolidating on a satellite: %v, want ErrPeerDenied", err)
	}
	// A read is open to peers: it gets past the check (and fails on the
	// missing memory service, not on access).
	if _, err := Call(peer, a, MemoryGet, MemoryID{ID: "m1"}); errors.Is(err, ErrPeerDenied) || KindOf(peer, err) != KindUnavailable {
		t.Errorf("a peer reading a memory: %v, want past the allow-list", err)
	}
	home := New(Deps{Self: Self{InstanceID: "home-1", Role: "home"}})
	if _, err := Call(peer, home, ProjectConsolidate, ConsolidateIn{Project: "p", Ops: []json.RawMessage{json.RawMessage(`{}`)}}); errors.Is(err, ErrPeerDenied) {
		t.Errorf("a satellite forwarding a consolidation to home was refused: %v", err)
	}
}
