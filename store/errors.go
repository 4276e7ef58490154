package store

import "errors"

// ErrNotFound is returned by Get and GetTxn when a row does not exist, and by the Writer when
// an update or delete targets a row that is missing or already deleted. Get returns tombstones
// as rows with Deleted set, not as ErrNotFound.
var ErrNotFound = errors.New("row not found")

// ErrExists is returned by the Writer when an insert targets a live row.
var ErrExists = errors.New("row already exists")

// ErrInvalidTable is returned for a table name that is not one of the known tables.
var ErrInvalidTable = errors.New("invalid table")

// ErrInvalidMutation is returned by Writer.Write for a malformed mutation (unknown op, empty
// row id, data that is not a JSON object).
var ErrInvalidMutation = errors.New("invalid mutation")

// ErrClosed is returned by Writer.Write when the writer is not running (Serve returned).
var ErrClosed = errors.New("writer closed")

// ErrUnknownSchema is returned by ParseChange for a change record whose schema version this
// build does not know. Callers park such records rather than drop them.
var ErrUnknownSchema = errors.New("unknown change record schema")

// ErrTooLarge is returned by Writer.Write when one call's mutations do not fit in a single
// badger transaction.
var ErrTooLarge = errors.New("write too large for one transaction")
