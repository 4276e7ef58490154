package anchor

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crow-sync/crow/identity"
	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/state"
	"github.com/crow-sync/crow/store"
	"github.com/crow-sync/crow/store/storetest"
)

// proofHome is a home instance's parts for proofs: a store, the seed and an
// embedded chain, with memories written as memory and the Numberer write
// them.
type proofHome struct {
	t     *testing.T
	ctx   context.Context
	env   *storetest.Env
	seed  identity.Seed
	chain *Embedded
}

func newProofHome(t *testing.T) *proofHome {
	seed := goldenSeed()
	return &proofHome{t: t, ctx: testCtx(t), env: storetest.Start(t, t.TempDir()), seed: seed,
		chain: openEmbedded(t, t.TempDir(), seed.AnchorKey())}
}

func (h *proofHome) put(table, id string, v any) {
	h.t.Helper()
	data, _ := json.Marshal(v)
	if _, err := h.env.Writer.Write(h.ctx, store.Mutation{Table: table, RowID: id, Op: store.OpPut, Data: data}); err != nil {
		h.t.Fatal(err)
	}
}

// memory writes memory id with content and numbers it n; it returns the
// event hash.
func (h *proofHome) memory(id string, n uint64, content string) string {
	h.t.Helper()
	at := time.Date(2026, 11, 29, 21, 0, 0, 123e6, time.UTC)
	ch := memory.ContentHash(content)
	h.put(store.TableMemories, id, map[string]any{"id": id, "project": "crow", "content": content, "content_hash": ch,
		"category": "decision", "importance": 7, "origin": "inst-test", "created_at": at, "updated_at": at})
	eh := memory.EventHash(n, "crow", ch, at, "inst-test")
	h.put(store.TableMemoryNumbers, id, map[string]any{"number": n, "event_hash": eh})
	h.put(store.TableMemoryVersions, memory.VersionRowID(n), memory.Version{Number: n, MemoryID: id, Project: "crow",
		Content: content, ContentHash: ch, Category: "decision", Importance: 7, CreatedAt: at, Origin: "inst-test", EventHash: eh})
	return eh
}

func (h *proofHome) anchor() {
	h.t.Helper()
	w := NewWorker(WorkerConfig{DB: h.env.DB, Writer: h.env.Writer, Chain: h.chain, Seed: h.seed, Interval: time.Hour})
	if err := w.Round(h.ctx); err != nil {
		h.t.Fatal(err)
	}
}

func (h *proofHome) prover() Prover {
	return Prover{DB: h.env.DB, Versions: MemoryVersions{DB: h.env.DB}, Chain: h.chain, Seed: &h.seed}
}

func (h *proofHome) proof(p Prover, n uint64) MemoryProof {
	h.t.Helper()
	pr, err := p.MemoryProof(h.ctx, n)
	if err != nil {
		h.t.Fatalf("MemoryProof(%d): %v", n, err)
	}
	return pr
}

// The worker seals every memory under its own data key (format 2): the
// chain's ciphertext opens with it and not with the seed's memory key.
func TestWorkerSealsWithDataKeys(t *testing.T) {
	h := newProofHome(t)
	eh := h.memory("m1", 1, "usar badger")
	h.anchor()
	rec, ok, err := ReadRecord(h.env.DB, VersionRecordID(1))
	if err != nil || !ok || rec.Encryption != EncryptionDataKey {
		t.Fatalf("record = %+v %v %v", rec, ok, err)
	}
	hash, _ := state.ParseHash(eh)
	evs, err := h.chain.MemoryEvents(h.ctx, hash, 0)
	if err != nil || len(evs) != 1 {
		t.Fatalf("events = %v %v", evs, err)
	}
	ct := evs[0].EncryptedContent
	key, st, err := NewDataKeys(h.env.DB, h.seed).Get("m1")
	if err != nil || st != KeyPresent {
		t.Fatalf("data key: %v %v", st, err)
	}
	if pt, err := OpenMemory(key, hash, ct); err != nil || string(pt) != "usar badger" {
		t.Fatalf("OpenMemory = %q %v", pt, err)
	}
	if _, err := DecryptMemory(h.seed.MemoryEncryptionKey(), hash, ct); !errors.Is(err, ErrDecrypt) {
		t.Fatalf("the seed's memory key opened a format-2 ciphertext: %v", err)
	}
	// A memory shredded before it is anchored is never anchored.
	h.memory("m2", 2, "olvidar")
	if err := ShredMemoryKey(h.env.DB, "m2"); err != nil {
		t.Fatal(err)
	}
	h.anchor()
	if _, ok, _ := ReadRecord(h.env.DB, VersionRecordID(2)); ok {
		t.Fatal("a shredded memory was anchored")
	}
}

