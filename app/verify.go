package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/crow-sync/crow/anchor"
	"github.com/crow-sync/crow/projects"
)

// ChainReader reads state anchors on chain (package anchor's Chain).
type ChainReader interface {
	GetAnchor(ctx context.Context, projectID [32]byte, version uint64) (anchor.Anchor, bool, error)
	Info() anchor.ChainInfo
}

// VersionCheck is the verification of one state version.
type VersionCheck struct {
	Version   uint64 `json:"version"`
	StateHash string `json:"state_hash"` // the version's hash as stored here
	// Status: anchored (on chain, hash matches), pending (not on chain
	// yet), mismatch (the chain holds another hash), conflict (home found
	// another hash there when anchoring), or unverified (no chain access
	// here: the record is home's, replicated).
	Status string `json:"status"`
	Match  bool   `json:"match"`
	// On chain, when read.
	AnchorID         uint64 `json:"anchor_id,omitempty"`
	OnchainStateHash string `json:"onchain_state_hash,omitempty"`
	AnchoredAt       string `json:"anchored_at,omitempty"`
	AnchoredBy       string `json:"anchored_by,omitempty"`
	TxHash           string `json:"tx_hash,omitempty"`
	BlockNumber      uint64 `json:"block_number,omitempty"`
}

// Verification is the answer of GET /v1/verify/{name} and (with one
// version) GET /v1/project/{name}/state/anchor.
type Verification struct {
	Project string `json:"project"`
	// ProjectID is the keyed hash the chain knows the project by.
	ProjectID string         `json:"project_id"`
	Chain     *ChainDoc      `json:"chain"` // nil: this instance reads no chain
	Versions  []VersionCheck `json:"versions"`
	// Verified: every version is anchored with a matching hash.
	Verified bool   `json:"verified"`
	HowTo    string `json:"how_to_verify"`
}

type ChainDoc struct {
	Kind     string `json:"kind"`
	ChainID  uint64 `json:"chain_id"`
	Contract string `json:"contract"`
}

const howToVerify = "For each version: call getAnchor(project_id, version) on the ProjectStateAnchor contract at " +
	"chain.contract (chain.chain_id) and compare its stateHash with state_hash. To check state_hash itself, fetch " +
	"the state (GET /v1/project/{name}/state with the owner key, or from its owner) and recompute " +
	"SHA3-256(\"CM_PROJECT_STATE_V2\" ‖ RFC 8785 canonical JSON of its \"state\" object)."

// VerifyIn is the input of project.anchor.
type VerifyIn struct {
	Project string `json:"project" in:"path,name=name" required:"true" desc:"The project name."`
	Version uint64 `json:"version,omitempty" in:"query" min:"1" max:"1000000000" desc:"the state version (default: the newest)"`
}

var (
	ProjectAnchor = define(&Def[VerifyIn, Verification]{
		Spec: Spec{Name: "project.anchor", Method: "GET", Path: "/v1/project/{name}/state/anchor", Access: Public, Tag: "projects",
			Summary: "Is this state version anchored, and does the on-chain hash match? (public)"},
		Impl: (*App).projectAnchor,
	})
	ProjectVerify = define(&Def[ProjectName, Verification]{
		Spec: Spec{Name: "project.verify", Method: "GET", Path: "/v1/verify/{name}", Access: Public, Tag: "projects",
			Summary: "Verify every state version of a project against the chain (public)"},
		Impl: (*App).projectVerify,
	})
)

