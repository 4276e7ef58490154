package anchor

import (
	"github.com/crow-sync/crow/projects"
	"github.com/crow-sync/crow/store"
)

// Records reads home's anchors records (they replicate to every instance).
// It implements projects.AnchorRecords. A nil DB holds no record.
type Records struct {
	DB *store.DB
}

// StateAnchor returns the anchoring of project's version: its record, or
// status pending when there is none.
func (r Records) StateAnchor(project string, version uint64) (projects.StateAnchor, error) {
	out := projects.StateAnchor{Status: StatusPending}
	if r.DB == nil {
		return out, nil
	}
	rec, ok, err := StateRecord(r.DB, project, version)
	if err != nil || !ok {
		return out, err
	}
	status, rr, err := StatusOf(r.DB, rec)
	if err != nil {
		return out, err
	}
	if rec.Root == "" {
		return out, nil // anchored before roots: home anchors it again
	}
	out = projects.StateAnchor{Status: status, OnchainAnchorID: rec.RootID, TxHash: rec.TxHash, BlockNumber: rec.Block}
	if rr.TxHash != "" {
		out.OnchainAnchorID, out.TxHash, out.BlockNumber = rr.RootID, rr.TxHash, rr.Block
	}
	return out, nil
}
