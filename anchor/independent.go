package anchor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi/bind"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/ethclient"

	"github.com/crow-sync/crow/anchor/contract"
	"github.com/crow-sync/crow/anchor/merkle"
)

// Verdicts of VerifyPacket.
const (
	VerdictVerified = "verified" // every check passed: the root is on chain
	VerdictPending  = "pending"  // the packet says pending (not on chain yet)
	VerdictMismatch = "mismatch" // a check failed: proof, binding, chain, owner, transaction
	VerdictMissing  = "missing"  // the chain has no such root
)

// errRootNotAnchored: getRoot has no such root (verdict missing).
var errRootNotAnchored = errors.New("the root is not anchored on this chain")

// Check is one step of VerifyPacket.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// PacketVerdict is VerifyPacket's answer. JSON field names are part of
// `crow verify --json`.
type PacketVerdict struct {
	Version    uint64  `json:"version"`
	StateHash  string  `json:"state_hash"`
	Root       string  `json:"root"`
	Verdict    string  `json:"verdict"`
	RootID     uint64  `json:"root_id,omitempty"`
	AnchoredAt string  `json:"anchored_at,omitempty"`
	RPCURL     string  `json:"rpc_url"`
	Checks     []Check `json:"checks"`
}

// VerifyPacket reaches a verdict on p from p itself and the chain at rpcURL
// alone — never from a crow gateway's own verdict: the proof leads from
// (project_id, version, state_hash) to root, the root key binds the
// anchoring address to the crow id, the endpoint is chain chain_id, the
// contract is ProjectStateAnchor owned by the anchoring address,
// getRoot(root) has it anchored, and tx_hash's receipt logs RootAnchored
// for it. With checkpointRPC (or the checkpoint's own rpc_url) it checks the
// checkpoint on the external chain too.
func VerifyPacket(ctx context.Context, p Packet, rpcURL, checkpointRPC string) PacketVerdict {
	v := PacketVerdict{Version: p.Version, StateHash: p.StateHash, Root: p.Root, RPCURL: rpcURL, Verdict: VerdictVerified, Checks: []Check{}}
	check := func(name string, err error, ok string) bool {
		c := Check{Name: name, OK: err == nil, Detail: ok}
		if err != nil {
			c.Detail = err.Error()
			switch {
			case v.Verdict != VerdictVerified:
			case errors.Is(err, errRootNotAnchored):
				v.Verdict = VerdictMissing
			default:
				v.Verdict = VerdictMismatch
			}
		}
		v.Checks = append(v.Checks, c)
		return err == nil
	}
	if p.Status == StatusPending || p.Root == "" {
		v.Verdict = VerdictPending
		v.Checks = append(v.Checks, Check{Name: "status", Detail: "the packet says pending: not anchored yet"})
		return v
	}
	check("proof", checkProof(p), "the proof leads from (project_id, version, state_hash) to root")
	check("binding", CheckBinding(p.CrowID, p.RootPublicKey, p.AnchoringAddress, p.AddressSignature),
		"root_public_key derives "+p.CrowID+" and signed anchoring_address")
	if rpcURL == "" {
		check("chain", errors.New("no RPC URL: the packet has no rpc_url; pass --rpc"), "")
		return v
	}
	root, _ := parseHashes([]string{p.Root})
	if len(root) == 0 {
		return v
	}
	ri, ok := verifyOn(ctx, rpcURL, p.ChainID, p.Contract, p.AnchoringAddress, root[0], p.TxHash, p.BlockNumber, check, "")
	if ok {
		v.RootID, v.AnchoredAt = ri.ID, ri.AnchoredAt.Format(time.RFC3339)
	} else if v.Verdict == VerdictVerified {
		v.Verdict = VerdictMissing
	}
	if p.Checkpoint != nil {
		cp := p.Checkpoint
		url := cmp.Or(checkpointRPC, cp.RPCURL)
		hs, err := parseHashes(append([]string{cp.Root}, cp.Proof...))
		if err == nil && !merkleVerifyHash(hs[0], root[0], hs[1:]) {
			err = ErrProofMismatch
		}
		check("checkpoint proof", err, "the checkpoint proof leads from root to the checkpoint root")
		if url == "" {
			check("checkpoint chain", errors.New("no RPC URL for the checkpoint chain: pass --checkpoint-rpc"), "")
		} else if err == nil {
			if _, ok := verifyOn(ctx, url, cp.ChainID, cp.Contract, "", hs[0], cp.TxHash, cp.BlockNumber, check, "checkpoint "); !ok && v.Verdict == VerdictVerified {
				v.Verdict = VerdictMissing
			}
		}
	}
	return v
}

// JudgeOptions is the policy of JudgeVersion (crow verify's flags).
type JudgeOptions struct {
	RPCURL        string // the chain's endpoint; "": the packet's rpc_url
	CheckpointRPC string // the checkpoint chain's; "": the checkpoint's rpc_url
	// MaxPending: a version still pending this long after it was
	// consolidated is a failure (0: never).
	MaxPending time.Duration
	// RequireCheckpoint: a root anchored longer ago than this must be
	// covered by a checkpoint (0: not required; see RequireCheckpoint).
	RequireCheckpoint time.Duration
	Now               time.Time
}

