package anchor

import (
	"context"
	"crypto/sha3"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/crow-sync/crow/anchor/merkle"
	"github.com/crow-sync/crow/identity"
	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/state"
	"github.com/crow-sync/crow/store"
)

// Verdicts of a memory proof (MemoryProof.Status), besides StatusPending
// (not anchored yet) and StatusMismatch (MemoryProof.Mismatch names the
// parts), and StatusUnverified (this instance reads no chain or holds no
// seed: home's replicated record is shown, nothing decrypted).
const (
	// StatusVerified: the event record recomputes to the event hash, the
	// chain holds the memory's anchor, its ciphertext decrypts, and the
	// plaintext hashes to the content hash.
	StatusVerified = "verified"
	// StatusContentForgotten: the memory's data key was shredded: its
	// ciphertext is on chain but decrypts with nothing, the seed included.
	StatusContentForgotten = "content_forgotten"
)

// Parts a memory proof may find not matching (MemoryProof.Mismatch).
const (
	PartEventHash    = "event_hash"    // the event record does not recompute to the recorded event hash
	PartContentHash  = "content_hash"  // the content held here does not hash to its content hash
	PartAnchorRecord = "anchor_record" // home's anchor record names another number or event hash
	PartChain        = "chain"         // the record says anchored, the chain has no such event
	PartCiphertext   = "ciphertext"    // the on-chain ciphertext decrypts with no key held here
	PartDataKey      = "data_key"      // the record says format 2 and no data key is held (nor shredded)
	PartContent      = "content"       // the decrypted content does not hash to the content hash
	PartPlainLength  = "plain_length"  // the decrypted length is not the plainLength on chain
)

// Keys a proof decrypted with (ContentStep.Key).
const (
	KeyUsedData     = "data_key" // format 2, the memory's data key
	KeyUsedSeed     = "seed_key" // format 1, the seed's memory key
	KeyUsedShredded = "shredded" // none: the data key was destroyed
	KeyUsedNone     = "none"     // no key here opens it
)

// MemoryChain reads memory anchors: the part of Chain the Prover uses.
type MemoryChain interface {
	MemoryReader
	Info() ChainInfo
}

// Prover builds the proof of a numbered memory (GET /v1/memory/{n}/proof).
// What it can show depends on what this instance holds: home has the
// chain and the seed and proves every step; an instance without a chain
// or without the seed shows home's replicated anchor record and says
// where to decrypt.
type Prover struct {
	// DB holds home's anchors records (replicated everywhere) and, on home,
	// the data keys.
	DB *store.DB
	// Versions gives the numbered versions.
	Versions VersionSource
	// Chain reads the memory anchors (nil: this instance reads no chain).
	Chain MemoryChain
	// Seed unwraps the data keys and is the format-1 key (nil: no seed
	// here, nothing is decrypted).
	Seed *identity.Seed
}

// MemoryProof is the proof of one numbered memory, step by step. JSON
// field names are part of the REST API.
type MemoryProof struct {
	Number   uint64 `json:"number"`
	MemoryID string `json:"memory_id"`
	// Status: verified, content_forgotten, pending, mismatch or
	// unverified (see the Status constants).
	Status string `json:"status"`
	// Mismatch names every part that does not match (the Part constants).
	Mismatch []string     `json:"mismatch,omitempty"`
	Event    EventStep    `json:"event"`
	Anchor   *AnchorStep  `json:"anchor"`  // nil: not anchored yet
	Onchain  *OnchainStep `json:"onchain"` // nil: the chain was not read here
	Content  *ContentStep `json:"content"` // nil: nothing decrypted here
	Notes    []string     `json:"notes,omitempty"`
	HowTo    string       `json:"how_to_verify"`
}

// EventStep is how the event hash recomputes.
type EventStep struct {
	Domain    string `json:"domain"`
	Record    string `json:"record"` // the exact bytes hashed after the domain (RFC 8785 JSON)
	Algorithm string `json:"algorithm"`
	// Recomputed is empty when the record cannot be rebuilt here (the
	// memory is deleted, or forgotten without its fields).
	Recomputed string `json:"recomputed_hash"`
	EventHash  string `json:"event_hash"` // as home recorded it when numbering
	Match      bool   `json:"match"`
	// ContentHash is the version's; ContentHashMatch is whether the content
	// held here hashes to it (false when no content is held).
	ContentHash      string `json:"content_hash"`
	ContentHashMatch bool   `json:"content_hash_match"`
}