// check verifies one version against the chain (or the replicated record).
func (a *App) check(ctx context.Context, project string, pid [32]byte, version uint64, stateHash string) (VersionCheck, error) {
	c := VersionCheck{Version: version, StateHash: stateHash, Status: anchor.StatusPending}
	rec, ok, err := anchor.ReadRecord(a.d.DB, anchor.StateRecordID(project, version))
	if err != nil {
		return c, err
	}
	if ok {
		c.TxHash, c.BlockNumber, c.AnchorID = rec.TxHash, rec.Block, rec.AnchorID
		if rec.Status == anchor.StatusConflict {
			c.Status = anchor.StatusConflict
		}
	}
	if a.d.Chain == nil {
		if ok && rec.Status == anchor.StatusAnchored {
			c.Status = "unverified"
			c.Match = rec.StateHash == stateHash
		}
		return c, nil
	}
	an, found, err := a.d.Chain.GetAnchor(ctx, pid, version)
	if err != nil {
		return c, Wrap(KindUpstream, err, fmt.Sprintf("reading the chain: %v", err))
	}
	if !found {
		return c, nil
	}
	c.AnchorID, c.OnchainStateHash = an.ID, anchor.HashHex(an.StateHash)
	c.AnchoredAt, c.AnchoredBy = an.AnchoredAt.UTC().Format("2006-01-02T15:04:05Z"), an.AnchoredBy
	if an.TxHash != "" {
		c.TxHash, c.BlockNumber = an.TxHash, an.Block
	}
	c.Match = c.OnchainStateHash == stateHash
	if c.Match {
		c.Status = anchor.StatusAnchored
	} else {
		c.Status = "mismatch"
	}
	return c, nil
}

// verifiable refuses when this instance keeps no project state.
func (a *App) verifiable() error {
	if a.d.Projects == nil || a.d.ProjectID == nil || a.d.DB == nil {
		return Errorf(KindNotFound, "this gateway keeps no project state")
	}
	return nil
}

func (a *App) verifyDoc(project string) Verification {
	pid := a.d.ProjectID(project)
	out := Verification{Project: project, ProjectID: anchor.HashHex(pid), Versions: []VersionCheck{}, HowTo: howToVerify}
	if a.d.Chain != nil {
		info := a.d.Chain.Info()
		out.Chain = &ChainDoc{Kind: info.Kind, ChainID: info.ChainID, Contract: info.Contract}
	}
	return out
}

// projectVerify verifies every version of a project (public).
func (a *App) projectVerify(ctx context.Context, in ProjectName) (Verification, error) {
	if err := a.verifiable(); err != nil {
		return Verification{}, err
	}
	latest, err := a.d.Projects.Latest(in.Project)
	if errors.Is(err, projects.ErrNoState) {
		return Verification{}, noState(in.Project, err)
	} else if err != nil {
		return Verification{}, err
	}
	out := a.verifyDoc(in.Project)
	pid := a.d.ProjectID(in.Project)
	out.Verified = true
	for v := uint64(1); v <= latest.Version; v++ {
		ver, err := a.d.Projects.Version(in.Project, v)
		if errors.Is(err, projects.ErrNoState) {
			continue // not replicated here yet
		} else if err != nil {
			return Verification{}, err
		}
		c, err := a.check(ctx, in.Project, pid, v, ver.StateHash)
		if err != nil {
			return Verification{}, err
		}
		out.Verified = out.Verified && c.Status == anchor.StatusAnchored
		out.Versions = append(out.Versions, c)
	}
	return out, nil
}

// projectAnchor verifies one version (default the newest; public).
func (a *App) projectAnchor(ctx context.Context, in VerifyIn) (Verification, error) {
	if err := a.verifiable(); err != nil {
		return Verification{}, err
	}
	v, err := a.d.Projects.Latest(in.Project)
	if err == nil && in.Version != 0 {
		v, err = a.d.Projects.Version(in.Project, in.Version)
	}
	if errors.Is(err, projects.ErrNoState) {
		return Verification{}, noState(in.Project, err)
	} else if err != nil {
		return Verification{}, err
	}
	out := a.verifyDoc(in.Project)
	c, err := a.check(ctx, in.Project, a.d.ProjectID(in.Project), v.Version, v.StateHash)
	if err != nil {
		return Verification{}, err
	}
	out.Versions = append(out.Versions, c)
	out.Verified = c.Status == anchor.StatusAnchored
	return out, nil
}