// JudgeVersion reaches a verdict on one version from its packet and the
// chain alone (VerifyPacket), under o's policy. failure is "" when the
// version passes; else it says why (mismatch, missing, or pending past
// o.MaxPending).
func JudgeVersion(ctx context.Context, c VersionCheck, o JudgeOptions) (v PacketVerdict, failure string) {
	if c.Packet == nil {
		v = PacketVerdict{Version: c.Version, StateHash: c.StateHash, Verdict: VerdictPending,
			Checks: []Check{{Name: "status", Detail: "no packet yet: the version is not in an anchored root"}}}
	} else {
		v = VerifyPacket(ctx, *c.Packet, cmp.Or(o.RPCURL, c.Packet.RPCURL), o.CheckpointRPC)
		if o.RequireCheckpoint > 0 && v.Verdict == VerdictVerified {
			at, _ := time.Parse(time.RFC3339, v.AnchoredAt)
			if err := RequireCheckpoint(*c.Packet, at, o.Now, o.RequireCheckpoint); err != nil {
				v.Verdict = VerdictMissing
				v.Checks = append(v.Checks, Check{Name: "checkpoint required", Detail: err.Error()})
			}
		}
	}
	switch v.Verdict {
	case VerdictPending:
		if t, err := time.Parse(time.RFC3339, c.GeneratedAt); err == nil && o.MaxPending > 0 && o.Now.Sub(t) > o.MaxPending {
			return v, fmt.Sprintf("version %d is still pending %s after its consolidation", c.Version, o.MaxPending)
		}
	case VerdictMismatch, VerdictMissing:
		for _, ch := range v.Checks {
			if !ch.OK {
				return v, fmt.Sprintf("version %d: %s (%s: %s)", v.Version, v.Verdict, ch.Name, ch.Detail)
			}
		}
		return v, fmt.Sprintf("version %d: %s", v.Version, v.Verdict)
	}
	return v, ""
}

// verifyOn checks root on the chain at url; owner "" skips the owner check
// (a checkpoint chain's account is another key). It reports the root's
// anchoring, ok false if the chain has none (or could not be read).
func verifyOn(ctx context.Context, url string, chainID uint64, addr, owner string, root [32]byte, txHash string, block uint64,
	check func(string, error, string) bool, prefix string) (RootInfo, bool) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ec, err := ethclient.DialContext(ctx, url)
	if !check(prefix+"rpc", err, "reached "+url) {
		return RootInfo{}, false
	}
	defer ec.Close()
	id, err := ec.ChainID(ctx)
	if err == nil && id.Uint64() != chainID {
		err = fmt.Errorf("the endpoint is chain %d, the packet says %d", id, chainID)
	}
	if !check(prefix+"chain id", err, fmt.Sprintf("the endpoint is chain %d", chainID)) {
		return RootInfo{}, false
	}
	if !common.IsHexAddress(addr) {
		check(prefix+"contract", fmt.Errorf("%q is not an address", addr), "")
		return RootInfo{}, false
	}
	ca := common.HexToAddress(addr)
	code, err := ec.CodeAt(ctx, ca, nil)
	if err == nil && len(code) == 0 {
		err = fmt.Errorf("no contract at %s", ca.Hex())
	}
	if !check(prefix+"contract", err, "code at "+ca.Hex()) {
		return RootInfo{}, false
	}
	c, err := contract.NewProjectStateAnchor(ca, ec)
	if err != nil {
		check(prefix+"contract", err, "")
		return RootInfo{}, false
	}
	opts := &bind.CallOpts{Context: ctx}
	if owner != "" {
		got, err := c.Owner(opts)
		if err == nil && !strings.EqualFold(got.Hex(), owner) {
			err = fmt.Errorf("owner() is %s, the packet's anchoring_address is %s", got.Hex(), owner)
		}
		check(prefix+"owner", err, "owner() is the anchoring address")
	}
	out, err := c.GetRoot(opts, root)
	if err != nil {
		check(prefix+"root", fmt.Errorf("reading getRoot: %w", err), "")
		return RootInfo{}, false
	}
	if out.RootId.Sign() == 0 || !out.RootId.IsUint64() {
		check(prefix+"root", fmt.Errorf("getRoot(%s) is 0: %w", HashHex(root), errRootNotAnchored), "")
		return RootInfo{}, false
	}
	ri := RootInfo{ID: out.RootId.Uint64(), AnchoredAt: time.Unix(int64(out.AnchoredAt), 0).UTC(), Count: out.Count}
	check(prefix+"root", nil, fmt.Sprintf("getRoot: root #%d, anchored at %s, %d leaves", ri.ID, ri.AnchoredAt.Format(time.RFC3339), ri.Count))
	if txHash != "" {
		check(prefix+"transaction", txLogsRoot(ctx, ec, ca, root, txHash, block), "tx "+txHash+" in block "+fmt.Sprint(block)+" logs RootAnchored for the root")
	}
	return ri, true
}

// txLogsRoot checks that txHash's receipt is in block and logs RootAnchored
// for root from the contract at addr.
func txLogsRoot(ctx context.Context, ec *ethclient.Client, addr common.Address, root [32]byte, txHash string, block uint64) error {
	r, err := ec.TransactionReceipt(ctx, common.HexToHash(txHash))
	if err != nil {
		return fmt.Errorf("reading the receipt of %s: %w", txHash, err)
	}
	if r.BlockNumber.Uint64() != block {
		return fmt.Errorf("tx %s is in block %d, the packet says %d", txHash, r.BlockNumber.Uint64(), block)
	}
	ev := contractABI.Events["RootAnchored"].ID
	for _, l := range r.Logs {
		if l.Address == addr && len(l.Topics) == 3 && l.Topics[0] == ev && l.Topics[2] == common.Hash(root) {
			return nil
		}
	}
	return fmt.Errorf("tx %s logs no RootAnchored for root %s", txHash, HashHex(root))
}

// merkleVerifyHash verifies a proof of a bytes32 leaf (merkle.HashLeaf).
func merkleVerifyHash(root, value [32]byte, proof []merkle.Hash) bool {
	return merkle.Verify(root, merkle.HashLeaf(value), proof)
}
