package anchor

import (
	"context"
	"fmt"
	"testing"

	"github.com/ethereum/go-ethereum/accounts/abi/bind"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/crow-sync/crow/anchor/merkle"
	"github.com/crow-sync/crow/identity"
)

// benchChain opens an embedded chain for a benchmark.
func benchChain(b *testing.B) *Embedded {
	b.Helper()
	var seed identity.Seed
	e, err := OpenEmbedded(b.TempDir(), seed.AnchorKey(), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	return e
}

// benchRoot is the root over n state versions of op i (distinct per op).
func benchRoot(b *testing.B, i, n int) *merkle.Tree {
	b.Helper()
	var seed identity.Seed
	leaves := make([]merkle.Hash, n)
	for j := range leaves {
		leaves[j] = merkle.StateLeaf(seed.ProjectIDHash(fmt.Sprint("p", j%7)), uint64(i*n+j+1), hashOf(fmt.Sprint(i, "/", j)))
	}
	t, err := merkle.New(leaves)
	if err != nil {
		b.Fatal(err)
	}
	return t
}

func gasOf(b *testing.B, e *Embedded, r Receipt) uint64 {
	b.Helper()
	rc, err := e.ec.TransactionReceipt(context.Background(), common.HexToHash(r.TxHash))
	if err != nil {
		b.Fatal(err)
	}
	return rc.GasUsed
}

// BenchmarkGasPerVersion measures the gas one state version costs on the
// embedded chain (Osaka rules, as the RPC backends' chains): anchored one
// root per version (a root of one leaf per transaction) against 100
// versions under one root. Each op anchors both; the metrics are gas per
// version of each and their ratio.
//
//	go test ./anchor/ -run '^$' -bench Gas -benchtime 3x
func BenchmarkGasPerVersion(b *testing.B) {
	const batch = 100
	e := benchChain(b)
	ctx := context.Background()
	// The contract's first root also pays rootCount's first write (a fresh
	// slot, +19k gas): warm it up so every op measures the steady state.
	warm := benchRoot(b, -1, 1)
	if _, err := e.AnchorRoot(ctx, warm.Root(), 1); err != nil {
		b.Fatal(err)
	}
	var single, batched uint64
	for i := 0; i < b.N; i++ {
		t1 := benchRoot(b, 2*i, 1)
		r1, err := e.AnchorRoot(ctx, t1.Root(), t1.Len())
		if err != nil {
			b.Fatal(err)
		}
		single += gasOf(b, e, r1)
		tn := benchRoot(b, 2*i+1, batch)
		rn, err := e.AnchorRoot(ctx, tn.Root(), tn.Len())
		if err != nil {
			b.Fatal(err)
		}
		batched += gasOf(b, e, rn)
	}
	perSingle := float64(single) / float64(b.N)
	perBatched := float64(batched) / float64(b.N*batch)
	b.ReportMetric(perSingle, "gas/version-single")
	b.ReportMetric(perBatched, "gas/version-batched")
	b.ReportMetric(perBatched/perSingle, "batched/single")
	b.Logf("gas per state version: %.0f one root per version, %.0f in a root of %d (ratio 1/%.0f)", perSingle, perBatched, batch, perSingle/perBatched)
}

// BenchmarkGasV1PerVersion is the same measure for the first contract
// (ProjectStateAnchor v1, testdata/, one storage entry per version) on
// the same chain: one version per transaction (anchor) and the batch of
// 16 (anchorBatch, v1's MaxStatesPerTx) crow sent.
func BenchmarkGasV1PerVersion(b *testing.B) {
	const batch = 16
	e := benchChain(b)
	ctx := context.Background()
	v1ABI, v1Bin := v1Contract(b)
	var seed identity.Seed
	opts, err := bind.NewKeyedTransactorWithChainID(seed.AnchorKey(), e.chainID)
	if err != nil {
		b.Fatal(err)
	}
	opts.Context = ctx
	_, tx, v1, err := bind.DeployContract(opts, v1ABI, v1Bin, e.ec)
	if err != nil {
		b.Fatal(err)
	}
	mined := func(tx *types.Transaction, err error) uint64 {
		b.Helper()
		if err != nil {
			b.Fatal(err)
		}
		rc, err := waitMined(ctx, e.ec, tx.Hash(), e.log)
		if err != nil || rc.Status != 1 {
			b.Fatalf("v1 tx: %v %+v", err, rc)
		}
		return rc.GasUsed
	}
	mined(tx, nil)
	pid := seed.ProjectIDHash("p")
	// Warm up anchorCount's slot, as above.
	mined(v1.Transact(opts, "anchor", pid, uint64(1<<40), hashOf("warm")))
	var single, batched uint64
	for i := 0; i < b.N; i++ {
		v := uint64(i*(batch+1) + 1)
		single += mined(v1.Transact(opts, "anchor", pid, v, hashOf(fmt.Sprint(v))))
		pids, vs, hs := make([][32]byte, batch), make([]uint64, batch), make([][32]byte, batch)
		for j := range batch {
			pids[j], vs[j], hs[j] = pid, v+1+uint64(j), hashOf(fmt.Sprint(v+1+uint64(j)))
		}
		batched += mined(v1.Transact(opts, "anchorBatch", pids, vs, hs))
	}
	b.ReportMetric(float64(single)/float64(b.N), "gas/version-single")
	b.ReportMetric(float64(batched)/float64(b.N*batch), "gas/version-batch16")
}

// BenchmarkGasPerMemory measures the gas per memory of a batch of 100
// encrypted 256-byte memories under one root (the content is carried in
// the events, so it dominates).
func BenchmarkGasPerMemory(b *testing.B) {
	const batch = 100
	e := benchChain(b)
	ctx := context.Background()
	var gas uint64
	var n int
	for i := 0; i < b.N; i++ {
		ms := benchMemories(b, i, batch)
		for _, part := range SplitMemories(ms) {
			r, err := e.AnchorMemories(ctx, memoryRoot(b, part), part)
			if err != nil {
				b.Fatal(err)
			}
			gas += gasOf(b, e, r)
			n += len(part)
		}
	}
	b.ReportMetric(float64(gas)/float64(n), "gas/memory")
}

// benchMemories is a batch of n sealed 256-byte memories of op i.
func benchMemories(b *testing.B, i, n int) []MemoryAnchor {
	b.Helper()
	var key [32]byte
	plain := make([]byte, 256)
	out := make([]MemoryAnchor, n)
	for j := range out {
		eh := hashOf(fmt.Sprint(i, "/", j))
		ct, err := SealMemory(key, eh, plain)
		if err != nil {
			b.Fatal(err)
		}
		out[j] = MemoryAnchor{EventHash: eh, EncryptedContent: ct, Category: "fact", Importance: 5, PlainLength: 256}
	}
	return out
}

// BenchmarkEmbeddedAnchorRoot measures state anchoring throughput on the
// embedded chain: per op, a tree of 100 versions built and its root
// anchored and mined before it returns (the worker's unit of work).
//
//	go test ./anchor -run '^$' -bench EmbeddedAnchor -benchtime 50x
func BenchmarkEmbeddedAnchorRoot(b *testing.B) {
	const batch = 100
	e := benchChain(b)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t := benchRoot(b, i, batch)
		if _, err := e.AnchorRoot(ctx, t.Root(), t.Len()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "states/s")
}

// BenchmarkEmbeddedAnchorMemories measures memory anchoring: batches of 100
// encrypted 256-byte memories per root.
func BenchmarkEmbeddedAnchorMemories(b *testing.B) {
	e := benchChain(b)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, part := range SplitMemories(benchMemories(b, i, 100)) {
			if _, err := e.AnchorMemories(ctx, memoryRoot(b, part), part); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "memories/s")
}
