package state

import (
	"crypto/sha3"
	"encoding/json"
	"fmt"
)

// DomainSeparator precedes the canonical state in the state hash.
const DomainSeparator = "CM_PROJECT_STATE_V2"

// Canonical returns the RFC 8785 (JCS) canonical JSON of s: the bytes that Hash hashes.
func Canonical(s State) ([]byte, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encoding state: %w", err)
	}
	return canonicalJSON(b)
}

// Hash returns the state_hash of s: "0x" + hex of SHA3-256(DomainSeparator ‖ Canonical(s)).
func Hash(s State) (string, error) {
	c, err := Canonical(s)
	if err != nil {
		return "", err
	}
	h := sha3.New256()
	h.Write([]byte(DomainSeparator))
	h.Write(c)
	return hex0x(h.Sum(nil)), nil
}

// Verify checks that v is well formed on its own: schema version 2, Version equal to
// state_meta.version (and at least 1), previous_state_hash null exactly for version 1, and
// StateHash equal to Hash(v.State). Errors wrap ErrCorruptVersion.
func Verify(v Version) error {
	switch {
	case v.SchemaVersion != SchemaVersion:
		return fmt.Errorf("%w: schema_version %d, want %d", ErrCorruptVersion, v.SchemaVersion, SchemaVersion)
	case v.Version == 0:
		return fmt.Errorf("%w: version 0", ErrCorruptVersion)
	case v.Version != v.State.Meta.Version:
		return fmt.Errorf("%w: version %d but state_meta.version %d", ErrCorruptVersion, v.Version, v.State.Meta.Version)
	case v.Version == 1 && v.State.Meta.PreviousStateHash != "":
		return fmt.Errorf("%w: version 1 has a previous_state_hash", ErrCorruptVersion)
	case v.Version > 1 && v.State.Meta.PreviousStateHash == "":
		return fmt.Errorf("%w: version %d has no previous_state_hash", ErrCorruptVersion, v.Version)
	}
	h, err := Hash(v.State)
	if err != nil {
		return fmt.Errorf("%w: hashing version %d: %w", ErrCorruptVersion, v.Version, err)
	}
	if h != v.StateHash {
		return fmt.Errorf("%w: version %d has state_hash %s but its state hashes to %s", ErrCorruptVersion, v.Version, v.StateHash, h)
	}
	return nil
}

// VerifyLink checks that next directly follows prev in one project's chain: both verify,
// same project, next.Version = prev.Version+1, next's previous_state_hash = prev's
// state_hash, and consolidated_until_event did not go backwards. Errors wrap
// ErrCorruptVersion.
func VerifyLink(prev, next Version) error {
	if err := Verify(prev); err != nil {
		return err
	}
	if err := Verify(next); err != nil {
		return err
	}
	switch {
	case prev.Project != next.Project:
		return fmt.Errorf("%w: version %d is of project %q, version %d of %q", ErrCorruptVersion, prev.Version, prev.Project, next.Version, next.Project)
	case next.Version != prev.Version+1:
		return fmt.Errorf("%w: version %d does not follow version %d", ErrCorruptVersion, next.Version, prev.Version)
	case string(next.State.Meta.PreviousStateHash) != prev.StateHash:
		return fmt.Errorf("%w: version %d links to %s, not to version %d's %s", ErrCorruptVersion, next.Version, next.State.Meta.PreviousStateHash, prev.Version, prev.StateHash)
	case next.State.Meta.ConsolidatedUntilEvent < prev.State.Meta.ConsolidatedUntilEvent:
		return fmt.Errorf("%w: consolidated_until_event goes back from %d to %d at version %d", ErrCorruptVersion, prev.State.Meta.ConsolidatedUntilEvent, next.State.Meta.ConsolidatedUntilEvent, next.Version)
	}
	return nil
}