// AnchorStep is home's anchor record of the memory.
type AnchorStep struct {
	Status      string `json:"status"`
	TxHash      string `json:"tx_hash"`
	BlockNumber uint64 `json:"block_number"`
	ChainID     uint64 `json:"chain_id"`
	Contract    string `json:"contract"`
	AnchoredAt  string `json:"anchored_at,omitempty"`
	// Encryption: "data-key-v2" (format 2) or "seed-key-v1" (format 1).
	Encryption string `json:"encryption"`
	// Root commits the event hash (leaf types ["bytes32"]); Proof leads
	// from the leaf to it; RootID is its id on chain (getRoot).
	Root   string   `json:"root"`
	Proof  []string `json:"proof"`
	RootID uint64   `json:"root_id,omitempty"`
}

// OnchainStep is the MemoryAnchored event read back from the chain.
type OnchainStep struct {
	ChainID     uint64 `json:"chain_id"`
	Contract    string `json:"contract"`
	Found       bool   `json:"found"`
	Events      int    `json:"events"` // how many events carry this event hash
	TxHash      string `json:"tx_hash,omitempty"`
	BlockNumber uint64 `json:"block_number,omitempty"`
	Ciphertext  string `json:"ciphertext,omitempty"` // 0x-hex encryptedContent
	Format      int    `json:"format,omitempty"`     // 1 or 2, as decrypted (0: unknown)
	Category    string `json:"category,omitempty"`
	Importance  uint8  `json:"importance,omitempty"`
	PlainLength uint32 `json:"plain_length,omitempty"`
}

// ContentStep is the ciphertext decrypted and compared.
type ContentStep struct {
	Key       string `json:"key"` // the KeyUsed constants
	Decrypted bool   `json:"decrypted"`
	Content   string `json:"decrypted_content,omitempty"`
	Hash      string `json:"decrypted_content_hash,omitempty"` // hex SHA-256
	Match     bool   `json:"match"`                            // Hash equals event.content_hash
	// SeedKeyRefused (content_forgotten): the ciphertext does not decrypt
	// with the seed's memory key either.
	SeedKeyRefused bool `json:"seed_key_refused,omitempty"`
}

// HowToProve is MemoryProof.HowTo.
const HowToProve = "1. event: SHA3-256(event.domain ‖ event.record) must equal event.event_hash; SHA-256 of the memory's " +
	"content must equal event.content_hash (the record's content_hash). 2. chain: the receipt of anchor.tx_hash on " +
	"chain anchor.chain_id has a log of anchor.contract with topics [MemoryAnchored(bytes32,bytes,string,uint8,uint32), " +
	"event_hash] whose encryptedContent is onchain.ciphertext (eth_getLogs with that topic finds it too). " +
	"3. content: format 2 is 0x02 ‖ 24-byte nonce ‖ XChaCha20-Poly1305 under the memory's data key (held only by home, " +
	"destroyed when the memory is forgotten) with the event hash as associated data; format 1 is nonce ‖ the same " +
	"under the seed's memory key. The plaintext's SHA-256 must equal event.content_hash."

