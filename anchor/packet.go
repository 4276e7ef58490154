package anchor

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/crow-sync/crow/anchor/merkle"
	"github.com/crow-sync/crow/identity"
	"github.com/crow-sync/crow/store"
)

// ChainRecord is the anchors row "chain/<chain id>/<contract>": what a
// verifier needs about the chain besides a version's proof, written by home
// (and replicated, so any instance serves packets). Its binding is the root
// key's signature over BindingMessage(CrowID, AnchoringAddress): the
// anchoring account speaks for this crow id.
type ChainRecord struct {
	Kind             string `json:"kind"` // RecordChain
	ChainKind        string `json:"chain_kind"`
	ChainID          uint64 `json:"chain_id"`
	Contract         string `json:"contract"`
	RPCURL           string `json:"rpc_url,omitempty"`
	AnchoringAddress string `json:"anchoring_address"`
	CrowID           string `json:"crow_id"`
	RootPublicKey    string `json:"root_public_key"`   // 0x-hex Ed25519
	AddressSignature string `json:"address_signature"` // 0x-hex Ed25519 signature
}

// ChainRecordID is the anchors row id of a chain's record.
func ChainRecordID(chainID uint64, contract string) string {
	return fmt.Sprintf("chain/%d/%s", chainID, strings.ToLower(contract))
}

// BindingMessage is what the root key signs to bind an anchoring address to
// a crow id (frozen: verifiers rebuild it byte for byte):
//
//	"crow-anchoring-address-v1\n" + crowID + "\n" + lowercase 0x-address
func BindingMessage(crowID, address string) []byte {
	return []byte("crow-anchoring-address-v1\n" + crowID + "\n" + strings.ToLower(address))
}

// SignBinding is home's ChainRecord binding fields for address.
func SignBinding(seed identity.Seed, address string) (crowID, rootPub, sig string) {
	pub := seed.RootPublicKey()
	s := ed25519.Sign(seed.RootKey(), BindingMessage(seed.CrowID(), address))
	return seed.CrowID(), "0x" + hex.EncodeToString(pub), "0x" + hex.EncodeToString(s)
}

// ErrBadBinding is returned by CheckBinding.
var ErrBadBinding = errors.New("anchor: the anchoring address is not bound to the crow id")

// CheckBinding verifies that rootPub derives crowID and signed the binding of
// address.
func CheckBinding(crowID, rootPub, address, sig string) error {
	pub, err := hex.DecodeString(strings.TrimPrefix(rootPub, "0x"))
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("%w: root_public_key is not a 32-byte hex key", ErrBadBinding)
	}
	if got := identity.CrowIDFromPublicKey(pub); got != crowID {
		return fmt.Errorf("%w: root_public_key derives crow id %s, not %s", ErrBadBinding, got, crowID)
	}
	s, err := hex.DecodeString(strings.TrimPrefix(sig, "0x"))
	if err != nil || !ed25519.Verify(pub, BindingMessage(crowID, address), s) {
		return fmt.Errorf("%w: the signature does not verify", ErrBadBinding)
	}
	return nil
}

// chainRecordLocked writes the chain record when it is missing or
// different (a new RPC URL).
func (w *Worker) chainRecordLocked(ctx context.Context) error {
	info := w.cfg.Chain.Info()
	id := ChainRecordID(info.ChainID, info.Contract)
	if w.done[id] {
		return nil // written (or checked) once since start
	}
	crow, pub, sig := SignBinding(w.cfg.Seed, info.Account)
	want := ChainRecord{Kind: RecordChain, ChainKind: info.Kind, ChainID: info.ChainID, Contract: info.Contract, RPCURL: w.cfg.RPCURL,
		AnchoringAddress: info.Account, CrowID: crow, RootPublicKey: pub, AddressSignature: sig}
	if r, err := w.cfg.DB.Get(store.TableAnchors, id); err == nil {
		var have ChainRecord
		if json.Unmarshal(r.Data, &have) == nil && have == want {
			w.done[id] = true
			return nil
		}
	}
	data, _ := json.Marshal(want)
	if _, err := w.cfg.Writer.Write(ctx, store.Mutation{Table: store.TableAnchors, RowID: id, Op: store.OpPut, Data: data}); err != nil {
		return fmt.Errorf("recording the chain: %w", err)
	}
	w.done[id] = true
	return nil
}

