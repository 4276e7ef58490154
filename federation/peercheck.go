package federation

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// The peer checks of `crow doctor`: two read-only tools every instance
// serves to its peers (package app defines them; their names are here so the
// typed calls own them).
const (
	// PingTool answers the callee's id and clock: a federated call that
	// proves the caller's token is accepted there.
	PingTool = "crow_peer_ping"
	// CheckTool makes the callee call PingTool back on the caller (with the
	// callee's own token) and answer how that went: it proves both
	// directions with one request.
	CheckTool = "crow_peer_check"
)

// PeerCheckTimeout bounds one PeerCheck (which includes the callback).
const PeerCheckTimeout = 15 * time.Second

// Pong is the answer of PingTool. JSON names are part of the federation
// contract.
type Pong struct {
	InstanceID string `json:"instance_id"`
	// Time is the callee's clock when it answered (RFC 3339, nanoseconds).
	Time string `json:"time"`
}

// CheckAnswer is the answer of CheckTool: the callee's Pong, and whether
// its call back to the caller was accepted (CallbackError says why not).
type CheckAnswer struct {
	Pong
	CallbackOK    bool   `json:"callback_ok"`
	CallbackError string `json:"callback_error,omitempty"`
}

// Ping runs PingTool on instanceID. Errors as the other typed calls: a
// refused token or an unreachable peer wraps ErrUnavailable (and
// ErrUnauthorized for a refusal), a tool error is a *ToolError, an answer
// that does not decode wraps ErrBadAnswer.
func (c *Client) Ping(ctx context.Context, instanceID string) (Pong, error) {
	raw, err := c.call(ctx, instanceID, PingTool, nil)
	if err != nil {
		return Pong{}, err
	}
	var p Pong
	if err := json.Unmarshal(raw, &p); err != nil || p.InstanceID == "" {
		return Pong{}, fmt.Errorf("%w: %s on %s: no instance id", ErrBadAnswer, PingTool, instanceID)
	}
	return p, nil
}

// PeerCheck runs CheckTool on instanceID (bounded by PeerCheckTimeout),
// with Ping's errors.
func (c *Client) PeerCheck(ctx context.Context, instanceID string) (CheckAnswer, error) {
	ctx, cancel := context.WithTimeout(ctx, PeerCheckTimeout)
	defer cancel()
	raw, err := c.call(ctx, instanceID, CheckTool, nil)
	if err != nil {
		return CheckAnswer{}, err
	}
	var a CheckAnswer
	if err := json.Unmarshal(raw, &a); err != nil || a.InstanceID == "" {
		return CheckAnswer{}, fmt.Errorf("%w: %s on %s: no instance id", ErrBadAnswer, CheckTool, instanceID)
	}
	return a, nil
}
