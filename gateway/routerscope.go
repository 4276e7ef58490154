package gateway

import (
	"fmt"
	"slices"

	"github.com/crow-sync/crow/app"

	"github.com/mark3labs/mcp-go/mcp"
)

// What /router/mcp advertises. Every tool of /mcp is listed on the router
// (each runs on this instance with instance_id = this instance's id), but
// other instances run only the tools on their federation allow-list for this
// one (Config.RemoteAllowed). A tool outside it is listed as local-only: its
// description says so first and names this instance's id, so a client (or a
// model) does not route it to a peer only to be refused. The call is still
// forwarded if asked for: the target's allow-list is the authority (and its
// refusal is logged and counted there).

// routedDescription is tool's description on the router.
func (s *Server) routedDescription(tool mcp.Tool) string {
	if s.remoteAllowed(tool.Name) {
		return "Routed to the instance named by instance_id (any registered instance runs it). " + tool.Description
	}
	return fmt.Sprintf("LOCAL ONLY: other instances refuse %s for federated calls (their allow-lists admit only search and read tools), "+
		"so give instance_id %q (this instance). ", tool.Name, s.app.Self().InstanceID) + tool.Description
}

// remoteAllowed reports whether other instances run tool for this one:
// Config.RemoteAllowed, else (unset) this instance's own PeerAllowed, else
// the table's peer tools on any instance (home takes consolidations too):
// the same software has the same list.
func (s *Server) remoteAllowed(tool string) bool {
	switch {
	case s.cfg.RemoteAllowed != nil:
		return s.cfg.RemoteAllowed(tool)
	case s.cfg.PeerAllowed != nil:
		return s.cfg.PeerAllowed(tool)
	}
	return slices.Contains(app.PeerTools(true), tool)
}