// Packet is the verification packet of one state version (SPEC §11): with
// it and any JSON-RPC endpoint of the chain, anyone verifies the version
// with standard tools. JSON field names are fixed by the SPEC.
type Packet struct {
	ChainID          uint64   `json:"chain_id"`
	Contract         string   `json:"contract"`
	ProjectID        string   `json:"project_id"`
	Version          uint64   `json:"version"`
	StateHash        string   `json:"state_hash"`
	LeafTypes        []string `json:"leaf_types"`
	Root             string   `json:"root"`
	Proof            []string `json:"proof"`
	RootID           uint64   `json:"root_id,omitempty"`
	TxHash           string   `json:"tx_hash"`
	BlockNumber      uint64   `json:"block_number"`
	Status           string   `json:"status"`
	AnchoringAddress string   `json:"anchoring_address"`
	CrowID           string   `json:"crow_id"`
	RootPublicKey    string   `json:"root_public_key"`
	AddressSignature string   `json:"address_signature"`
	RPCURL           string   `json:"rpc_url,omitempty"`
	// Checkpoint, when checkpoints are on and one covers Root: the proof
	// that Root is committed on the external chain too.
	Checkpoint *CheckpointProof `json:"checkpoint,omitempty"`
}

// CheckpointProof proves a root is a leaf (merkle.HashTypes) of a
// checkpoint root anchored on an external chain.
type CheckpointProof struct {
	ChainID     uint64   `json:"chain_id"`
	Contract    string   `json:"contract"`
	Root        string   `json:"root"`
	Proof       []string `json:"proof"`
	TxHash      string   `json:"tx_hash"`
	BlockNumber uint64   `json:"block_number"`
	Status      string   `json:"status"`
	RPCURL      string   `json:"rpc_url,omitempty"`
}

// Records lookups (the anchors table; records replicate to every instance).

// ReadRootRecord reads a root's record (ok false: none).
func ReadRootRecord(db *store.DB, root string) (RootRecord, bool, error) {
	var rr RootRecord
	ok, err := readJSON(db, "root/"+root, &rr)
	return rr, ok, err
}

// ReadChainRecord reads a chain's record (ok false: none).
func ReadChainRecord(db *store.DB, chainID uint64, contract string) (ChainRecord, bool, error) {
	var cr ChainRecord
	ok, err := readJSON(db, ChainRecordID(chainID, contract), &cr)
	return cr, ok, err
}

func readJSON(db *store.DB, id string, v any) (bool, error) {
	r, err := db.Get(store.TableAnchors, id)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if r.Deleted {
		return false, nil
	}
	if err := json.Unmarshal(r.Data, v); err != nil {
		return false, fmt.Errorf("decoding anchor record %s: %w", id, err)
	}
	return true, nil
}

// StatusOf is the current status of a version record: its root's (pending
// while its root has no record or was dropped).
func StatusOf(db *store.DB, rec Record) (string, RootRecord, error) {
	if rec.Root == "" {
		return rec.Status, RootRecord{}, nil // a record from before roots
	}
	rr, ok, err := ReadRootRecord(db, rec.Root)
	if err != nil || !ok {
		return StatusPending, rr, err
	}
	return rr.Status, rr, nil
}

