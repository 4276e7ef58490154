package gateway

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/crow-sync/crow/app"
)

// fakeRemote records the calls the router hands to federation.
type fakeRemote struct {
	instance, tool string
	args           map[string]any
}

func (f *fakeRemote) CallTool(_ context.Context, instanceID, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	f.instance, f.tool = instanceID, tool
	if err := json.Unmarshal(args, &f.args); err != nil {
		return nil, err
	}
	return mcp.NewToolResultStructuredOnly(map[string]any{"from": instanceID}), nil
}

// TestRouterRemoteSeam checks that a RemoteCaller plugged into the router gets
// every call for another instance, without instance_id, and that its answer is
// passed through unchanged.
func TestRouterRemoteSeam(t *testing.T) {
	s := New(Config{App: app.New(app.Deps{Self: Self{InstanceID: "home-1"}}), Keys: NewKeyChecker([32]byte{})})
	remote := &fakeRemote{}
	var search mcpTool
	for _, rt := range s.routedTools(s.opTools(), remote) {
		if rt.tool.Name == app.MemorySearch.Tool {
			search = rt
		}
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = app.MemorySearch.Tool
	req.Params.RawArguments = json.RawMessage(`{"instance_id":"sat-1","query":"frankfurt","limit":3}`)
	res, err := s.mcpHandler(search)(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || res.StructuredContent.(map[string]any)["from"] != "sat-1" {
		t.Fatalf("result = %+v", res)
	}
	if remote.instance != "sat-1" || remote.tool != app.MemorySearch.Tool || len(remote.args) != 2 ||
		remote.args["query"] != "frankfurt" || remote.args["limit"] != 3.0 {
		t.Errorf("remote got %q %q %v", remote.instance, remote.tool, remote.args)
	}
}
