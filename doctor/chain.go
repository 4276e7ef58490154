package doctor

import (
	"context"
	"fmt"
	"math/big"
	"time"

	"github.com/crow-sync/crow/anchor"
)

// Chain thresholds.
const (
	// LowBalanceWei: below this (0.001 ETH) an RPC account is about to run
	// dry; at zero it cannot pay at all.
	LowBalanceWei = 1_000_000_000_000_000
	// StuckAfter: an anchoring transaction in flight for longer, or a root
	// not final for longer than OpenRootAfter, is reported.
	StuckAfter    = 10 * time.Minute
	OpenRootAfter = time.Hour
)

// checkChain: the chain answers, the anchoring account can pay (RPC), no
// transaction is stuck and no root stays unconfirmed.
func checkChain(ctx context.Context, env Env) []Finding {
	if env.Chain == nil {
		return nil
	}
	st, err := env.Chain(ctx)
	if err != nil {
		return []Finding{{Check: CheckChain, Status: Problem, Message: "reading the anchoring records failed: " + err.Error(),
			Fix: "run crow chain status; check the daemon's log"}}
	}
	home := env.Self.Role == "home"
	if st.Kind == "none" {
		if home {
			return []Finding{{Check: CheckChain, Status: Warn, Message: "home anchors nothing: no chain is configured",
				Fix: "remove [chain] overrides to use the embedded chain, or set [chain] rpc_url and contract in config.toml"}}
		}
		return []Finding{{Check: CheckChain, Status: OK, Message: "reads no chain (proofs come from home's replicated records)"}}
	}
	fixConn := "check [chain] rpc_url in config.toml (crow config show) and that the node is up"
	if st.Kind == "embedded" {
		fixConn = "restart crow serve (the embedded chain lives in $CROW_HOME/chain); see its log"
	}
	if st.Error != "" {
		return []Finding{{Check: CheckChain, Subject: st.Kind, Status: Problem, Message: "cannot read the chain: " + st.Error, Fix: fixConn}}
	}
	out := []Finding{{Check: CheckChain, Subject: st.Kind, Status: OK,
		Message: fmt.Sprintf("%s chain %d answers (head %d)", st.Kind, st.ChainID, st.Head)}}
	if home && st.Kind == "rpc" && st.BalanceWei != "" {
		bal, _ := new(big.Int).SetString(st.BalanceWei, 10)
		switch {
		case bal == nil:
		case bal.Sign() == 0:
			out = append(out, Finding{Check: CheckChain, Subject: "balance", Status: Problem,
				Message: fmt.Sprintf("the anchoring account %s has no funds: it cannot pay for anchoring transactions", st.Account),
				Fix:     fmt.Sprintf("send ETH to %s on chain %d", st.Account, st.ChainID)})
		case bal.Cmp(big.NewInt(LowBalanceWei)) < 0:
			out = append(out, Finding{Check: CheckChain, Subject: "balance", Status: Warn,
				Message: fmt.Sprintf("the anchoring account %s has only %s ETH", st.Account, st.BalanceETH),
				Fix:     fmt.Sprintf("send ETH to %s on chain %d", st.Account, st.ChainID)})
		default:
			out = append(out, Finding{Check: CheckChain, Subject: "balance", Status: OK,
				Message: fmt.Sprintf("the anchoring account %s holds %s ETH", st.Account, st.BalanceETH)})
		}
	}
	now := env.Now()
	for _, p := range st.Pending {
		sent, err := time.Parse(time.RFC3339, p.SentAt)
		if err == nil && now.Sub(sent) > StuckAfter {
			out = append(out, Finding{Check: CheckChain, Subject: "pending", Status: Warn,
				Message: fmt.Sprintf("anchoring transaction %s (nonce %d) in flight since %s (%d attempts, %d replacements)",
					p.Hash, p.Nonce, p.SentAt, p.Attempts, p.Replacements),
				Fix: "crow chain status; raise [chain] max_fee_gwei if fees rose, check the account's funds"})
		}
	}
	var old []string
	for _, r := range st.Open {
		at, err := time.Parse(time.RFC3339, r.At)
		if err == nil && now.Sub(at) > OpenRootAfter {
			old = append(old, r.Root)
		}
	}
	if len(old) > 0 {
		out = append(out, Finding{Check: CheckChain, Subject: "roots", Status: Warn,
			Message: fmt.Sprintf("%d root(s) not final after %s (first %s)", len(old), OpenRootAfter, old[0]),
			Fix:     "crow chain status; check that the chain's head advances (confirmations in [chain])"})
	} else if home {
		out = append(out, Finding{Check: CheckChain, Subject: "roots", Status: OK,
			Message: fmt.Sprintf("%d root(s) final, %d waiting for confirmation, %d transaction(s) in flight",
				st.Roots[anchor.StatusFinal], len(st.Open), len(st.Pending))})
	}
	return out
}

// checkFork: this instance's own feed forked (a restored or cloned copy
// wrote entries peers already hold from the original).
func checkFork(env Env) []Finding {
	if env.Fork == nil {
		return nil
	}
	if f := env.Fork(); f != nil {
		return []Finding{{Check: CheckFork, Status: Problem,
			Message: fmt.Sprintf("this instance's own feed forked (it holds %d entries, peers %d): local writes are refused: %s", f.Length, f.PeerLength, f.Error),
			Fix:     "crow instance reenroll --join INVITE (make the invite on home: crow instance invite --name NAME)"}}
	}
	return []Finding{{Check: CheckFork, Status: OK, Message: "this instance's own feed is not forked"}}
}
