package app

import (
	"errors"

	"github.com/crow-sync/crow/anchor"
	"github.com/crow-sync/crow/audit"
	"github.com/crow-sync/crow/conflicts"
	"github.com/crow-sync/crow/federation"
	"github.com/crow-sync/crow/feed"
	"github.com/crow-sync/crow/home"
	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/projects"
	"github.com/crow-sync/crow/records"
	"github.com/crow-sync/crow/reenroll"
	"github.com/crow-sync/crow/registry"
	"github.com/crow-sync/crow/state"
	"github.com/crow-sync/crow/store"
)

// domainKinds maps the domain packages' sentinel errors to kinds: the one
// place a domain error becomes an HTTP status or a tool error. The first
// match wins.
var domainKinds = []struct {
	err  error
	kind Kind
}{
	{store.ErrNotFound, KindNotFound}, // also memory.ErrNotFound, records.ErrNotFound
	{records.ErrNoTable, KindNotFound},
	{store.ErrExists, KindConflict},
	{store.ErrInvalidTable, KindInvalid},
	{store.ErrTooLarge, KindTooLarge},
	{store.ErrClosed, KindUnavailable},
	{store.ErrDiskFull, KindInsufficientStorage},
	{feed.ErrOwnForked, KindConflict},

	{reenroll.ErrNotForked, KindConflict},
	{reenroll.ErrInProgress, KindConflict},
	{reenroll.ErrBadInvite, KindInvalid},
	{reenroll.ErrRefused, KindForbidden},
	{home.ErrReenrollSeed, KindInvalid},

	{registry.ErrInvalidURL, KindInvalid},
	{registry.ErrRevokeSelf, KindInvalid},
	{registry.ErrInvalidInstance, KindInvalid},
	{registry.ErrForeignIdentity, KindForbidden},
	{registry.ErrBadSignature, KindForbidden},
	{registry.ErrChallengeMismatch, KindForbidden},
	{registry.ErrBadAnnouncement, KindForbidden},
	{registry.ErrUncertified, KindForbidden},
	{registry.ErrNotHome, KindForbidden},
	{registry.ErrInviteUnknown, KindForbidden},
	{registry.ErrInviteExpired, KindForbidden},
	{registry.ErrBadJoin, KindForbidden},
	{registry.ErrInviteUsed, KindConflict},
	{registry.ErrNotFound, KindNotFound},
	{registry.ErrRevoked, KindConflict},
	{registry.ErrSecondHome, KindConflict},
	{registry.ErrAlreadyHome, KindConflict},
	{registry.ErrHomeReachable, KindConflict},
	{registry.ErrNoSeed, KindForbidden},
	{registry.ErrExists, KindConflict},
	{registry.ErrUnhealthy, KindUpstream},

	{conflicts.ErrNotFound, KindNotFound},
	{conflicts.ErrResolved, KindConflict},
	{conflicts.ErrStale, KindConflict},
	{conflicts.ErrRestoreRefused, KindConflict},

	{projects.ErrNoState, KindNotFound},
	{projects.ErrInvalid, KindInvalid},
	{projects.ErrNotHome, KindInvalid},
	{projects.ErrHomeUnreachable, KindUpstream},

	{anchor.ErrChainUnreadable, KindUpstream},

	{audit.ErrBadCursor, KindInvalid},
	{audit.ErrUnknownProject, KindNotFound},

	{federation.ErrBadScope, KindInvalid},
	{federation.ErrNoFederation, KindInvalid},

	{state.ErrTooManyOps, KindInvalid},
	{state.ErrUntilBackwards, KindInvalid},
	{state.ErrUntilAhead, KindInvalid},
	{state.ErrInvalidRequest, KindInvalid},
}

// classify maps a domain error to its kind.
func classify(err error) (Kind, bool) {
	var verr *memory.ValidationError
	if errors.As(err, &verr) {
		return KindInvalid, true
	}
	var rerr *records.ValidationError
	if errors.As(err, &rerr) {
		return KindInvalid, true
	}
	for _, d := range domainKinds {
		if errors.Is(err, d.err) {
			return d.kind, true
		}
	}
	return KindInternal, false
}