// A proof over the embedded chain: verified; pending before anchoring;
// content_forgotten once the key is shredded (and the seed opens nothing
// either); unknown numbers are ErrUnknownNumber.
func TestMemoryProofEmbedded(t *testing.T) {
	h := newProofHome(t)
	eh := h.memory("m1", 1, "usar consenso Clique PoA")
	p := h.prover()
	if pr := h.proof(p, 1); pr.Status != StatusPending || pr.Anchor != nil || !pr.Event.Match {
		t.Fatalf("before anchoring: %+v", pr)
	}
	h.anchor()
	pr := h.proof(p, 1)
	if pr.Status != StatusVerified || len(pr.Mismatch) != 0 {
		t.Fatalf("proof = %+v", pr)
	}
	if pr.Event.Recomputed != eh || pr.Event.Domain != "CM_MEMORY_EVENT_V1" || pr.Event.Record == "" || !pr.Event.ContentHashMatch {
		t.Fatalf("event step = %+v", pr.Event)
	}
	if pr.Anchor.TxHash == "" || pr.Anchor.Encryption != EncryptionDataKey || pr.Onchain == nil || !pr.Onchain.Found ||
		pr.Onchain.TxHash != pr.Anchor.TxHash || pr.Onchain.Format != 2 || pr.Onchain.PlainLength != 24 {
		t.Fatalf("anchor %+v onchain %+v", pr.Anchor, pr.Onchain)
	}
	if pr.Anchor.Root == "" || pr.Anchor.RootID == 0 || pr.Anchor.Proof == nil || pr.Anchor.Status != StatusFinal {
		t.Fatalf("anchor step's root: %+v", pr.Anchor)
	}
	if c := pr.Content; c == nil || c.Key != KeyUsedData || c.Content != "usar consenso Clique PoA" || !c.Match {
		t.Fatalf("content step = %+v", pr.Content)
	}
	if _, err := p.MemoryProof(h.ctx, 9); !errors.Is(err, ErrUnknownNumber) {
		t.Fatalf("unknown number: %v", err)
	}

	if err := ShredMemoryKey(h.env.DB, "m1"); err != nil {
		t.Fatal(err)
	}
	pr = h.proof(p, 1)
	if pr.Status != StatusContentForgotten || pr.Content == nil || pr.Content.Key != KeyUsedShredded || pr.Content.Decrypted ||
		!pr.Content.SeedKeyRefused || pr.Onchain == nil || pr.Onchain.Ciphertext == "" {
		t.Fatalf("after shredding: %+v content %+v", pr, pr.Content)
	}
}

