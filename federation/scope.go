package federation

import (
	"errors"
	"fmt"
	"strings"
)

// ErrBadScope is returned (wrapped) by ParseScope for an instances value it
// cannot read: the caller's mistake.
var ErrBadScope = errors.New("instances must be local, all, or a comma-separated list of instance ids")

// Scope is which instances a memory search covers (the instances argument
// of GET /v1/memories/search and crow_search_memories).
type Scope struct {
	Local   bool     // search this instance
	Remote  bool     // search others: Targets, or every peer when Targets is nil
	Targets []string // peer ids (nil with Remote: every peer)
}

// ParseScope reads instances: "" or "local" (this instance), "all" (this
// instance and every peer), or a comma-separated list of instance ids in
// which "local" and selfID name this instance. Errors wrap ErrBadScope.
func ParseScope(instances, selfID string) (Scope, error) {
	instances = strings.TrimSpace(instances)
	switch instances {
	case "", "local":
		return Scope{Local: true}, nil
	case "all":
		return Scope{Local: true, Remote: true}, nil
	}
	var sc Scope
	for id := range strings.SplitSeq(instances, ",") {
		switch id = strings.TrimSpace(id); id {
		case "":
		case "local", selfID:
			sc.Local = true
		default:
			sc.Remote = true
			sc.Targets = append(sc.Targets, id)
		}
	}
	if !sc.Local && !sc.Remote {
		return sc, fmt.Errorf("%w (got %q)", ErrBadScope, instances)
	}
	return sc, nil
}
