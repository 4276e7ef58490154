package projects

import (
	"fmt"

	"github.com/crow-sync/crow/state"
)

// State is a state version with its anchoring: the answer of GET
// /v1/project/{name}/state and get_project_state. JSON field names are part
// of the REST API.
type State struct {
	state.Version
	Anchor StateAnchor `json:"anchor"`
	// StaleEvidence flags, per item id, the cited memory numbers whose
	// version was superseded by an edit, with the newest number: a read-time
	// annotation, outside the hashed "state" object (LatestWithAnchor sets
	// it; {} when none).
	StaleEvidence StaleEvidence `json:"stale_evidence"`
}

// StateAnchor is home's record of a version's anchoring (replicated).
type StateAnchor struct {
	Status          string `json:"status"` // pending, anchored or conflict
	OnchainAnchorID uint64 `json:"onchain_anchor_id,omitempty"`
	TxHash          string `json:"tx_hash,omitempty"`
	BlockNumber     uint64 `json:"block_number,omitempty"`
}

// AnchorRecords reads home's anchoring record of a state version (package
// anchor's Records): status pending when there is none.
type AnchorRecords interface {
	StateAnchor(project string, version uint64) (StateAnchor, error)
}

// WithAnchor joins v with its anchoring record.
func WithAnchor(v *state.Version, anchors AnchorRecords) (State, error) {
	a, err := anchors.StateAnchor(v.Project, v.Version)
	if err != nil {
		return State{}, fmt.Errorf("reading the anchoring of %s version %d: %w", v.Project, v.Version, err)
	}
	return State{Version: *v, Anchor: a, StaleEvidence: StaleEvidence{}}, nil
}

// LatestWithAnchor returns project's newest version (errors as Latest's)
// with its anchoring record and its stale evidence.
func (s *Service) LatestWithAnchor(project string, anchors AnchorRecords) (State, error) {
	v, err := s.Latest(project)
	if err != nil {
		return State{}, err
	}
	st, err := WithAnchor(v, anchors)
	if err != nil {
		return State{}, err
	}
	if st.StaleEvidence, err = s.StaleEvidence(&v.State); err != nil {
		return State{}, err
	}
	return st, nil
}
