package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/crow-sync/crow/anchor"
)

// MemoryProver proves numbered memories (package anchor's Prover, which
// owns the verdicts).
type MemoryProver interface {
	MemoryProof(ctx context.Context, n uint64) (anchor.MemoryProof, error)
}

// MemoryProofDoc is the answer of memory.proof.
type MemoryProofDoc = anchor.MemoryProof

// MemoryNumber names one numbered memory version.
type MemoryNumber struct {
	Number uint64 `json:"number" in:"path,name=n" required:"true" min:"1" desc:"The memory's number (decimal), as crow_get_memory and crow_list_memories show it once home has numbered it."`
}

// Validate asks for a number (MCP may leave it out).
func (in MemoryNumber) Validate() error {
	if in.Number == 0 {
		return Invalidf("number is required: a memory number, 1 or more")
	}
	return nil
}

var MemoryProof = define(&Def[MemoryNumber, MemoryProofDoc]{
	Spec: Spec{Name: "memory.proof", Method: "GET", Path: "/v1/memory/{n}/proof", Tool: "crow_memory_proof",
		Title: "Prove a memory", Tag: "memories", Summary: "Prove a numbered memory against the chain, step by step",
		Description: "Prove memory number n: its event record and how its event hash recomputes, home's anchor record " +
			"(transaction, block, chain, contract), the MemoryAnchored event read back from the chain, and its ciphertext " +
			"decrypted and compared with the content hash. status is verified, content_forgotten (the memory was forgotten: " +
			"its key is destroyed and the ciphertext unreadable), pending (not anchored yet), mismatch (mismatch names the " +
			"parts) or unverified (this instance lacks the chain or the seed: ask home).",
		ReadOnly: true},
	Impl: func(a *App, ctx context.Context, in MemoryNumber) (MemoryProofDoc, error) {
		if a.d.Prover == nil {
			return MemoryProofDoc{}, unavailable("memory prover")
		}
		p, err := a.d.Prover.MemoryProof(ctx, in.Number)
		if errors.Is(err, anchor.ErrUnknownNumber) {
			return p, Wrap(KindNotFound, err, fmt.Sprintf("no memory has number %d here: home has not numbered it yet, "+
				"or it has not replicated to this instance", in.Number))
		}
		return p, err
	},
})
