package app

import (
	"context"

	"github.com/crow-sync/crow/anchor"
)

// ChainStatus is the answer of chain.status (package anchor owns it).
type ChainStatus = anchor.ChainStatus

// ChainStatusGet shows the anchoring chain: account, balance, pending
// transactions, roots and the last checkpoint.
var ChainStatusGet = define(&Def[NoInput, ChainStatus]{
	Spec: Spec{Name: "chain.status", Method: "GET", Path: "/v1/chain/status", Tool: "crow_chain_status", Tag: "projects",
		Title:   "Anchoring chain status",
		Summary: "The anchoring chain: kind, chain id, contract, account and balance, pending transactions, roots by status, the last checkpoint",
		Description: "Shows the chain this instance anchors on (home) or reads (others): its kind (embedded or rpc), chain id, " +
			"contract and account with its balance, the anchoring transaction in flight, home's Merkle roots by status " +
			"(included, final) with the ones not final yet, the newest root, and the public RPC URL published in verification packets.",
		ReadOnly: true, Idempotent: true, NoRoute: true},
	Impl: func(a *App, ctx context.Context, _ NoInput) (ChainStatus, error) {
		var ch anchor.Chain
		if c, ok := a.d.Chain.(anchor.Chain); ok {
			ch = c
		}
		return anchor.Status(ctx, ch, a.d.DB, a.d.AnchorWorker, a.d.ChainRPCURL)
	},
})
