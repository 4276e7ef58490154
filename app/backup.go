package app

import (
	"context"
	"io"

	"github.com/crow-sync/crow/registry"
)

// Stream is the answer of an operation that streams bytes rather than a JSON
// document (REST only: such an operation has no MCP tool). The gateway sends
// ContentType and then calls Write with the response body; an error from
// Write after bytes were sent aborts the connection, so the client sees a
// truncated body, never a complete-looking one.
type Stream struct {
	ContentType string                  `json:"-"`
	Write       func(w io.Writer) error `json:"-"`
}

// BackupSnapshotType is the content type of backup.snapshot's answer.
const BackupSnapshotType = "application/vnd.crow.store-snapshot"

// BackupSnapshot streams a consistent snapshot of this instance's database
// (store.DB.Snapshot: one read transaction while the daemon keeps serving),
// without the registry's local-only keys. `crow backup` wraps it with the
// identity and configuration files into the encrypted archive (package
// backup); the plaintext never touches the disk.
var BackupSnapshot = define(&Def[NoInput, *Stream]{
	Spec: Spec{Name: "backup.snapshot", Method: "GET", Path: "/v1/backup", Tag: "instance",
		Summary:  "A consistent snapshot of this instance's database, streamed (crow backup encrypts it)",
		ReadOnly: true, Idempotent: true, NoStore: true},
	Impl: func(a *App, _ context.Context, _ NoInput) (*Stream, error) {
		db := a.d.DB
		if db == nil {
			return nil, unavailable("the store")
		}
		return &Stream{ContentType: BackupSnapshotType, Write: func(w io.Writer) error {
			_, err := db.Snapshot(w, registry.LocalOnlyKey)
			return err
		}}, nil
	},
})