// PacketOf builds the packet of a state version from its record (ok false:
// the version has no root yet). The transaction fields are the root's
// current ones.
func PacketOf(db *store.DB, rec Record) (Packet, bool, error) {
	if rec.Root == "" || rec.Kind != RecordState {
		return Packet{}, false, nil
	}
	status, rr, err := StatusOf(db, rec)
	if err != nil {
		return Packet{}, false, err
	}
	p := Packet{ChainID: rec.ChainID, Contract: rec.Contract, ProjectID: rec.ProjectID, Version: rec.Version, StateHash: rec.StateHash,
		LeafTypes: merkle.StateTypes, Root: rec.Root, Proof: rec.Proof, RootID: rec.RootID, TxHash: rec.TxHash, BlockNumber: rec.Block, Status: status}
	if p.Proof == nil {
		p.Proof = []string{}
	}
	if rr.TxHash != "" {
		p.TxHash, p.BlockNumber, p.RootID = rr.TxHash, rr.Block, rr.RootID
	}
	cr, ok, err := ReadChainRecord(db, rec.ChainID, rec.Contract)
	if err != nil {
		return Packet{}, false, err
	}
	if ok {
		p.AnchoringAddress, p.CrowID, p.RootPublicKey, p.AddressSignature, p.RPCURL = cr.AnchoringAddress, cr.CrowID, cr.RootPublicKey, cr.AddressSignature, cr.RPCURL
	}
	cp, ok, err := checkpointOf(db, rec.Root)
	if err != nil {
		return Packet{}, false, err
	}
	if ok {
		p.Checkpoint = &cp
	}
	return p, true, nil
}

// parseHashes decodes 0x-hex hashes.
func parseHashes(ss []string) ([]merkle.Hash, error) {
	out := make([]merkle.Hash, len(ss))
	for i, s := range ss {
		b, err := hex.DecodeString(strings.TrimPrefix(s, "0x"))
		if err != nil || len(b) != 32 {
			return nil, fmt.Errorf("%q is not a 32-byte hex hash", s)
		}
		out[i] = merkle.Hash(b)
	}
	return out, nil
}

// CheckPacket verifies everything in p that needs no chain: the proof leads
// from the leaf of (project id, version, state hash) to root, and the root
// key binds the anchoring address to the crow id.
func CheckPacket(p Packet) error {
	if err := checkProof(p); err != nil {
		return fmt.Errorf("checking the packet: the proof does not lead from (project_id, version, state_hash) to root: %w", err)
	}
	if err := CheckBinding(p.CrowID, p.RootPublicKey, p.AnchoringAddress, p.AddressSignature); err != nil {
		return err
	}
	if p.Checkpoint != nil {
		cp, err := parseHashes(append([]string{p.Checkpoint.Root}, p.Checkpoint.Proof...))
		if err != nil {
			return fmt.Errorf("checking the packet: checkpoint: %w", err)
		}
		root, _ := parseHashes([]string{p.Root})
		if !merkle.Verify(cp[0], merkle.HashLeaf(root[0]), cp[1:]) {
			return fmt.Errorf("%w: the checkpoint proof does not lead from root to the checkpoint root", ErrProofMismatch)
		}
	}
	return nil
}

// ErrProofMismatch is wrapped by CheckPacket when a Merkle proof fails.
var ErrProofMismatch = errors.New("anchor: Merkle proof mismatch")

// checkpointOf finds the checkpoint that covers root, if any: the index
// row names it, and root's proof is taken from the tree rebuilt from the
// checkpoint's roots.
func checkpointOf(db *store.DB, root string) (CheckpointProof, bool, error) {
	var ref checkpointRef
	ok, err := readJSON(db, checkpointRefID(root), &ref)
	if err != nil || !ok {
		return CheckpointProof{}, false, err
	}
	cr, ok, err := ReadCheckpointRecord(db, ref.Checkpoint)
	if err != nil || !ok {
		return CheckpointProof{}, false, err // the index row replicated before its record: none yet
	}
	proof, err := cr.ProofOf(root)
	if err != nil {
		return CheckpointProof{}, false, err
	}
	return CheckpointProof{ChainID: cr.ChainID, Contract: cr.Contract, Root: cr.Root, Proof: hexes(proof), TxHash: cr.TxHash,
		BlockNumber: cr.Block, Status: cr.Status, RPCURL: cr.RPCURL}, true, nil
}
