package projects

import (
	"context"
	"errors"
	"fmt"
)

// ErrHomeUnreachable is returned (wrapped with the cause) by
// ConsolidateOnHome when this instance is not home and home could not be
// asked: try again when it is online.
var ErrHomeUnreachable = errors.New("the home instance is unreachable")

// Forwarder sends a consolidation to the home instance (a satellite's path;
// package federation calls home's update_project_state). Home's refusal of
// the request itself must wrap ErrInvalid; any other error means home could
// not be asked.
type Forwarder interface {
	Consolidate(ctx context.Context, project string, req Request) (Response, error)
}

// ForwarderFunc adapts a function to Forwarder.
type ForwarderFunc func(ctx context.Context, project string, req Request) (Response, error)

// Consolidate calls f.
func (f ForwarderFunc) Consolidate(ctx context.Context, project string, req Request) (Response, error) {
	return f(ctx, project, req)
}

// Route is how ConsolidateOnHome reaches home from an instance that is not
// home.
type Route struct {
	// Forwarder reaches home (nil: consolidations are refused here).
	Forwarder Forwarder
	// FromPeer marks a call another instance forwarded: it is never
	// forwarded again.
	FromPeer bool
	// Self and Role name this instance in the refusal.
	Self, Role string
}

// ConsolidateOnHome runs req on home: here when s is home (Consolidate),
// else through route's Forwarder. stored is true when s stored a new
// version here. Off home, a call from a peer or with no Forwarder is
// refused with an error wrapping ErrNotHome; home's refusal of the request
// wraps ErrInvalid; a failure to reach home wraps ErrHomeUnreachable.
func (s *Service) ConsolidateOnHome(ctx context.Context, project string, req Request, route Route) (res Response, stored bool, err error) {
	if s.home {
		res, err = s.Consolidate(ctx, project, req)
		return res, err == nil && !res.Unchanged, err
	}
	if route.FromPeer || route.Forwarder == nil {
		return Response{}, false, fmt.Errorf("%w, and this instance (%s) is a %s", ErrNotHome, route.Self, route.Role)
	}
	res, err = route.Forwarder.Consolidate(ctx, project, req)
	if err != nil {
		if errors.Is(err, ErrInvalid) {
			return Response{}, false, err // home's own answer: a bad request
		}
		return Response{}, false, fmt.Errorf("%w: %w; consolidation happens on home only, try again when it is online", ErrHomeUnreachable, err)
	}
	return res, false, nil
}
