package store

import (
	"bytes"
	"encoding/json"
	"time"
)

// Forgetting (SPEC §10). A forget is a tombstone whose data is only the row's id and the time
// of the forget:
//
//	{"id":"<row id>","forgotten_at":"2026-11-29T21:00:00Z"}
//
// It is written with a Mutation whose Forget is set (over a live row or a tombstone, which no
// other op may rewrite) and replicates as an ordinary delete change record. A forgotten row
// stays forgotten: the Writer refuses to revive it (ErrForgotten), and the apply loop lets a
// forget win over every other version (sync/apply). What else is erased (feed entries,
// conflict records, the search index, old versions on disk) is package forget's.

// ForgetData returns the data of a forget of row id at t (RFC 3339, UTC, whole seconds).
func ForgetData(id string, t time.Time) json.RawMessage {
	b, _ := json.Marshal(struct {
		ID          string `json:"id"`
		ForgottenAt string `json:"forgotten_at"`
	}{id, t.UTC().Truncate(time.Second).Format(time.RFC3339)})
	return b
}

// ForgottenAt returns the forgotten_at of a forget's data, "" if data is not a forget's.
func ForgottenAt(data json.RawMessage) string {
	if !bytes.Contains(data, []byte(`"forgotten_at"`)) {
		return ""
	}
	var d struct {
		ForgottenAt string `json:"forgotten_at"`
	}
	if json.Unmarshal(data, &d) != nil {
		return ""
	}
	return d.ForgottenAt
}

// IsForget reports whether a version (deleted flag and data) is a forget: a tombstone with a
// non-empty forgotten_at.
func IsForget(deleted bool, data json.RawMessage) bool { return deleted && ForgottenAt(data) != "" }

// Forgotten reports whether r is a forget's tombstone.
func (r *Row) Forgotten() bool { return r != nil && IsForget(r.Deleted, r.Data) }

// Forgets reports whether c is a forget's change record.
func (c *ChangeRecord) Forgets() bool { return c.Op == OpDelete && ForgottenAt(c.Data) != "" }
