package federation

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/crow-sync/crow/clock"
	"github.com/crow-sync/crow/projects"
)

// consolidatingHome is a peer whose ConsolidateTool answers as home's does:
// a version for a good request, a tool error for ops "bad", and a
// non-structured answer for project "garbled".
func consolidatingHome(t *testing.T, f *federation, id string) *testPeer {
	tool := mcp.NewTool(ConsolidateTool, mcp.WithString("project", mcp.Required()), mcp.WithArray("ops"),
		mcp.WithNumber("consolidated_until_event"))
	return newTestPeer(t, id, f.keys, withTool(tool, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a struct {
			Project string            `json:"project"`
			Ops     []json.RawMessage `json:"ops"`
		}
		b, _ := json.Marshal(req.Params.Arguments)
		if err := json.Unmarshal(b, &a); err != nil {
			return mcp.NewToolResultError("bad arguments"), nil
		}
		switch {
		case a.Project == "garbled":
			return mcp.NewToolResultText("not json"), nil
		case len(a.Ops) == 1 && string(a.Ops[0]) == `"bad"`:
			return mcp.NewToolResultError("op 0 is not an object"), nil
		}
		return mcp.NewToolResultStructuredOnly(projects.Response{Project: a.Project, Version: 7, StateHash: "ab", AppliedCount: len(a.Ops)}), nil
	}))
}

// homeClient is a client whose home is the peer home (nil: no home
// registered).
func homeClient(t *testing.T, f *federation, home *testPeer) *Client {
	c := NewClient(ClientConfig{
		Self: "sat", Tokens: NewTokenSource("home", f.homeKey, nil), Peers: f.peers.list,
		Home: func() (Peer, error) {
			if home == nil {
				return Peer{}, errors.New("registry: instance not found")
			}
			return home.peer(), nil
		},
	})
	t.Cleanup(func() { c.Close() })
	return c
}

// The client satisfies the projects.Forwarder shape.
var _ interface {
	Consolidate(ctx context.Context, project string, req projects.Request) (projects.Response, error)
} = (*Client)(nil)

func TestConsolidateForwardsToHome(t *testing.T) {
	f := newFederation()
	home := consolidatingHome(t, f, "h1")
	f.peers.set(home.peer())
	c := homeClient(t, f, home)
	until := uint64(3)
	res, err := c.Consolidate(t.Context(), "crow", projects.Request{Ops: []json.RawMessage{json.RawMessage(`{"op":"x"}`)}, ConsolidatedUntilEvent: &until})
	if err != nil {
		t.Fatal(err)
	}
	if res.Project != "crow" || res.Version != 7 || res.AppliedCount != 1 {
		t.Fatalf("answer %+v", res)
	}
}

func TestConsolidateErrorKinds(t *testing.T) {
	f := newFederation()
	home := consolidatingHome(t, f, "h1")
	f.peers.set(home.peer())
	good := projects.Request{Ops: []json.RawMessage{json.RawMessage(`{}`)}}

	// Home's refusal: invalid request, and the tool error with its message.
	_, err := homeClient(t, f, home).Consolidate(t.Context(), "crow", projects.Request{Ops: []json.RawMessage{json.RawMessage(`"bad"`)}})
	var te *ToolError
	if !errors.Is(err, projects.ErrInvalid) || !errors.As(err, &te) || te.Message != "op 0 is not an object" || te.Tool != ConsolidateTool {
		t.Errorf("refusal: %v, want ErrInvalid and a ToolError", err)
	}
	if errors.Is(err, ErrUnavailable) {
		t.Errorf("refusal counted as unavailable: %v", err)
	}

	// No home registered, a home that is not a current peer, a dead home:
	// unavailable, never ErrInvalid.
	dead := newTestPeer(t, "h2", f.keys)
	dead.srv.Close()
	for name, c := range map[string]*Client{
		"no home":       homeClient(t, f, nil),
		"not a peer":    homeClient(t, f, newTestPeer(t, "h3", f.keys)),
		"unreachable":   func() *Client { f.peers.set(home.peer(), dead.peer()); return homeClient(t, f, dead) }(),
		"no home field": NewClient(ClientConfig{Self: "sat", Peers: f.peers.list}),
	} {
		_, err := c.Consolidate(t.Context(), "crow", good)
		if !errors.Is(err, ErrUnavailable) || errors.Is(err, projects.ErrInvalid) || errors.As(err, &te) {
			t.Errorf("%s: %v, want ErrUnavailable only", name, err)
		}
	}

	// An answer without structure.
	_, err = homeClient(t, f, home).Consolidate(t.Context(), "garbled", good)
	if !errors.Is(err, ErrBadAnswer) || errors.Is(err, projects.ErrInvalid) {
		t.Errorf("garbled answer: %v, want ErrBadAnswer", err)
	}
}

func TestSearchMemoriesErrorKinds(t *testing.T) {
	f := newFederation()
	laptop := newTestPeer(t, "laptop", f.keys, withResults(result("m1", 0.5)))
	f.peers.set(laptop.peer())
	c := f.client(t, nil)
	got, err := c.SearchMemories(t.Context(), "laptop", searchArgsJSON("q"))
	if err != nil || len(got) != 1 {
		t.Fatalf("search: %d results, %v", len(got), err)
	}
	_, err = c.SearchMemories(t.Context(), "laptop", json.RawMessage(`{}`)) // query missing
	var te *ToolError
	if !errors.As(err, &te) || errors.Is(err, ErrUnavailable) {
		t.Errorf("tool error: %v, want a ToolError", err)
	}
	_, err = c.SearchMemories(t.Context(), "nobody", searchArgsJSON("q"))
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, ErrUnknownInstance) {
		t.Errorf("unknown peer: %v, want ErrUnavailable wrapping ErrUnknownInstance", err)
	}
}

// fixedClock is a clock stopped at one instant.
func fixedClock(t time.Time) *clock.Fake { return clock.NewFake(t) }

func TestVerifierUsesTheClock(t *testing.T) {
	f := newFederation()
	issued := time.Unix(1_800_000_000, 0)
	tok, err := NewTokenSource("home", f.homeKey, fixedClock(issued)).Token("laptop")
	if err != nil {
		t.Fatal(err)
	}
	keys := newKeyring(map[string]ed25519.PrivateKey{"home": f.homeKey})
	if iss, err := Verifier("laptop", fixedClock(issued), keys.keyOf)(tok); err != nil || iss != "home" {
		t.Fatalf("fresh token: %q, %v", iss, err)
	}
	if _, err := Verifier("laptop", fixedClock(issued.Add(time.Hour)), keys.keyOf)(tok); !errors.Is(err, ErrExpired) {
		t.Errorf("an hour later: %v, want ErrExpired", err)
	}
	keys.revoke("home")
	if _, err := Verifier("laptop", fixedClock(issued), keys.keyOf)(tok); !errors.Is(err, ErrUnknownIssuer) {
		t.Errorf("revoked issuer: %v, want ErrUnknownIssuer", err)
	}
}
