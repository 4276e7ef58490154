package anchor

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strings"

	"github.com/ethereum/go-ethereum/params"

	"github.com/crow-sync/crow/store"
)

// ChainStatus is the answer of `crow chain status` (GET /v1/chain/status).
// JSON field names are part of the REST API.
type ChainStatus struct {
	Kind     string `json:"kind"` // embedded | rpc | none
	ChainID  uint64 `json:"chain_id,omitempty"`
	Contract string `json:"contract,omitempty"`
	Account  string `json:"account,omitempty"`
	// Balance of the account, in wei and in ether; empty when unread.
	BalanceWei string `json:"balance_wei,omitempty"`
	BalanceETH string `json:"balance_eth,omitempty"`
	Head       uint64 `json:"head,omitempty"`
	// RPCURL is the public JSON-RPC endpoint published in packets.
	RPCURL string `json:"rpc_url,omitempty"`
	// Pending is the anchoring transaction in flight, if any.
	Pending []PendingTx `json:"pending_transactions"`
	// Roots counts home's root records by status; Open lists the roots
	// not final yet; Last is the newest root.
	Roots map[string]int `json:"roots"`
	Open  []RootRecord   `json:"open_roots"`
	Last  *RootRecord    `json:"last_root,omitempty"`
	// Checkpoint is the last public-chain checkpoint (nil: none, or off).
	Checkpoint *CheckpointRecord `json:"last_checkpoint,omitempty"`
	// Worker: home's anchoring worker counters (nil elsewhere).
	Worker *WorkerStats `json:"worker,omitempty"`
	Error  string       `json:"error,omitempty"` // reading the chain failed
}

// PendingTx is an anchoring transaction sent and not mined yet.
type PendingTx struct {
	Hash         string `json:"hash"`
	Nonce        uint64 `json:"nonce"`
	MaxFeeWei    string `json:"max_fee_per_gas_wei"`
	MaxTipWei    string `json:"max_priority_fee_per_gas_wei"`
	SentAt       string `json:"sent_at"`
	Attempts     int    `json:"attempts"`
	Doing        string `json:"doing,omitempty"`
	FirstHash    string `json:"first_hash,omitempty"`
	Replacements int    `json:"replacements,omitempty"`
}

// accountReader is the chain's account as the status shows it (Embedded and
// RPC have it).
type accountReader interface {
	balance(ctx context.Context) (*big.Int, uint64, error)
	pending() []PendingTx
}

func (c *client) balance(ctx context.Context) (*big.Int, uint64, error) {
	bal, err := c.ec.BalanceAt(ctx, c.from, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("reading the balance of %s: %w", c.from.Hex(), err)
	}
	head, err := c.ec.BlockNumber(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("reading the head: %w", err)
	}
	return bal, head, nil
}

// FormatETH formats wei as ether with up to 6 decimals ("0.0012").
func FormatETH(wei *big.Int) string {
	r := new(big.Rat).SetFrac(wei, big.NewInt(params.Ether))
	s := strings.TrimRight(strings.TrimRight(r.FloatString(6), "0"), ".")
	if s == "" || s == "-" {
		return "0"
	}
	return s
}

// Status reports ch (nil: no chain), home's root records in db, and the
// worker's counters (nil: not home).
func Status(ctx context.Context, ch Chain, db *store.DB, w *Worker, rpcURL string) (ChainStatus, error) {
	st := ChainStatus{Kind: "none", Pending: []PendingTx{}, Roots: map[string]int{}, Open: []RootRecord{}, RPCURL: rpcURL}
	if ch != nil {
		info := ch.Info()
		st.Kind, st.ChainID, st.Contract, st.Account = info.Kind, info.ChainID, info.Contract, info.Account
		if ar, ok := ch.(accountReader); ok {
			if bal, head, err := ar.balance(ctx); err != nil {
				st.Error = err.Error()
			} else {
				st.BalanceWei, st.BalanceETH, st.Head = bal.String(), FormatETH(bal), head
			}
			st.Pending = append(st.Pending, ar.pending()...)
		}
	}
	if w != nil {
		ws := w.Stats()
		st.Worker = &ws
	}
	if db == nil {
		return st, nil
	}
	err := db.View(func(txn *store.Txn) error {
		return txn.ScanRows(store.TableAnchors, func(r *store.Row) error {
			switch {
			case r.Deleted:
			case strings.HasPrefix(r.RowID, "root/"):
				var rr RootRecord
				if json.Unmarshal(r.Data, &rr) != nil {
					return nil
				}
				st.Roots[rr.Status]++
				if rr.Status != StatusFinal {
					st.Open = append(st.Open, rr)
				}
				if st.Last == nil || rr.RootID > st.Last.RootID {
					last := rr
					last.Items, last.Batch = nil, nil
					st.Last = &last
				}
			}
			return nil
		})
	})
	if err != nil {
		return st, err
	}
	if cr, ok, err := LastCheckpoint(db); err != nil {
		return st, err
	} else if ok {
		cr.Roots = nil
		st.Checkpoint = &cr
	}
	for i := range st.Open {
		st.Open[i].Items, st.Open[i].Batch = nil, nil
	}
	sort.Slice(st.Open, func(i, j int) bool { return st.Open[i].RootID < st.Open[j].RootID })
	return st, err
}

// pending is the transaction in flight, if any.
func (c *client) pending() []PendingTx {
	if p, ok := c.sender.Load().Pending(); ok {
		return []PendingTx{p}
	}
	return nil
}
