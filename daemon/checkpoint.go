package daemon

import (
	"cmp"
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	ethcrypto "github.com/ethereum/go-ethereum/crypto"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/crow-sync/crow/anchor"
)

// checkpointSettings is [chain.checkpoint] (SPEC §11): public-chain
// checkpoints of home's roots, opt-in (RPCURL "" is off).
type checkpointSettings struct {
	// RPCURL is the endpoint crow sends through. It may carry an API key:
	// it is never published.
	RPCURL string
	// PublicRPCURL is published in checkpoint records and packets for
	// verifiers ("" for none; they bring their own, --checkpoint-rpc).
	PublicRPCURL string
	// KeyFile is a hex secp256k1 key file paying for checkpoints; "" uses
	// the seed's anchoring key, whose address the chain record binds to
	// the crow id (so the checkpoint contract's owner is that address).
	KeyFile string
	// Contract is the ProjectStateAnchor on the external chain; "" deploys
	// one (see openCheckpoint).
	Contract      string
	Interval      time.Duration // default 1 h
	Confirmations uint64        // default 1
}

// openCheckpoint connects to the external chain at rpcURL with the key in
// keyFile (fallback when keyFile is ""), bound to the contract at contract,
// deploying one first when contract is "".
//
// The deployed address is only logged: [chain.checkpoint] contract must be
// set to it before the next start, or the next start deploys again (on a
// public chain that costs gas, and earlier checkpoints are in the old
// contract). The persistence rules of [chain] contract (persisted, never
// silently redeployed, a changed contract refused) should apply here as
// well, keyed by the checkpoint chain.
func openCheckpoint(ctx context.Context, rpcURL, keyFile, contract string, fallback *ecdsa.PrivateKey, log *slog.Logger) (anchor.Chain, error) {
	key := fallback
	if keyFile != "" {
		k, err := ethcrypto.LoadECDSA(keyFile)
		if err != nil {
			return nil, fmt.Errorf("reading the checkpoint key %s: %w", keyFile, err)
		}
		key = k
	}
	if key == nil {
		return nil, errors.New("[chain.checkpoint] needs key_file (or the master seed): checkpoints are sent by the account that owns the contract")
	}
	if contract == "" {
		addr, err := anchor.Deploy(ctx, rpcURL, key)
		if err != nil {
			return nil, fmt.Errorf("deploying ProjectStateAnchor for checkpoints: %w", err)
		}
		log.Warn("deployed ProjectStateAnchor for checkpoints; put it in config.toml ([chain.checkpoint] contract) so restarts use it",
			"contract", addr.Hex())
		contract = addr.Hex()
	}
	if !common.IsHexAddress(contract) {
		return nil, fmt.Errorf("[chain.checkpoint] contract %q is not an address", contract)
	}
	ch, err := anchor.DialRPC(ctx, rpcURL, common.HexToAddress(contract), key)
	if err != nil {
		return nil, fmt.Errorf("connecting to the checkpoint chain: %w", err)
	}
	return ch, nil
}

// buildCheckpointing opens the checkpoint chain and makes home's
// Checkpointer (nil, nil when checkpoints are off). Call it on home, after
// the anchoring chain is open (d.chain), from buildEdges.
func (d *Daemon) buildCheckpointing(ctx context.Context, s checkpointSettings) (*anchor.Checkpointer, error) {
	if s.RPCURL == "" {
		return nil, nil
	}
	if d.chain == nil {
		return nil, errors.New("[chain.checkpoint] is set but there is no anchoring chain to checkpoint")
	}
	var fallback *ecdsa.PrivateKey
	if d.h.HasSeed() {
		fallback = d.h.Seed().AnchorKey()
	}
	log := d.log.With("component", "checkpoint")
	ch, err := openCheckpoint(ctx, s.RPCURL, s.KeyFile, s.Contract, fallback, log)
	if err != nil {
		return nil, err
	}
	cp, err := d.buildCheckpointer(ch, s, log)
	if err != nil {
		ch.Close()
		return nil, err
	}
	return cp, nil
}

// buildCheckpointer makes the Checkpointer over ch, registers it as a
// home-only service with its metrics, and closes ch with the daemon.
func (d *Daemon) buildCheckpointer(ch anchor.Chain, s checkpointSettings, log *slog.Logger) (*anchor.Checkpointer, error) {
	info, dev := ch.Info(), d.chain.Info()
	if info.ChainID == dev.ChainID && strings.EqualFold(info.Contract, dev.Contract) {
		return nil, fmt.Errorf("[chain.checkpoint] points at the anchoring chain itself (chain %d, contract %s): checkpoints go to another chain", info.ChainID, info.Contract)
	}
	d.onClose(ch.Close)
	cp := anchor.NewCheckpointer(anchor.CheckpointerConfig{DB: d.db, Writer: d.writer, Chain: ch, Clock: d.clk,
		Interval: s.Interval, Confirmations: s.Confirmations, RPCURL: s.PublicRPCURL, Logger: log})
	d.homeOnly = append(d.homeOnly, service{"checkpoints", cp.Serve})
	d.metrics.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "crow_checkpoints_total",
			Help: "Checkpoints of anchored roots sent to the external chain by this home."}, func() float64 { return float64(cp.Stats().Checkpoints) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "crow_checkpoint_roots_total",
			Help: "Anchored roots covered by those checkpoints."}, func() float64 { return float64(cp.Stats().Roots) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "crow_checkpoint_failed_rounds_total",
			Help: "Checkpoint rounds that failed and were retried."}, func() float64 { return float64(cp.Stats().Failures) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "crow_checkpoint_last_success_timestamp_seconds",
			Help: "When a checkpoint round last succeeded (unix seconds; 0: never)."}, func() float64 {
			if t := cp.Stats().LastSuccess; !t.IsZero() {
				return float64(t.Unix())
			}
			return 0
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "crow_checkpoint_last_block",
			Help: "Block number, on the external chain, of the newest checkpoint (0: none)."}, func() float64 { return float64(cp.Stats().LastBlock) }),
	)
	log.Info("checkpointing chain", "chain_id", info.ChainID, "contract", info.Contract, "account", info.Account,
		"interval", cmp.Or(s.Interval, time.Hour))
	return cp, nil
}