// MemoryProof proves memory number n. Errors: ErrUnknownNumber (wrapped)
// for a number no memory has here; ErrChainUnreadable if the chain could
// not be read; store errors. Every verdict, mismatches included, is a
// MemoryProof, not an error.
func (p Prover) MemoryProof(ctx context.Context, n uint64) (MemoryProof, error) {
	v, err := p.Versions.Version(n)
	if err != nil {
		return MemoryProof{}, err
	}
	out := MemoryProof{Number: n, MemoryID: v.MemoryID, HowTo: HowToProve}
	out.Event = eventStep(v, &out)
	var eh [32]byte
	if h, err := state.ParseHash(v.EventHash); err == nil {
		eh = h
	}
	rec, ok, err := MemoryRecord(p.DB, n)
	if err == nil && !ok {
		// Records written before memories had versions are by memory id.
		var old Record
		if old, ok, err = ReadRecord(p.DB, MemoryRecordID(v.MemoryID)); ok && old.Number == n {
			rec = old
		} else {
			ok = false
		}
	}
	if err != nil {
		return MemoryProof{}, err
	}
	status := StatusPending
	var rr RootRecord
	if ok && rec.Root != "" {
		if status, rr, err = StatusOf(p.DB, rec); err != nil {
			return MemoryProof{}, err
		}
	}
	if !IsAnchored(status) {
		out.Notes = append(out.Notes, "not anchored yet: home anchors numbered memories within seconds (and only memories it holds the content of)")
		return out.finish(StatusPending), nil
	}
	enc := rec.Encryption
	if enc == "" {
		enc = "seed-key-v1"
	}
	out.Anchor = &AnchorStep{Status: status, TxHash: rec.TxHash, BlockNumber: rec.Block, ChainID: rec.ChainID,
		Contract: rec.Contract, AnchoredAt: rec.At, Encryption: enc, Root: rec.Root, Proof: rec.Proof, RootID: rec.RootID}
	if out.Anchor.Proof == nil {
		out.Anchor.Proof = []string{} // a root of one leaf (Record.Proof is omitempty): [], as in packets
	}
	if rr.TxHash != "" {
		out.Anchor.TxHash, out.Anchor.BlockNumber, out.Anchor.RootID = rr.TxHash, rr.Block, rr.RootID
		rec.TxHash, rec.Block = rr.TxHash, rr.Block
	}
	if hs, err := parseHashes(append([]string{rec.Root}, rec.Proof...)); err != nil || !merkle.Verify(hs[0], merkle.HashLeaf(eh), hs[1:]) {
		out.mismatch(PartAnchorRecord, "the anchor record's Merkle proof does not lead from the event hash to its root")
	}
	if rec.Number != n || !strings.EqualFold(rec.EventHash, v.EventHash) {
		out.mismatch(PartAnchorRecord, fmt.Sprintf("the anchor record names #%d %s", rec.Number, rec.EventHash))
	}
	if p.Chain == nil {
		out.Notes = append(out.Notes, "this instance reads no chain: the anchor is home's replicated record; "+
			"read the chain and decrypt on home (crow memory proof N there)")
		return out.finish(StatusUnverified), nil
	}
	ev, ok, err := p.onchain(ctx, eh, rec, &out)
	if err != nil {
		return MemoryProof{}, err
	}
	if !ok {
		out.mismatch(PartChain, "the chain has no MemoryAnchored event for this event hash")
		return out.finish(""), nil
	}
	if p.Seed == nil {
		out.Notes = append(out.Notes, "this instance holds no seed and no data key: decrypt on home (crow memory proof N there)")
		return out.finish(StatusUnverified), nil
	}
	if err := p.decrypt(v, eh, rec, ev, &out); err != nil {
		return MemoryProof{}, err
	}
	if out.Content != nil && out.Content.Key == KeyUsedShredded {
		return out.finish(StatusContentForgotten), nil
	}
	return out.finish(StatusVerified), nil
}

// eventStep recomputes v's event hash.
func eventStep(v Version, out *MemoryProof) EventStep {
	s := EventStep{Domain: memory.EventHashDomain, Algorithm: "SHA3-256(domain ‖ record)", EventHash: v.EventHash, ContentHash: v.ContentHash}
	if v.Deleted || (v.Forgotten && v.ContentHash == "") {
		out.Notes = append(out.Notes, "the memory's fields are gone here (deleted or forgotten): its event record cannot be rebuilt")
		return s
	}
	rec := memory.EventRecord(v.Number, v.Project, v.ContentHash, v.CreatedAt, v.Origin)
	sum := sha3.Sum256(append([]byte(memory.EventHashDomain), rec...))
	s.Record, s.Recomputed = string(rec), HashHex(sum)
	s.Match = strings.EqualFold(s.Recomputed, v.EventHash)
	if !s.Match {
		out.mismatch(PartEventHash, "the event record recomputes to "+s.Recomputed+", not the recorded "+v.EventHash)
	}
	if !v.Forgotten {
		s.ContentHashMatch = memory.ContentHash(v.Content) == v.ContentHash
		if !s.ContentHashMatch {
			out.mismatch(PartContentHash, "the content held here does not hash to its content_hash")
		}
	}
	return s
}

