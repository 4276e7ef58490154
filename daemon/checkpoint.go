package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/crow-sync/crow/anchor"
)

// buildCheckpointing opens the checkpoint chain ([chain.checkpoint], SPEC
// §11, opt-in; dialCheckpoint applies [chain]'s contract rules: persisted,
// never silently redeployed, a changed one refused) and makes home's
// Checkpointer (nil, nil when checkpoints are off). Call it on home, after
// the anchoring chain is open (d.chain), from buildEdges.
func (d *Daemon) buildCheckpointing(ctx context.Context) (*anchor.Checkpointer, error) {
	cc := d.cfg.Settings.Chain.Checkpoint
	if !cc.Enabled() {
		return nil, nil
	}
	if d.chain == nil {
		return nil, errors.New("[chain.checkpoint] is set but there is no anchoring chain to checkpoint")
	}
	log := d.log.With("component", "checkpoint")
	ch, err := dialCheckpoint(ctx, d.h, d.cfg.Settings, log)
	if err != nil {
		return nil, err
	}
	cp, err := d.buildCheckpointer(ch, log)
	if err != nil {
		ch.Close()
		return nil, err
	}
	return cp, nil
}

// buildCheckpointer makes the Checkpointer over ch, registers it as a
// home-only service with its metrics, and closes ch with the daemon.
func (d *Daemon) buildCheckpointer(ch anchor.Chain, log *slog.Logger) (*anchor.Checkpointer, error) {
	cc := d.cfg.Settings.Chain.Checkpoint
	info, dev := ch.Info(), d.chain.Info()
	if info.ChainID == dev.ChainID && strings.EqualFold(info.Contract, dev.Contract) {
		return nil, fmt.Errorf("[chain.checkpoint] points at the anchoring chain itself (chain %d, contract %s): checkpoints go to another chain", info.ChainID, info.Contract)
	}
	d.onClose("checkpoint log", ch.Close)
	cp := anchor.NewCheckpointer(anchor.CheckpointerConfig{DB: d.db, Writer: d.writer, Chain: ch, Clock: d.clk,
		Interval: cc.Interval.Std(), Confirmations: cc.ConfirmationsOrDefault(), RPCURL: cc.PublicRPCURL, Logger: log})
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
		"interval", cc.Interval.Std())
	return cp, nil
}
