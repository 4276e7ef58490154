package store

import "errors"

// ErrNotFound is returned by DB.Get and Txn.GetRow when a row does not exist, and by the Writer when
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

// ErrTooLarge is returned (wrapped) when writes do not fit in one transaction: by Writer.Write
// when one call's mutations do not, and by Txn.Set, Txn.Delete, Txn.PutRow and so DB.Update.
// Its dynamic type has a method TooLarge() bool reporting true, so packages that cannot import
// store (feed, which stores through an interface) can recognise it.
var ErrTooLarge error = tooLargeError{}

type tooLargeError struct{}

func (tooLargeError) Error() string  { return "write too large for one transaction" }
func (tooLargeError) TooLarge() bool { return true }

// ErrConflict is returned by DB.Update when its transaction still conflicted with concurrent
// ones after every attempt.
var ErrConflict = errors.New("transaction conflict")

// ErrReservedKey is returned by Txn's and WriteBatch's raw key methods for a key (or an
// iteration prefix) in one of store's own prefixes: t/, s/, q/, m/. Other packages keep their
// data under their own prefixes (docs/ARCHITECTURE.md).
var ErrReservedKey = errors.New("key reserved for store")

// ErrForgotten is returned by the Writer for an insert (or put) over a forgotten row: a forget
// is for good (see ForgetData).
var ErrForgotten = errors.New("row was forgotten")

// ErrNotCounted is returned by Txn.CountBy and DB.CountBy for a field that is not one of
// CountedFields(table).
var ErrNotCounted = errors.New("field not counted")
