package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/crow-sync/crow/app"
)

func init() {
	register("chain", "the anchoring chain (status [--json])", runChain)
}

func runChain(ctx context.Context, g *globals, args []string) error {
	if len(args) == 0 || args[0] != "status" {
		return usagef("usage: crow chain status [--json]")
	}
	fs := flag.NewFlagSet("chain status", flag.ContinueOnError)
	g.bind(fs)
	pos, err := parseArgs(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("crow chain status takes no arguments")
	}
	c, err := newClient(g)
	if err != nil {
		return err
	}
	st, printed, err := call(ctx, g, c, app.ChainStatusGet, app.NoInput{})
	if err != nil || printed {
		return err
	}
	w := g.stdout
	if st.Kind == "none" {
		fmt.Fprintln(w, "this instance reads no chain (satellites read home's replicated anchor records)")
		return nil
	}
	fmt.Fprintf(w, "chain     %s, chain id %d, head block %d\n", st.Kind, st.ChainID, st.Head)
	fmt.Fprintf(w, "contract  %s\n", st.Contract)
	fmt.Fprintf(w, "account   %s  balance %s ETH\n", st.Account, st.BalanceETH)
	if st.RPCURL != "" {
		fmt.Fprintf(w, "public RPC %s\n", st.RPCURL)
	}
	if st.Error != "" {
		fmt.Fprintf(w, "error     %s\n", st.Error)
	}
	fmt.Fprintf(w, "roots     %d final, %d included, %d pending\n", st.Roots["final"], st.Roots["included"], st.Roots["pending"])
	if st.Last != nil {
		fmt.Fprintf(w, "last root #%d %s (%d leaves, %s) tx %s block %d\n", st.Last.RootID, st.Last.Root, st.Last.Count, st.Last.Status, st.Last.TxHash, st.Last.Block)
	}
	if len(st.Pending) == 0 {
		fmt.Fprintln(w, "pending transactions: none")
	}
	for _, p := range st.Pending {
		fmt.Fprintf(w, "pending tx %s nonce %d, max fee %s wei, tip %s wei, sent %s, %d attempt(s)\n", p.Hash, p.Nonce, p.MaxFeeWei, p.MaxTipWei, p.SentAt, p.Attempts)
	}
	for _, r := range st.Open {
		fmt.Fprintf(w, "not final: root #%d %s… %s in block %d\n", r.RootID, r.Root[:18], r.Status, r.Block)
	}
	if cp := st.Checkpoint; cp != nil {
		fmt.Fprintf(w, "last checkpoint %s… on chain %d (%s) tx %s block %d, %s\n", cp.Root[:18], cp.ChainID, cp.Status, cp.TxHash, cp.Block, cp.At)
	} else {
		fmt.Fprintln(w, "checkpoints: none ([chain.checkpoint] is opt-in)")
	}
	if st.Worker != nil {
		fmt.Fprintf(w, "anchored by this home: %d state versions, %d memories; %d failed rounds\n", st.Worker.States, st.Worker.Memories, st.Worker.Failures)
	}
	return nil
}
