package anchor

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/crow-sync/crow/identity"
	"github.com/crow-sync/crow/state"
	"github.com/crow-sync/crow/store"
)

// The chain knows a project by a keyed hash of its name,
// identity.Seed.ProjectIDHash, which takes the seed, and the seed
// lives only on home. So home computes it (SeedProjectID) and writes it in
// every state record it makes (Record.ProjectID); the records replicate,
// and an instance without the seed names a project on chain by reading
// them (RecordsProjectID). Until home has recorded an anchoring of a
// project (and for a project whose records all predate Record.ProjectID),
// such an instance cannot name it on chain.

// SeedProjectID is Verifier.ProjectID on home (or any instance holding the
// seed): the project id computed from the seed, always known.
func SeedProjectID(seed identity.Seed) func(project string) ([32]byte, bool) {
	return func(project string) ([32]byte, bool) { return seed.ProjectIDHash(project), true }
}

// RecordsProjectID is Verifier.ProjectID on an instance without the seed:
// the project id home recorded in its replicated state records
// (RecordedProjectID). A project with no such record, or an error reading
// the records, is not known (ok false); nothing is logged.
func RecordsProjectID(db *store.DB) func(project string) ([32]byte, bool) {
	return func(project string) ([32]byte, bool) {
		id, ok, err := RecordedProjectID(db, project)
		return id, ok && err == nil
	}
}

// RecordedProjectID returns the project id home anchored project under, as
// written in its state records (the newest one that has it); ok is false
// when no record of the project carries one. It reads only the project's
// own rows of the anchors table, newest first.
func RecordedProjectID(db *store.DB, project string) ([32]byte, bool, error) {
	prefix := "state/" + project + "/"
	var id [32]byte
	found := false
	_, _, err := db.List(store.TableAnchors, store.ListOptions{
		// Row ids of the project are prefix + 20 digits, all before
		// prefix + "~"; listing backwards from there, the first row
		// without the prefix ends the search.
		After: prefix + "~", Reverse: true, Limit: 1,
		Filter: func(r *store.Row) bool {
			rest, ok := strings.CutPrefix(r.RowID, prefix)
			if !ok || found {
				return true // past the project's rows, or found: stop
			}
			if len(rest) != 20 || strings.Trim(rest, "0123456789") != "" {
				return false // another project whose name extends this one
			}
			var rec Record
			if json.Unmarshal(r.Data, &rec) != nil || rec.Kind != RecordState || rec.Project != project || rec.ProjectID == "" {
				return false // e.g. written before Record.ProjectID
			}
			h, err := state.ParseHash(rec.ProjectID)
			if err != nil || h == ([32]byte{}) {
				return false
			}
			id, found = h, true
			return true
		},
	})
	if err != nil {
		return [32]byte{}, false, fmt.Errorf("reading the anchor records of %s: %w", project, err)
	}
	if !found {
		// Since issue 16 the versions are in their roots' batch rows.
		pid, ok, err := batchProjectID(db, project)
		if err != nil {
			return [32]byte{}, false, fmt.Errorf("reading the anchor records of %s: %w", project, err)
		}
		if h, err := state.ParseHash(pid); ok && err == nil && h != ([32]byte{}) {
			id, found = h, true
		}
	}
	return id, found, nil
}