// onchain reads the memory's event, preferring the one in the recorded
// transaction (a retried batch may have logged it twice).
func (p Prover) onchain(ctx context.Context, eh [32]byte, rec Record, out *MemoryProof) (MemoryEvent, bool, error) {
	info := p.Chain.Info()
	step := &OnchainStep{ChainID: info.ChainID, Contract: info.Contract}
	out.Onchain = step
	if info.ChainID != rec.ChainID || !strings.EqualFold(info.Contract, rec.Contract) {
		out.Notes = append(out.Notes, fmt.Sprintf("home anchored on chain %d contract %s; this instance reads chain %d contract %s",
			rec.ChainID, rec.Contract, info.ChainID, info.Contract))
	}
	evs, err := p.Chain.MemoryEvents(ctx, eh, rec.Block)
	if err != nil {
		return MemoryEvent{}, false, fmt.Errorf("%w: %w", ErrChainUnreadable, err)
	}
	step.Events = len(evs)
	if len(evs) == 0 {
		return MemoryEvent{}, false, nil
	}
	ev := evs[0]
	for _, e := range evs {
		if strings.EqualFold(e.TxHash, rec.TxHash) {
			ev = e
			break
		}
	}
	step.Found, step.TxHash, step.BlockNumber = true, ev.TxHash, ev.Block
	step.Ciphertext = "0x" + hex.EncodeToString(ev.EncryptedContent)
	step.Category, step.Importance, step.PlainLength = ev.Category, ev.Importance, ev.PlainLength
	return ev, true, nil
}

// decrypt opens the ciphertext with the key held here and compares.
func (p Prover) decrypt(v Version, eh [32]byte, rec Record, ev MemoryEvent, out *MemoryProof) error {
	c := &ContentStep{Key: KeyUsedNone}
	out.Content = c
	seedKey := p.Seed.MemoryEncryptionKey()
	key, st, err := NewDataKeys(p.DB, *p.Seed).Get(v.MemoryID)
	if err != nil && !errors.Is(err, ErrUnwrap) {
		return err
	}
	var pt []byte
	switch {
	case st == KeyShredded:
		c.Key = KeyUsedShredded
		if _, err := DecryptMemory(seedKey, eh, ev.EncryptedContent); err == nil {
			out.Notes = append(out.Notes, "forgotten, but anchored in format 1 under the seed key before data keys existed: "+
				"that ciphertext still decrypts with the seed")
		} else {
			c.SeedKeyRefused = true
		}
		return nil
	case st == KeyPresent && err == nil:
		if pt, err = OpenMemory(key, eh, ev.EncryptedContent); err == nil {
			c.Key, out.Onchain.Format = KeyUsedData, 2
		}
	case err != nil:
		out.Notes = append(out.Notes, err.Error())
	}
	if c.Key == KeyUsedNone {
		if pt, err = DecryptMemory(seedKey, eh, ev.EncryptedContent); err == nil {
			c.Key, out.Onchain.Format = KeyUsedSeed, 1
		}
	}
	if c.Key == KeyUsedNone {
		if rec.Encryption == EncryptionDataKey && st == KeyNone {
			out.mismatch(PartDataKey, "the record says the content is sealed under a data key, and none is held here")
		} else {
			out.mismatch(PartCiphertext, "the on-chain ciphertext decrypts with no key held here")
		}
		return nil
	}
	c.Decrypted, c.Content, c.Hash = true, string(pt), memory.ContentHash(string(pt))
	c.Match = c.Hash == v.ContentHash
	if !c.Match {
		out.mismatch(PartContent, "the decrypted content hashes to "+c.Hash+", not the content_hash "+v.ContentHash)
	}
	if uint32(len(pt)) != ev.PlainLength {
		out.mismatch(PartPlainLength, fmt.Sprintf("decrypted %d bytes, the chain says %d", len(pt), ev.PlainLength))
	}
	return nil
}

func (out *MemoryProof) mismatch(part, why string) {
	out.Mismatch = append(out.Mismatch, part)
	out.Notes = append(out.Notes, part+": "+why)
}

// finish sets the status: mismatch if any part did not match, else st.
func (out MemoryProof) finish(st string) MemoryProof {
	if len(out.Mismatch) > 0 {
		st = StatusMismatch
	}
	out.Status = st
	return out
}
