package anchor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/crow-sync/crow/anchor/merkle"
	"github.com/crow-sync/crow/projects"
	"github.com/crow-sync/crow/state"
	"github.com/crow-sync/crow/store"
)

// Verdicts of a state version's verification (VersionCheck.Status), besides
// StatusPending, StatusIncluded and StatusFinal.
const (
	// StatusMismatch: the root's record commits another state hash for this
	// version than the one held here, or its proof does not lead to the root.
	StatusMismatch = "mismatch"
	// StatusMissing: home's records say the version's root is anchored,
	// but the chain read here has no such root (a rewritten or reset chain).
	StatusMissing = "missing"
	// StatusUnverified: this instance reads no chain; home's replicated
	// record says the version is anchored and its proof checks out.
	StatusUnverified = "unverified"
)

// ErrChainUnreadable is returned (wrapped with the cause) by the Verifier
// when the chain could not be read; the gateway answers 502.
var ErrChainUnreadable = errors.New("reading the chain")

// ChainReader reads roots on chain: the part of Chain the Verifier uses.
type ChainReader interface {
	GetRoot(ctx context.Context, root [32]byte) (RootInfo, bool, error)
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
	// GeneratedAt is when the version was consolidated (RFC 3339): a
	// verifier tells "pending" from "pending past the schedule" by it.
	GeneratedAt string `json:"generated_at,omitempty"`
	// Status: pending (not in an anchored root yet), included (its root is
	// in a block), final (with the configured confirmations), mismatch
	// (the record commits another hash, or the proof fails), missing (the
	// chain has no such root), or unverified (no chain read here; home's
	// record and proof check out).
	Status string `json:"status"`
	Match  bool   `json:"match"`
	// The root that commits the version, and where it is on chain.
	Root        string `json:"root,omitempty"`
	RootID      uint64 `json:"root_id,omitempty"`
	AnchoredAt  string `json:"anchored_at,omitempty"` // the root's block timestamp, when read from the chain
	AnchoredBy  string `json:"anchored_by,omitempty"` // the anchoring (owner) address
	TxHash      string `json:"tx_hash,omitempty"`
	BlockNumber uint64 `json:"block_number,omitempty"`
	// Packet is the verification packet (SPEC §11), once the version has a
	// root.
	Packet *Packet `json:"packet,omitempty"`
}

// Contradicted reports whether the records or the chain contradict this
// version (mismatch or missing): a failure, not merely "not yet".
func (c VersionCheck) Contradicted() bool {
	return c.Status == StatusMismatch || c.Status == StatusMissing || c.Status == StatusConflict
}

// onChain reports whether the version is in an anchored root.
func (c VersionCheck) onChain() bool {
	return c.Match && (c.Status == StatusIncluded || c.Status == StatusFinal)
}

// Report is the answer of GET /v1/verify/{name} and (with one version) GET
// /v1/project/{name}/state/anchor, where Packet is that version's packet.
// JSON field names are part of the REST API.
type Report struct {
	Project string `json:"project"`
	// ProjectID is the keyed hash the chain knows the project by; empty
	// when this instance cannot name the project on chain (a satellite
	// before home recorded an anchoring of it).
	ProjectID string `json:"project_id"`
	// Chain is nil when the versions were not checked against a chain.
	Chain    *ChainDoc      `json:"chain"`
	Versions []VersionCheck `json:"versions"`
	// Verified: every version is in an anchored root, with a matching hash
	// and proof.
	Verified bool   `json:"verified"`
	HowTo    string `json:"how_to_verify"`
	// Packet: GET /v1/project/{name}/state/anchor's version's packet.
	Packet *Packet `json:"packet,omitempty"`
}

// ChainDoc names the chain and contract a Report was checked against.
type ChainDoc struct {
	Kind     string `json:"kind"`
	ChainID  uint64 `json:"chain_id"`
	Contract string `json:"contract"`
}

// HowToVerify is Report.HowTo: how anyone checks a report without trusting
// this instance.
const HowToVerify = "Take a version's packet: check with OpenZeppelin's StandardMerkleTree.verify(root, " +
	"[\"bytes32\",\"uint64\",\"bytes32\"], [project_id, version, state_hash], proof), then call getRoot(root) on the " +
	"ProjectStateAnchor at contract on chain chain_id (any JSON-RPC endpoint; rpc_url is public): rootId 0 means not " +
	"anchored. owner() must be anchoring_address, which root_public_key (the crow id's key) signed in address_signature. " +
	"docs/VERIFY.md has the script and the cast lines. To check state_hash itself, fetch the state and recompute " +
	"SHA3-256(\"CM_PROJECT_STATE_V2\" ‖ RFC 8785 canonical JSON of its \"state\" object)."

// Verifier checks state versions against home's replicated records (each
// version's root and proof) and, when it has a Chain, the chain (the root is
// anchored). A Verifier without a Chain reports a version whose record and
// proof check out as "unverified".
type Verifier struct {
	// DB holds home's anchors records (replicated to every instance).
	DB *store.DB
	// Chain reads roots (nil: this instance reads no chain).
	Chain ChainReader
	// ProjectID is the keyed project id the chain knows a project by; ok
	// is false when this instance cannot name the project on chain (yet).
	// SeedProjectID on home, RecordsProjectID elsewhere; nil knows none.
	ProjectID func(project string) (id [32]byte, ok bool)
	// Versions holds the state versions.
	Versions Versions
}

