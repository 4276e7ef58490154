package federation_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/crow-sync/crow/federation"
	"github.com/crow-sync/crow/memory"
)

// fanout is a federation.Fanout that records its calls and answers with
// the local part's results plus a canned peer hit.
type fanout struct {
	calls    int
	targets  []string
	args     map[string]any
	deadline time.Duration
	partial  bool
}

func (f *fanout) Search(ctx context.Context, targets []string, args json.RawMessage, deadline time.Duration,
	local func(ctx context.Context) ([]json.RawMessage, error)) federation.SearchResult {
	f.calls++
	f.targets, f.deadline = targets, deadline
	f.args = nil
	_ = json.Unmarshal(args, &f.args)
	res := federation.SearchResult{Instances: []federation.InstanceStatus{{ID: "b", Name: "laptop", Status: federation.StatusOK}},
		Partial: f.partial}
	if local != nil {
		raws, _ := local(ctx)
		for _, r := range raws {
			var m struct{ ID string }
			_ = json.Unmarshal(r, &m)
			res.Results = append(res.Results, federation.Hit{Instance: "self", ID: m.ID, Score: 2, Memory: r, FoundOn: []string{"self", "b"}})
		}
	}
	res.Results = append(res.Results,
		federation.Hit{Instance: "b", ID: "m-b", Score: 1, Memory: json.RawMessage(`{"id":"m-b","content":"from b","score":9}`), FoundOn: []string{"b"}},
		federation.Hit{Instance: "b", ID: "bad", Score: 0.5, Memory: json.RawMessage(`"not an object"`), FoundOn: []string{"b"}})
	return res
}

func localSearch(calls *int) federation.LocalSearch {
	return func(_ context.Context, o memory.SearchOptions) ([]memory.Result, error) {
		*calls++
		if o.Query == "fail" {
			return nil, errors.New("index closed")
		}
		return []memory.Result{{Memory: memory.Memory{ID: "m-self", Content: "here " + o.Query}, Score: 3}}, nil
	}
}

func TestSearcherScopes(t *testing.T) {
	ctx := context.Background()
	var localCalls int
	fo := &fanout{}
	s := federation.Searcher{SelfID: "self", Local: localSearch(&localCalls), Fanout: fo}

	// This instance only: no fan-out; partial present and false.
	res, err := s.Search(ctx, federation.SearchRequest{Query: "x"})
	if err != nil || fo.calls != 0 || len(res.Results) != 1 || res.Results[0].ID != "m-self" || res.Instances != nil {
		t.Fatalf("local: %+v %v (fan-outs %d)", res, err, fo.calls)
	}
	raw, _ := json.Marshal(res)
	if !strings.Contains(string(raw), `"partial":false`) || strings.Contains(string(raw), `"instances"`) {
		t.Fatalf("local answer JSON: %s", raw)
	}
	if _, err := s.Search(ctx, federation.SearchRequest{Query: "fail"}); err == nil {
		t.Fatal("a failing local search was not an error")
	}

	// A peer's call never fans out, whatever it asks for.
	if res, err := s.Search(ctx, federation.SearchRequest{Instances: "all", Query: "x", FromPeer: true}); err != nil || fo.calls != 0 ||
		len(res.Results) != 1 {
		t.Fatalf("peer call: %+v %v (fan-outs %d)", res, err, fo.calls)
	}

	// All: the peers get the query, the filter and the limit, never the
	// scope; the default deadline; merged with scores and found_on.
	res, err = s.Search(ctx, federation.SearchRequest{Instances: "all", Query: "x", Limit: 5,
		Filter: memory.Filter{Project: "crow", MinImportance: 3, Tags: []string{"t"}}})
	if err != nil || fo.calls != 1 || fo.targets != nil || fo.deadline != federation.DefaultSearchDeadline {
		t.Fatalf("all: %v calls=%d targets=%v deadline=%v", err, fo.calls, fo.targets, fo.deadline)
	}
	wantArgs := `{"limit":5,"min_importance":3,"project":"crow","query":"x","tags":["t"]}`
	if got, _ := json.Marshal(fo.args); string(got) != wantArgs {
		t.Fatalf("peer args %s, want %s", got, wantArgs)
	}
	if len(res.Results) != 2 || res.Results[0].ID != "m-self" || res.Results[0].Score != 2 ||
		strings.Join(res.Results[0].FoundOn, ",") != "self,b" || res.Results[1].ID != "m-b" || res.Results[1].Score != 1 ||
		res.Results[1].Content != "from b" || len(res.Instances) != 1 || res.Partial {
		t.Fatalf("merged: %+v", res)
	}
	raw, _ = json.Marshal(res)
	if !strings.Contains(string(raw), `"partial":false`) || !strings.Contains(string(raw), `"instances":[`) {
		t.Fatalf("federated answer JSON: %s", raw)
	}

	// A list of ids: only those peers, and this instance only if named.
	fo.partial = true
	s.Deadline = time.Second
	res, err = s.Search(ctx, federation.SearchRequest{Instances: "b", Query: "x"})
	if err != nil || strings.Join(fo.targets, ",") != "b" || fo.deadline != time.Second || !res.Partial ||
		len(res.Results) != 1 || res.Results[0].ID != "m-b" {
		t.Fatalf("ids: %+v %v targets=%v", res, err, fo.targets)
	}

	// Errors: a bad scope; other instances without federation.
	if _, err := s.Search(ctx, federation.SearchRequest{Instances: ",", Query: "x"}); !errors.Is(err, federation.ErrBadScope) {
		t.Fatalf("bad scope: %v", err)
	}
	s.Fanout = nil
	if _, err := s.Search(ctx, federation.SearchRequest{Instances: "all", Query: "x"}); !errors.Is(err, federation.ErrNoFederation) {
		t.Fatalf("no federation: %v", err)
	}
	if _, err := s.Search(ctx, federation.SearchRequest{Instances: "local", Query: "x"}); err != nil {
		t.Fatalf("local without federation: %v", err)
	}
}
