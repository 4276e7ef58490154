package conflicts

import "errors"

// ErrNotFound is returned by Get and MarkRead for an id that does not exist.
var ErrNotFound = errors.New("conflicts: not found")
