package anchor

import (
	"context"
	"errors"
	"fmt"

	"github.com/crow-sync/crow/projects"
	"github.com/crow-sync/crow/state"
	"github.com/crow-sync/crow/store"
)

// Verdicts of a state version's verification (VersionCheck.Status), besides
// StatusPending, StatusAnchored and StatusConflict.
const (
	// StatusMismatch: the chain holds another hash for this version.
	StatusMismatch = "mismatch"
	// StatusUnverified: this instance reads no chain (or cannot name the
	// project on it yet); home's replicated record says the version is
	// anchored.
	StatusUnverified = "unverified"
)

// ErrChainUnreadable is returned (wrapped with the cause) by the Verifier
// when the chain could not be read; the gateway answers 502.
var ErrChainUnreadable = errors.New("reading the chain")

// ChainReader reads state anchors on chain: the part of Chain the Verifier
// uses.
type ChainReader interface {
	GetAnchor(ctx context.Context, projectID [32]byte, version uint64) (Anchor, bool, error)
	Info() ChainInfo
}

// Versions is where the Verifier reads a project's state versions (package
// projects' Service). Both return an error wrapping projects.ErrNoState for
// a version not held here.
type Versions interface {
	Latest(project string) (*state.Version, error)
	Version(project string, n uint64) (*state.Version, error)
}

