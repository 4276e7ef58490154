package registry

import "errors"

// ErrNotFound is returned by Get and Revoke for an instance id the registry
// does not hold, and by Home when no home is registered. Table
// implementations return an error wrapping it from Get for an absent row and
// from Put for an update of an absent row.
var ErrNotFound = errors.New("registry: instance not found")

// ErrExists is returned by Table implementations from Put when insert is true
// and the row already exists. The registry reacts by re-reading the row.
var ErrExists = errors.New("registry: instance row already exists")

// ErrInvalidURL is returned by Register for a gateway URL that is not an
// absolute http or https URL with a host (and no user info, query or
// fragment).
var ErrInvalidURL = errors.New("registry: invalid gateway URL")

// ErrUnhealthy is returned by Register (and recorded by probes) when the
// gateway's /health cannot be fetched, does not answer 200, or answers a
// document that is malformed or not "ok".
var ErrUnhealthy = errors.New("registry: health check failed")

// ErrChallengeMismatch is returned by Register when /health?challenge= does
// not echo the challenge that was sent, or changes its instance id or public
// key between the two requests.
var ErrChallengeMismatch = errors.New("registry: challenge not echoed")

// ErrForeignIdentity is returned by Register when the instance belongs to
// another identity: its crow id is not ours, or its public key is not the one
// our master seed derives for the instance id it reports.
var ErrForeignIdentity = errors.New("registry: instance belongs to another identity")

// ErrBadSignature is returned by Register when the challenge signature does
// not verify against the instance's public key.
var ErrBadSignature = errors.New("registry: bad challenge signature")

// ErrRevoked is returned by Register and RegisterSelf for an instance id that
// has been revoked (a revoked id never comes back), and by PeerKey.
var ErrRevoked = errors.New("registry: instance is revoked")

// ErrSecondHome is returned by Register and RegisterSelf when the instance
// says it is a home and a different, non-revoked home is already registered.
var ErrSecondHome = errors.New("registry: a different home instance is already registered")

// ErrRevokeSelf is returned by Revoke when asked to revoke this instance:
// revoke it from another machine.
var ErrRevokeSelf = errors.New("registry: refusing to revoke this instance itself")

// ErrInvalidInstance is returned when a health document or a stored row is
// malformed: empty id, unknown role, a public key that is not 32 bytes of
// hex, a sync address that is not a multiaddr.
var ErrInvalidInstance = errors.New("registry: invalid instance")
