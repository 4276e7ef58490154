package state

import "errors"

// Request errors: Apply returns them (wrapped, with the details) for a request it refuses as
// a whole; nothing is applied. The gateway answers 400 for all but ErrCorruptVersion.
var (
	// ErrTooManyOps is returned by Apply for a request with more than MaxOpsPerRequest ops.
	ErrTooManyOps = errors.New("state: too many ops in one request")
	// ErrUntilBackwards is returned by Apply when consolidated_until_event is lower than the
	// previous version's.
	ErrUntilBackwards = errors.New("state: consolidated_until_event goes backwards")
	// ErrUntilAhead is returned by Apply when consolidated_until_event is above the highest
	// memory number.
	ErrUntilAhead = errors.New("state: consolidated_until_event passes the highest memory number")
	// ErrInvalidRequest is returned by Apply for an empty project name, a zero GeneratedAt or
	// a previous version of another project.
	ErrInvalidRequest = errors.New("state: invalid request")
)

// Verification errors.
var (
	// ErrCorruptVersion is returned by Verify and VerifyLink for a version whose state_hash,
	// numbering or chain link does not hold, and by Apply (wrapped) when the previous version
	// it was given does not verify: the stored chain is damaged.
	ErrCorruptVersion = errors.New("state: version does not verify")
	// ErrNotCanonicalizable is returned by Canonical and Hash for a state that has no RFC 8785
	// form in this package: a number that is not an integer within ±(2^53-1). Apply never
	// builds such a state.
	ErrNotCanonicalizable = errors.New("state: value has no canonical JSON form")
)