// VersionCheck is the verification of one state version. JSON field names
// are part of the REST API (GET /v1/verify/{name}).
type VersionCheck struct {
	Version   uint64 `json:"version"`
	StateHash string `json:"state_hash"` // the version's hash as stored here
	// Status: anchored (on chain, hash matches), pending (not on chain
	// yet), mismatch (the chain holds another hash), conflict (home found
	// another hash there when anchoring), or unverified (no chain access
	// here, or the project cannot be named on chain here yet: the record
	// is home's, replicated).
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

// Contradicted reports whether the chain contradicts this version (mismatch
// or conflict): the one verdict that is a failure, not merely "not yet".
func (c VersionCheck) Contradicted() bool {
	return c.Status == StatusMismatch || c.Status == StatusConflict
}

// Report is the answer of GET /v1/verify/{name} and (with one version) GET
// /v1/project/{name}/state/anchor. JSON field names are part of the REST API.
type Report struct {
	Project string `json:"project"`
	// ProjectID is the keyed hash the chain knows the project by; empty
	// when this instance cannot name the project on chain (a satellite
	// before home recorded an anchoring of it).
	ProjectID string `json:"project_id"`
	// Chain is nil when the versions were not checked against a chain:
	// this instance reads none, or ProjectID is empty.
	Chain    *ChainDoc      `json:"chain"`
	Versions []VersionCheck `json:"versions"`
	// Verified: every version is anchored with a matching hash.
	Verified bool   `json:"verified"`
	HowTo    string `json:"how_to_verify"`
}

// ChainDoc names the chain and contract a Report was checked against.
type ChainDoc struct {
	Kind     string `json:"kind"`
	ChainID  uint64 `json:"chain_id"`
	Contract string `json:"contract"`
}

// HowToVerify is Report.HowTo: how anyone checks a report without trusting
// this instance.
const HowToVerify = "For each version: call getAnchor(project_id, version) on the ProjectStateAnchor contract at " +
	"chain.contract (chain.chain_id) and compare its stateHash with state_hash. To check state_hash itself, fetch " +
	"the state (GET /v1/project/{name}/state with the owner key, or from its owner) and recompute " +
	"SHA3-256(\"CM_PROJECT_STATE_V2\" ‖ RFC 8785 canonical JSON of its \"state\" object)."

// Verifier checks state versions against the chain. A Verifier without a
// Chain reads none: it reports home's replicated records, and a version
// they say is anchored is "unverified". A project ProjectID cannot name is
// reported the same way, with an empty project id: the chain is never read
// with a made-up id.
type Verifier struct {
	// DB holds home's anchors records (replicated to every instance).
	DB *store.DB
	// Chain reads anchors (nil: this instance reads no chain).
	Chain ChainReader
	// ProjectID is the keyed project id the chain knows a project by; ok
	// is false when this instance cannot name the project on chain (yet).
	// SeedProjectID on home, RecordsProjectID elsewhere; nil knows none.
	ProjectID func(project string) (id [32]byte, ok bool)
	// Versions holds the state versions.
	Versions Versions
}

// VerifyProject checks every version of project held here (versions not
// replicated here yet are left out); Verified is true if every one is
// anchored with a matching hash. It returns Latest's error for a project
// with no state (wrapping projects.ErrNoState or projects.ErrInvalid), and
// ErrChainUnreadable if the chain could not be read.
func (v Verifier) VerifyProject(ctx context.Context, project string) (Report, error) {
	latest, err := v.Versions.Latest(project)
	if err != nil {
		return Report{}, err
	}
	out, pid, onChain := v.report(project)
	out.Verified = true
	for n := uint64(1); n <= latest.Version; n++ {
		ver, err := v.Versions.Version(project, n)
		if errors.Is(err, projects.ErrNoState) {
			continue // not replicated here yet
		} else if err != nil {
			return Report{}, err
		}
		c, err := v.check(ctx, project, pid, onChain, ver)
		if err != nil {
			return Report{}, err
		}
		out.Verified = out.Verified && c.Status == StatusAnchored
		out.Versions = append(out.Versions, c)
	}
	return out, nil
}

// VerifyVersion checks one version of project (0: the newest). Errors as
// VerifyProject's; a version not held here wraps projects.ErrNoState.
func (v Verifier) VerifyVersion(ctx context.Context, project string, version uint64) (Report, error) {
	ver, err := v.Versions.Latest(project)
	if err == nil && version != 0 {
		ver, err = v.Versions.Version(project, version)
	}
	if err != nil {
		return Report{}, err
	}
	out, pid, onChain := v.report(project)
	c, err := v.check(ctx, project, pid, onChain, ver)
	if err != nil {
		return Report{}, err
	}
	out.Versions = append(out.Versions, c)
	out.Verified = c.Status == StatusAnchored
	return out, nil
}

// report is the Report of project with no version checked yet, and the
// project id to read the chain with (onChain false: read no chain).
func (v Verifier) report(project string) (out Report, pid [32]byte, onChain bool) {
	out = Report{Project: project, Versions: []VersionCheck{}, HowTo: HowToVerify}
	if v.ProjectID == nil {
		return out, pid, false
	}
	pid, ok := v.ProjectID(project)
	if !ok || pid == ([32]byte{}) {
		return out, [32]byte{}, false
	}
	out.ProjectID = HashHex(pid)
	if v.Chain == nil {
		return out, pid, false
	}
	info := v.Chain.Info()
	out.Chain = &ChainDoc{Kind: info.Kind, ChainID: info.ChainID, Contract: info.Contract}
	return out, pid, true
}

// check verifies one version against the chain under project id pid, or,
// if not onChain, against home's replicated record.
func (v Verifier) check(ctx context.Context, project string, pid [32]byte, onChain bool, ver *state.Version) (VersionCheck, error) {
	c := VersionCheck{Version: ver.Version, StateHash: ver.StateHash, Status: StatusPending}
	var rec Record
	ok := false
	if v.DB != nil {
		var err error
		if rec, ok, err = ReadRecord(v.DB, StateRecordID(project, ver.Version)); err != nil {
			return c, fmt.Errorf("reading the anchor record of %s version %d: %w", project, ver.Version, err)
		}
	}
	if ok {
		c.TxHash, c.BlockNumber, c.AnchorID = rec.TxHash, rec.Block, rec.AnchorID
		if rec.Status == StatusConflict {
			c.Status = StatusConflict
		}
	}
	if !onChain {
		if ok && rec.Status == StatusAnchored {
			c.Status = StatusUnverified
			c.Match = rec.StateHash == ver.StateHash
		}
		return c, nil
	}
	a, found, err := v.Chain.GetAnchor(ctx, pid, ver.Version)
	if err != nil {
		return c, fmt.Errorf("%w: %w", ErrChainUnreadable, err)
	}
	if !found {
		return c, nil
	}
	c.AnchorID, c.OnchainStateHash = a.ID, HashHex(a.StateHash)
	c.AnchoredAt, c.AnchoredBy = a.AnchoredAt.UTC().Format("2006-01-02T15:04:05Z"), a.AnchoredBy
	if a.TxHash != "" {
		c.TxHash, c.BlockNumber = a.TxHash, a.Block
	}
	c.Match = c.OnchainStateHash == ver.StateHash
	if c.Match {
		c.Status = StatusAnchored
	} else {
		c.Status = StatusMismatch
	}
	return c, nil
}
