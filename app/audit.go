package app

import (
	"context"

	"github.com/crow-sync/crow/audit"
)

// AuditReport is the answer of audit.run (package audit owns the checks).
type AuditReport = audit.Report

// AuditIn is the input of audit.run.
type AuditIn struct {
	Project string `json:"project,omitempty" in:"query" maxlen:"128" desc:"Only this project's memories and state versions; omit to audit every project and the numbering as a whole."`
	Limit   int    `json:"limit,omitempty" in:"query" min:"1" max:"1000000" desc:"Items (memory versions and state versions) in this page; omit for the whole audit in one answer. Go on with cursor = next until next is empty."`
	Cursor  string `json:"cursor,omitempty" in:"query" maxlen:"1024" desc:"The next of the previous page; omit for the first page (which alone carries total)."`
}

// AuditRun recomputes every stored hash and checks it against the chain.
var AuditRun = define(&Def[AuditIn, AuditReport]{
	Spec: Spec{Name: "audit.run", Method: "GET", Path: "/v1/audit", Tool: "crow_audit", Tag: "projects",
		Title:   "Audit the stored hashes",
		Summary: "Recompute every content hash, event hash, evidence root and the state-hash chain, and check them against the chain",
		Description: "Recomputes, from what this instance stores, every memory's content hash and event hash, the memory numbering, " +
			"every state item's evidence root and every state version's hash and previous_state_hash link, and checks memory " +
			"and state anchors against home's records and, where this instance reads a chain, against the chain. ok is false when " +
			"anything does not match; mismatches name the memory (id and number) or the project, version and item, with want " +
			"(recomputed or on chain) and got (stored). Items not anchored yet are skipped as pending, not failures. Large stores " +
			"can be audited in pages (limit, cursor).",
		ReadOnly: true, Idempotent: true},
	Impl: func(a *App, ctx context.Context, in AuditIn) (AuditReport, error) {
		if a.d.DB == nil {
			return AuditReport{}, unavailable("store")
		}
		opts := audit.Options{Project: in.Project, After: in.Cursor, Limit: in.Limit}
		if v, err := a.verifier(); err == nil {
			opts.StateAnchors = v
		}
		if a.d.Chain != nil {
			opts.ChainKind = a.d.Chain.Info().Kind
			if mc, ok := a.d.Chain.(audit.MemoryChain); ok {
				opts.MemoryChain = mc
			}
		}
		return audit.Run(ctx, audit.NewStoreSource(a.d.DB), opts)
	},
})
