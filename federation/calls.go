package federation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/crow-sync/crow/projects"
)

// The typed calls: each peer tool crow calls has one method here that owns
// its tool name, the encoding of its arguments, the decoding of its answer
// and the kind of its errors. Callers never see mcp-go results.

// ConsolidateTool is home's consolidation tool, which satellites call to
// forward a consolidation (SPEC §10).
const ConsolidateTool = "update_project_state"

// ConsolidateTimeout bounds one forwarded consolidation.
const ConsolidateTimeout = 30 * time.Second

var (
	// ErrUnavailable is wrapped by the typed calls (Consolidate,
	// SearchMemories) when the peer could not be asked: it is not a current
	// peer (ErrUnknownInstance), refused this instance's token
	// (ErrUnauthorized), could not be reached, failed at the protocol level,
	// or did not answer in time. Nothing says the tool ran; trying again later
	// may work.
	ErrUnavailable = errors.New("federation: instance unavailable")
	// ErrBadAnswer is wrapped by the typed calls when the peer answered
	// something that is not the tool's answer shape.
	ErrBadAnswer = errors.New("federation: malformed answer")
)

// ToolError is returned (wrapped) by the typed calls when the peer ran the
// tool and answered with a tool error: its verdict on the request, not a
// failure to reach it. Its Error is the peer's message; callers add context.
type ToolError struct {
	Instance string // the peer's id
	Tool     string
	Message  string // the text the peer answered
}

func (e *ToolError) Error() string { return e.Message }

// call runs tool on instanceID with args (encoded as a JSON object; nil
// sends none) and returns the answer's structured content. Every typed call
// goes through it, so the error kinds are decided here only.
func (c *Client) call(ctx context.Context, instanceID, tool string, args any) (json.RawMessage, error) {
	var raw json.RawMessage
	switch a := args.(type) {
	case nil:
	case json.RawMessage:
		raw = a
	default:
		b, err := json.Marshal(a)
		if err != nil {
			return nil, fmt.Errorf("encoding %s arguments: %w", tool, err)
		}
		raw = b
	}
	res, err := c.CallTool(ctx, instanceID, tool, raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return answer(instanceID, tool, res)
}

// answer is the structured content of a tool result, or its *ToolError.
func answer(instanceID, tool string, res *mcp.CallToolResult) (json.RawMessage, error) {
	if res.IsError {
		return nil, &ToolError{Instance: instanceID, Tool: tool, Message: toolText(res)}
	}
	out, err := structured(res)
	if err != nil {
		return nil, fmt.Errorf("%w: %s on %s: %w", ErrBadAnswer, tool, instanceID, err)
	}
	return out, nil
}

// Consolidate forwards a consolidation of project to the home instance
// (ClientConfig.Home) and returns home's answer; it is the
// projects.Forwarder of a satellite. Home's refusal of the request (a tool
// error) wraps both projects.ErrInvalid and a *ToolError; a home that cannot
// be asked (none registered, unreachable, refusing) wraps ErrUnavailable; an
// answer that does not decode wraps ErrBadAnswer. The call is bounded by
// ConsolidateTimeout.
func (c *Client) Consolidate(ctx context.Context, project string, req projects.Request) (projects.Response, error) {
	if c.cfg.Home == nil {
		return projects.Response{}, fmt.Errorf("%w: this instance knows no home instance", ErrUnavailable)
	}
	home, err := c.cfg.Home()
	if err != nil {
		return projects.Response{}, fmt.Errorf("%w: no home instance is registered here: %w", ErrUnavailable, err)
	}
	ctx, cancel := context.WithTimeout(ctx, ConsolidateTimeout)
	defer cancel()
	raw, err := c.call(ctx, home.ID, ConsolidateTool, struct {
		Project string `json:"project"`
		projects.Request
	}{project, req})
	var te *ToolError
	switch {
	case errors.As(err, &te):
		return projects.Response{}, fmt.Errorf("%w: home answered: %w", projects.ErrInvalid, te)
	case err != nil:
		return projects.Response{}, fmt.Errorf("calling home (%s): %w", home.Name, err)
	}
	var out projects.Response
	if err := json.Unmarshal(raw, &out); err != nil {
		return projects.Response{}, fmt.Errorf("%w: decoding home's consolidation answer: %w", ErrBadAnswer, err)
	}
	return out, nil
}

// SearchMemories runs SearchTool on instanceID with args (a JSON object of
// crow_search_memories arguments, passed as they are) and returns the
// result objects it answered. Errors: a *ToolError when the peer refused the
// search, ErrUnavailable when it could not be asked, ErrBadAnswer when the
// answer has no results list.
func (c *Client) SearchMemories(ctx context.Context, instanceID string, args json.RawMessage) ([]json.RawMessage, error) {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	raw, err := c.call(ctx, instanceID, SearchTool, args)
	if err != nil {
		return nil, searchError(err)
	}
	return decodeResults(raw)
}

// searchError adds the context of a search to a tool error.
func searchError(err error) error {
	var te *ToolError
	if errors.As(err, &te) {
		return fmt.Errorf("peer answered with an error: %w", te)
	}
	return err
}

// decodeResults extracts the result objects of a crow_search_memories
// answer.
func decodeResults(raw json.RawMessage) ([]json.RawMessage, error) {
	var body struct {
		Results []json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal(raw, &body); err != nil || body.Results == nil {
		return nil, fmt.Errorf("%w: answer has no results list", ErrBadAnswer)
	}
	return body.Results, nil
}