// Memories anchored in format 1 (the seed's memory key, before data keys)
// still prove; a memory edited since it was numbered is a mismatch that
// names the parts.
func TestMemoryProofOldFormatAndMismatch(t *testing.T) {
	h := newProofHome(t)
	eh := h.memory("old", 1, "anchored the old way")
	hash, _ := state.ParseHash(eh)
	ct, err := EncryptMemory(h.seed.MemoryEncryptionKey(), hash, []byte("anchored the old way"))
	if err != nil {
		t.Fatal(err)
	}
	ms := []MemoryAnchor{{EventHash: hash, EncryptedContent: ct, Category: "decision", Importance: 7, PlainLength: 20}}
	root := memoryRoot(t, ms)
	r, err := h.chain.AnchorMemories(h.ctx, root, ms)
	if err != nil {
		t.Fatal(err)
	}
	info := h.chain.Info()
	// The record as written before data keys, by memory id: no encryption
	// field (a tree of one leaf: the root is the leaf, the proof empty).
	h.put(store.TableAnchors, MemoryRecordID("old"), Record{Kind: RecordMemory, Status: StatusIncluded, MemoryID: "old", Number: 1,
		EventHash: eh, Root: HashHex(root), Proof: []string{}, RootID: r.RootID, TxHash: r.TxHash, Block: r.Block, ChainID: info.ChainID, Contract: info.Contract})
	h.put(store.TableAnchors, RootRecordID(root), RootRecord{Kind: RecordRoot, Leaves: RecordMemory, Status: StatusFinal, Root: HashHex(root),
		Count: 1, RootID: r.RootID, TxHash: r.TxHash, Block: r.Block, BlockHash: r.BlockHash, ChainID: info.ChainID, Contract: info.Contract,
		Items: []string{MemoryRecordID("old")}})
	p := h.prover()
	pr := h.proof(p, 1)
	if pr.Status != StatusVerified || pr.Content.Key != KeyUsedSeed || pr.Onchain.Format != 1 || pr.Anchor.Encryption != "seed-key-v1" {
		t.Fatalf("old format: %+v content %+v", pr, pr.Content)
	}

	// A record whose proof does not lead from the event hash to its root.
	bad := Record{Kind: RecordMemory, Status: StatusIncluded, MemoryID: "old", Number: 1, EventHash: eh, Root: HashHex(root),
		Proof: []string{HashHex(hashOf("not a sibling"))}, RootID: r.RootID, TxHash: r.TxHash, Block: r.Block, ChainID: info.ChainID, Contract: info.Contract}
	h.put(store.TableAnchors, MemoryRecordID("old"), bad)
	if pr := h.proof(p, 1); pr.Status != StatusMismatch || !slices.Contains(pr.Mismatch, PartAnchorRecord) {
		t.Fatalf("a proof that does not lead to the root: %+v", pr)
	}

	h.memory("m2", 2, "original")
	h.anchor()
	// The version's stored content altered under its hashes: the content
	// no longer hashes to its content hash, nor matches the chain's.
	var v memory.Version
	row, err := h.env.DB.Get(store.TableMemoryVersions, memory.VersionRowID(2))
	if err != nil || json.Unmarshal(row.Data, &v) != nil {
		t.Fatal(err)
	}
	v.Content = "edited"
	h.put(store.TableMemoryVersions, memory.VersionRowID(2), v)
	pr = h.proof(p, 2)
	if pr.Status != StatusMismatch || !slices.Contains(pr.Mismatch, PartContentHash) {
		t.Fatalf("edited: %+v", pr)
	}
}

// An instance without the seed, or without a chain, shows home's record
// and sends decryption to home.
func TestMemoryProofWithoutSeedOrChain(t *testing.T) {
	h := newProofHome(t)
	h.memory("m1", 1, "x")
	h.anchor()
	noSeed := h.prover()
	noSeed.Seed = nil
	pr := h.proof(noSeed, 1)
	if pr.Status != StatusUnverified || pr.Onchain == nil || !pr.Onchain.Found || pr.Content != nil || !hasNote(pr, "decrypt on home") {
		t.Fatalf("without the seed: %+v", pr)
	}
	noChain := noSeed
	noChain.Chain = nil
	pr = h.proof(noChain, 1)
	if pr.Status != StatusUnverified || pr.Anchor == nil || pr.Anchor.TxHash == "" || pr.Onchain != nil || !hasNote(pr, "decrypt on home") {
		t.Fatalf("without a chain: %+v", pr)
	}
}

func hasNote(pr MemoryProof, s string) bool {
	return slices.ContainsFunc(pr.Notes, func(n string) bool { return strings.Contains(n, s) })
}
