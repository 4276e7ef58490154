package anchor

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	ethcrypto "github.com/ethereum/go-ethereum/crypto"

	"github.com/crow-sync/crow/clock"
	"github.com/crow-sync/crow/store"
	"github.com/crow-sync/crow/store/storetest"
)

// Helpers of these tests are named ck* so they never collide with the
// package's other test helpers.

func ckCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func ckEmbedded(t *testing.T, dir string, key *ecdsa.PrivateKey, opts ...EmbeddedOption) *Embedded {
	t.Helper()
	e, err := OpenEmbedded(dir, key, nil, opts...)
	if err != nil {
		t.Fatalf("OpenEmbedded: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// ckPublic is the "external" chain: a second embedded chain, with its own
// key, served over loopback JSON-RPC and seen through an RPC Chain, as a
// public chain would be.
type ckPublic struct {
	node *Embedded
	rpc  *RPC
}

func ckOpenPublic(t *testing.T) ckPublic {
	t.Helper()
	key, err := ethcrypto.HexToECDSA("8a1f9a8f95be41cd7ccb6168179afb4504aefe388d1e14474d32c45c72ce7b7a")
	if err != nil {
		t.Fatal(err)
	}
	node := ckEmbedded(t, t.TempDir(), key, WithLoopbackRPC("127.0.0.1:0"))
	info := node.Info()
	if info.RPCURL == "" {
		t.Fatal("the external chain serves no RPC")
	}
	rpc, err := DialRPC(ckCtx(t), info.RPCURL, common.HexToAddress(info.Contract), key)
	if err != nil {
		t.Fatalf("DialRPC: %v", err)
	}
	t.Cleanup(func() { rpc.Close() })
	return ckPublic{node, rpc}
}

func (p ckPublic) head(t *testing.T) uint64 {
	t.Helper()
	n, err := p.node.client.ec.BlockNumber(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func ckHash(s string) [32]byte { return [32]byte(ethcrypto.Keccak256([]byte(s))) }

// ckPutState writes a state version row, as projects does.
func ckPutState(t *testing.T, ctx context.Context, env *storetest.Env, project string, version uint64, hash [32]byte) {
	t.Helper()
	data, _ := json.Marshal(map[string]any{"project": project, "version": version, "state_hash": HashHex(hash)})
	if _, err := env.Writer.Write(ctx, store.Mutation{Table: store.TableStateVersions, RowID: fmt.Sprintf("%s/%020d", project, version), Op: store.OpPut, Data: data}); err != nil {
		t.Fatal(err)
	}
}

// ckPacket is the packet of project's version.
func ckPacket(t *testing.T, db *store.DB, project string, version uint64) Packet {
	t.Helper()
	rec, ok, err := ReadRecord(db, StateRecordID(project, version))
	if err != nil || !ok {
		t.Fatalf("record of %s v%d: %v %v", project, version, ok, err)
	}
	p, ok, err := PacketOf(db, rec)
	if err != nil || !ok {
		t.Fatalf("packet of %s v%d: %v %v", project, version, ok, err)
	}
	return p
}

func ckWorker(env *storetest.Env, ch Chain) *Worker {
	return NewWorker(WorkerConfig{DB: env.DB, Writer: env.Writer, Chain: ch, Seed: goldenSeed(), Interval: time.Hour,
		Logger: slog.New(slog.DiscardHandler)})
}

func ckRound(t *testing.T, ctx context.Context, r interface{ Round(context.Context) error }) {
	t.Helper()
	if err := r.Round(ctx); err != nil {
		t.Fatal(err)
	}
}

func ckEventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

const ckPublicRPC = "https://rpc.example.org" // what the packets publish; the test reads the chain through its loopback URL

// The Worker anchors versions on dev chain A; the Checkpointer, once its
// (fake) interval has passed, commits A's roots on chain B in one
// checkpoint; packets then carry a checkpoint proof that CheckPacket
// accepts and that CheckCheckpoint finds on B; the checkpoint is followed
// from included to final as B grows.
func TestCheckpointCommitsRootsOnExternalChain(t *testing.T) {
	ctx := ckCtx(t)
	env := storetest.Start(t, t.TempDir())
	devA := ckEmbedded(t, t.TempDir(), goldenSeed().AnchorKey())
	pub := ckOpenPublic(t)
	w := ckWorker(env, devA)
	ckPutState(t, ctx, env, "crow", 1, ckHash("v1"))
	ckPutState(t, ctx, env, "crow", 2, ckHash("v2"))
	ckRound(t, ctx, w)
	ckPutState(t, ctx, env, "crow", 3, ckHash("v3"))
	ckRound(t, ctx, w) // a second root
	p1, p3 := ckPacket(t, env.DB, "crow", 1), ckPacket(t, env.DB, "crow", 3)
	if p1.Root == p3.Root || p1.Checkpoint != nil {
		t.Fatalf("before checkpointing: roots %s %s, checkpoint %+v", p1.Root, p3.Root, p1.Checkpoint)
	}

	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	cp := NewCheckpointer(CheckpointerConfig{DB: env.DB, Writer: env.Writer, Chain: pub.rpc, Clock: clk, Interval: time.Hour,
		Confirmations: 2, RPCURL: ckPublicRPC, Logger: slog.New(slog.DiscardHandler)})
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- cp.Serve(sctx) }()
	t.Cleanup(func() { stop(); <-served })
	clk.BlockUntil(1) // Serve's ticker
	clk.Advance(time.Hour + time.Second)
	ckEventually(t, "the first checkpoint", func() bool { return cp.Stats().Checkpoints == 1 })

	last, ok := cp.Last()
	wantRoots := []string{p1.Root, p3.Root}
	slices.Sort(wantRoots)
	info := pub.rpc.Info()
	if !ok || last.Kind != RecordCheckpoint || !slices.Equal(last.Roots, wantRoots) || last.Status != StatusIncluded ||
		last.ChainID != info.ChainID || last.Contract != info.Contract || last.RPCURL != ckPublicRPC || last.TxHash == "" ||
		last.Block == 0 || last.BlockHash == "" || last.RootID == 0 || last.At != "2026-03-01T13:00:01Z" {
		t.Fatalf("last checkpoint = %+v (%v), want roots %v, included (2 confirmations), on chain %d %s", last, ok, wantRoots, info.ChainID, info.Contract)
	}
	if rec, ok, err := ReadCheckpointRecord(env.DB, last.Root); err != nil || !ok || !slices.Equal(rec.Roots, last.Roots) {
		t.Fatalf("checkpoint record %+v %v %v", rec, ok, err)
	}
	ri, ok, err := pub.node.GetRoot(ctx, [32]byte(common.HexToHash(last.Root)))
	if err != nil || !ok || ri.Count != 2 || ri.ID != last.RootID {
		t.Fatalf("on the external chain, getRoot(checkpoint) = %+v %v %v", ri, ok, err)
	}

	for _, v := range []uint64{1, 2, 3} {
		p := ckPacket(t, env.DB, "crow", v)
		c := p.Checkpoint
		if c == nil || c.Root != last.Root || c.ChainID != info.ChainID || c.Contract != info.Contract || c.TxHash != last.TxHash ||
			c.BlockNumber != last.Block || c.Status != StatusIncluded || c.RPCURL != ckPublicRPC || len(c.Proof) != 1 {
			t.Fatalf("v%d checkpoint = %+v, want checkpoint %s with a one-hash proof", v, c, last.Root)
		}
		if err := CheckPacket(p); err != nil {
			t.Fatalf("v%d: CheckPacket: %v", v, err)
		}
		if err := CheckCheckpoint(ctx, pub.rpc, p); err != nil {
			t.Fatalf("v%d: CheckCheckpoint: %v", v, err)
		}
	}
	// A verifier holds no key: it reads B through a Reader.
	reader, err := DialReader(ctx, pub.node.Info().RPCURL, common.HexToAddress(ckPacket(t, env.DB, "crow", 1).Checkpoint.Contract))
	if err != nil {
		t.Fatalf("DialReader: %v", err)
	}
	defer reader.Close()
	if err := CheckCheckpoint(ctx, reader, ckPacket(t, env.DB, "crow", 2)); err != nil {
		t.Fatalf("CheckCheckpoint through a Reader: %v", err)
	}
	if info := reader.Info(); info.Account != "" || info.ChainID != pub.rpc.Info().ChainID {
		t.Fatalf("reader info %+v", info)
	}

	// The checks refuse what does not hold.
	p := ckPacket(t, env.DB, "crow", 1)
	if err := CheckCheckpoint(ctx, devA, p); !errors.Is(err, ErrCheckpointChain) {
		t.Fatalf("CheckCheckpoint on the dev chain: %v, want ErrCheckpointChain", err)
	}
	bad := p
	bad.Checkpoint = new(*p.Checkpoint)
	bad.Checkpoint.Proof = []string{p3.Root}
	if err := CheckPacket(bad); !errors.Is(err, ErrProofMismatch) {
		t.Fatalf("CheckPacket with a wrong checkpoint proof: %v", err)
	}
	if err := CheckCheckpoint(ctx, pub.rpc, bad); !errors.Is(err, ErrProofMismatch) {
		t.Fatalf("CheckCheckpoint with a wrong checkpoint proof: %v", err)
	}
	// A checkpoint whose proof holds but which B never saw.
	tree, _ := checkpointTree([]string{p.Root})
	unseen := p
	unseen.Checkpoint = &CheckpointProof{ChainID: info.ChainID, Contract: info.Contract, Root: HashHex(tree.Root()), Proof: []string{}}
	if err := CheckCheckpoint(ctx, pub.rpc, unseen); !errors.Is(err, ErrCheckpointMissing) {
		t.Fatalf("CheckCheckpoint of a checkpoint not on chain: %v, want ErrCheckpointMissing", err)
	}

	// A block on top of the checkpoint's makes it final (2 confirmations),
	// at the next follow tick.
	if _, err := pub.rpc.AnchorRoot(ctx, ckHash("unrelated"), 1); err != nil {
		t.Fatal(err)
	}
	clk.Advance(30 * time.Second)
	ckEventually(t, "the checkpoint to be final", func() bool { l, _ := cp.Last(); return l.Status == StatusFinal })
	if c := ckPacket(t, env.DB, "crow", 1).Checkpoint; c == nil || c.Status != StatusFinal {
		t.Fatalf("packet checkpoint after confirmations: %+v", c)
	}
	if got, ok, err := LastCheckpoint(env.DB); err != nil || !ok || got.Root != last.Root || got.Status != StatusFinal || got.FinalAt == "" {
		t.Fatalf("LastCheckpoint = %+v %v %v", got, ok, err)
	}
	if st := cp.Stats(); st.Checkpoints != 1 || st.Roots != 2 || st.Failures != 0 || st.LastRoot != last.Root ||
		st.LastBlock != last.Block || st.LastSuccess.IsZero() {
		t.Fatalf("stats = %+v", st)
	}
	// Nothing new: the next interval sends nothing.
	head := pub.head(t)
	clk.Advance(time.Hour)
	ckEventually(t, "the next round", func() bool { return cp.Stats().LastSuccess.Equal(clk.Now()) })
	if st := cp.Stats(); st.Checkpoints != 1 || pub.head(t) != head {
		t.Fatalf("a round with nothing new: stats %+v, head %d -> %d", st, head, pub.head(t))
	}
}

// A rewritten dev chain would be caught. The owner anchors version 1 of
// "crow" (hash h1) on dev chain A, checkpointed on B. Later they rewrite
// history: a fresh dev chain A' and records where version 1 has hash h1',
// anchored under a new root. The rewritten packet is consistent on its own
// and A' confirms it, but no checkpoint covers its root, so a verifier that
// requires a checkpoint for a root older than the interval refuses it; the
// old checkpoint cannot be borrowed for it; the old packet still verifies on
// B while A' has lost its root; and checkpointing the rewrite afterwards
// puts it later on B than the original.
func TestCheckpointCatchesRewrittenDevChain(t *testing.T) {
	ctx := ckCtx(t)
	pub := ckOpenPublic(t)
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	checkpointer := func(env *storetest.Env) *Checkpointer {
		return NewCheckpointer(CheckpointerConfig{DB: env.DB, Writer: env.Writer, Chain: pub.rpc, Clock: clk, Interval: time.Hour,
			RPCURL: ckPublicRPC, Logger: slog.New(slog.DiscardHandler)})
	}

	// The original history.
	env := storetest.Start(t, t.TempDir())
	devA := ckEmbedded(t, t.TempDir(), goldenSeed().AnchorKey())
	ckPutState(t, ctx, env, "crow", 1, ckHash("h1"))
	ckRound(t, ctx, ckWorker(env, devA))
	ckRound(t, ctx, checkpointer(env))
	old := ckPacket(t, env.DB, "crow", 1)
	if old.Checkpoint == nil || old.Checkpoint.Status != StatusFinal {
		t.Fatalf("original packet checkpoint = %+v", old.Checkpoint)
	}
	devA.Close()

	// The rewrite: a new dev chain (same key, so the same account and
	// contract address) and records saying version 1 was h1'.
	env2 := storetest.Start(t, t.TempDir())
	devA2 := ckEmbedded(t, t.TempDir(), goldenSeed().AnchorKey())
	ckPutState(t, ctx, env2, "crow", 1, ckHash("h1 rewritten"))
	ckRound(t, ctx, ckWorker(env2, devA2))
	forged := ckPacket(t, env2.DB, "crow", 1)
	if forged.ProjectID != old.ProjectID || forged.Version != old.Version || forged.StateHash == old.StateHash || forged.Root == old.Root ||
		forged.Contract != old.Contract || forged.ChainID != old.ChainID {
		t.Fatalf("the rewrite should claim the same version on the same contract with another hash:\nold    %+v\nforged %+v", old, forged)
	}
	// On its own, the rewritten packet is consistent and A' confirms it.
	if err := CheckPacket(forged); err != nil {
		t.Fatalf("CheckPacket(forged): %v", err)
	}
	forgedRoot := [32]byte(common.HexToHash(forged.Root))
	ri, ok, err := devA2.GetRoot(ctx, forgedRoot)
	if err != nil || !ok {
		t.Fatalf("A' has the rewritten root: %v %v", ok, err)
	}
	if _, ok, err := devA2.GetRoot(ctx, [32]byte(common.HexToHash(old.Root))); err != nil || ok {
		t.Fatalf("A' has the original root: %v %v", ok, err)
	}

	// No checkpoint covers the rewritten root.
	if forged.Checkpoint != nil {
		t.Fatalf("the rewritten packet carries a checkpoint: %+v", forged.Checkpoint)
	}
	if err := CheckCheckpoint(ctx, pub.rpc, forged); !errors.Is(err, ErrNoCheckpoint) {
		t.Fatalf("CheckCheckpoint(forged) = %v, want ErrNoCheckpoint", err)
	}
	// A verifier requiring a checkpoint for roots older than the interval
	// refuses it once the interval has passed (and only then).
	grace := time.Hour + 5*time.Minute
	if err := RequireCheckpoint(forged, ri.AnchoredAt, ri.AnchoredAt.Add(grace+time.Minute), grace); !errors.Is(err, ErrNoCheckpoint) {
		t.Fatalf("RequireCheckpoint(forged, past the interval) = %v, want ErrNoCheckpoint", err)
	}
	if err := RequireCheckpoint(forged, ri.AnchoredAt, ri.AnchoredAt.Add(time.Minute), grace); err != nil {
		t.Fatalf("RequireCheckpoint(forged, within the interval) = %v, want nil (not due yet)", err)
	}
	if err := RequireCheckpoint(forged, ri.AnchoredAt, ri.AnchoredAt.Add(time.Minute), 0); !errors.Is(err, ErrNoCheckpoint) {
		t.Fatalf("RequireCheckpoint(forged, grace 0) = %v, want ErrNoCheckpoint", err)
	}
	// The original checkpoint cannot be borrowed: its proof does not lead
	// from the rewritten root.
	borrowed := forged
	borrowed.Checkpoint = old.Checkpoint
	if err := CheckPacket(borrowed); !errors.Is(err, ErrProofMismatch) {
		t.Fatalf("CheckPacket(forged with the old checkpoint) = %v, want ErrProofMismatch", err)
	}
	if err := CheckCheckpoint(ctx, pub.rpc, borrowed); !errors.Is(err, ErrProofMismatch) {
		t.Fatalf("CheckCheckpoint(forged with the old checkpoint) = %v, want ErrProofMismatch", err)
	}

	// The original packet still verifies on B: B committed (project, 1, h1)
	// before the rewrite, which A' no longer shows.
	if err := CheckPacket(old); err != nil {
		t.Fatalf("CheckPacket(old): %v", err)
	}
	if err := CheckCheckpoint(ctx, pub.rpc, old); err != nil {
		t.Fatalf("CheckCheckpoint(old): %v", err)
	}
	if err := RequireCheckpoint(old, ri.AnchoredAt, ri.AnchoredAt.Add(24*time.Hour), grace); err != nil {
		t.Fatalf("RequireCheckpoint(old): %v", err)
	}

	// Checkpointing the rewrite now only adds a later commitment on B: two
	// checkpointed roots claim version 1 with different hashes, and the
	// original is the earlier one.
	ckRound(t, ctx, checkpointer(env2))
	late := ckPacket(t, env2.DB, "crow", 1)
	if late.Checkpoint == nil || CheckCheckpoint(ctx, pub.rpc, late) != nil {
		t.Fatalf("the rewrite's own checkpoint: %+v", late.Checkpoint)
	}
	if late.Checkpoint.BlockNumber <= old.Checkpoint.BlockNumber {
		t.Fatalf("rewrite checkpointed in block %d, original in %d: the rewrite should come later",
			late.Checkpoint.BlockNumber, old.Checkpoint.BlockNumber)
	}
}

// A restarted Checkpointer (a new one over the same records) sends nothing
// for roots already covered; a new root gets a checkpoint of its own; each
// packet keeps the checkpoint that covers its root.
func TestCheckpointerRestartDoesNotRecheckpoint(t *testing.T) {
	ctx := ckCtx(t)
	env := storetest.Start(t, t.TempDir())
	devA := ckEmbedded(t, t.TempDir(), goldenSeed().AnchorKey())
	pub := ckOpenPublic(t)
	w := ckWorker(env, devA)
	cfg := CheckpointerConfig{DB: env.DB, Writer: env.Writer, Chain: pub.rpc, Clock: clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)),
		Interval: time.Hour, Logger: slog.New(slog.DiscardHandler)}
	ckPutState(t, ctx, env, "crow", 1, ckHash("v1"))
	ckRound(t, ctx, w)
	first := NewCheckpointer(cfg)
	ckRound(t, ctx, first)
	c1, ok := first.Last()
	if !ok || len(c1.Roots) != 1 || first.Stats().Checkpoints != 1 {
		t.Fatalf("first checkpoint %+v %v", c1, ok)
	}

	head := pub.head(t)
	restarted := NewCheckpointer(cfg)
	ckRound(t, ctx, restarted)
	if pub.head(t) != head || restarted.Stats().Checkpoints != 0 {
		t.Fatalf("the restarted checkpointer sent again: head %d -> %d, stats %+v", head, pub.head(t), restarted.Stats())
	}
	if got, ok := restarted.Last(); !ok || got.Root != c1.Root {
		t.Fatalf("restarted Last = %+v %v, want %s", got, ok, c1.Root)
	}

	ckPutState(t, ctx, env, "crow", 2, ckHash("v2"))
	ckRound(t, ctx, w)
	ckRound(t, ctx, restarted)
	c2, _ := restarted.Last()
	p1, p2 := ckPacket(t, env.DB, "crow", 1), ckPacket(t, env.DB, "crow", 2)
	if restarted.Stats().Checkpoints != 1 || c2.Root == c1.Root || !slices.Equal(c2.Roots, []string{p2.Root}) {
		t.Fatalf("second checkpoint %+v: want one covering only %s", c2, p2.Root)
	}
	if p1.Checkpoint == nil || p1.Checkpoint.Root != c1.Root || p2.Checkpoint == nil || p2.Checkpoint.Root != c2.Root {
		t.Fatalf("packets' checkpoints: v1 %+v, v2 %+v", p1.Checkpoint, p2.Checkpoint)
	}
	for _, p := range []Packet{p1, p2} {
		if err := CheckPacket(p); err != nil {
			t.Fatal(err)
		}
		if err := CheckCheckpoint(ctx, pub.rpc, p); err != nil {
			t.Fatal(err)
		}
	}
	// And a third start, after both: still nothing to send.
	head = pub.head(t)
	ckRound(t, ctx, NewCheckpointer(cfg))
	if pub.head(t) != head {
		t.Fatalf("a third start sent a transaction: head %d -> %d", head, pub.head(t))
	}
}