// VerifyProject checks every version of project held here (versions not
// replicated here yet are left out); Verified is true if every one is in an
// anchored root with a matching hash. It returns Latest's error for a
// project with no state (wrapping projects.ErrNoState or
// projects.ErrInvalid), and ErrChainUnreadable if the chain could not be
// read.
func (v Verifier) VerifyProject(ctx context.Context, project string) (Report, error) {
	latest, err := v.Versions.Latest(project)
	if err != nil {
		return Report{}, err
	}
	out := v.report(project)
	out.Verified = true
	for n := uint64(1); n <= latest.Version; n++ {
		ver, err := v.Versions.Version(project, n)
		if errors.Is(err, projects.ErrNoState) {
			continue // not replicated here yet
		} else if err != nil {
			return Report{}, err
		}
		c, err := v.check(ctx, project, ver)
		if err != nil {
			return Report{}, err
		}
		out.Verified = out.Verified && c.onChain() && v.Chain != nil
		out.Versions = append(out.Versions, c)
	}
	return out, nil
}

// VerifyVersion checks one version of project (0: the newest) and sets
// Report.Packet. Errors as VerifyProject's; a version not held here wraps
// projects.ErrNoState.
func (v Verifier) VerifyVersion(ctx context.Context, project string, version uint64) (Report, error) {
	ver, err := v.Versions.Latest(project)
	if err == nil && version != 0 {
		ver, err = v.Versions.Version(project, version)
	}
	if err != nil {
		return Report{}, err
	}
	out := v.report(project)
	c, err := v.check(ctx, project, ver)
	if err != nil {
		return Report{}, err
	}
	out.Versions = append(out.Versions, c)
	out.Verified = c.onChain() && v.Chain != nil
	out.Packet = c.Packet
	return out, nil
}

// report is the Report of project with no version checked yet.
func (v Verifier) report(project string) Report {
	out := Report{Project: project, Versions: []VersionCheck{}, HowTo: HowToVerify}
	if v.ProjectID != nil {
		if pid, ok := v.ProjectID(project); ok && pid != ([32]byte{}) {
			out.ProjectID = HashHex(pid)
		}
	}
	if v.Chain != nil {
		info := v.Chain.Info()
		out.Chain = &ChainDoc{Kind: info.Kind, ChainID: info.ChainID, Contract: info.Contract}
	}
	return out
}

// check verifies one version: home's record (root, proof) against the state
// held here, then, if this instance reads a chain, the root on chain.
func (v Verifier) check(ctx context.Context, project string, ver *state.Version) (VersionCheck, error) {
	c := VersionCheck{Version: ver.Version, StateHash: ver.StateHash, Status: StatusPending}
	if !ver.GeneratedAt.IsZero() {
		c.GeneratedAt = ver.GeneratedAt.UTC().Format(time.RFC3339)
	}
	if v.DB == nil {
		return c, nil
	}
	rec, ok, err := StateRecord(v.DB, project, ver.Version)
	if err != nil {
		return c, fmt.Errorf("reading the anchor record of %s version %d: %w", project, ver.Version, err)
	}
	if !ok || rec.Root == "" {
		return c, nil // not anchored yet (or only before roots: home anchors it again)
	}
	p, _, err := PacketOf(v.DB, rec)
	if err != nil {
		return c, fmt.Errorf("reading the anchor records of %s version %d: %w", project, ver.Version, err)
	}
	c.Packet = &p
	c.Status, c.Root, c.RootID, c.TxHash, c.BlockNumber, c.AnchoredBy = p.Status, p.Root, p.RootID, p.TxHash, p.BlockNumber, p.AnchoringAddress
	local := p
	local.StateHash = ver.StateHash
	c.Match = rec.StateHash == ver.StateHash && checkProof(local) == nil
	if !c.Match {
		c.Status = StatusMismatch
		return c, nil
	}
	if c.Status == StatusPending {
		return c, nil // dropped by a reorg: being sent again
	}
	if v.Chain == nil {
		c.Status = StatusUnverified
		return c, nil
	}
	root, _ := state.ParseHash(p.Root)
	info := v.Chain.Info()
	if info.ChainID != rec.ChainID || !strings.EqualFold(info.Contract, rec.Contract) {
		c.Status = StatusUnverified // anchored on another chain or contract than the one read here
		return c, nil
	}
	ri, found, err := v.Chain.GetRoot(ctx, root)
	if err != nil {
		return c, fmt.Errorf("%w: %w", ErrChainUnreadable, err)
	}
	if !found {
		c.Status = StatusMissing
		return c, nil
	}
	c.RootID, c.AnchoredAt = ri.ID, ri.AnchoredAt.UTC().Format("2006-01-02T15:04:05Z")
	return c, nil
}

// checkProof is CheckPacket's proof part.
func checkProof(p Packet) error {
	hs, err := parseHashes(append([]string{p.ProjectID, p.StateHash, p.Root}, p.Proof...))
	if err != nil {
		return err
	}
	if !merkle.Verify(hs[2], merkle.StateLeaf(hs[0], p.Version, hs[1]), hs[3:]) {
		return ErrProofMismatch
	}
	return nil
}
