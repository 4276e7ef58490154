package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/crow-sync/crow/anchor"
	"github.com/crow-sync/crow/federation"
	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/registry"
)

// buildEdges is stage 4: federation, the chain and anchoring, the gateway.
func (d *Daemon) buildEdges(openChain func(ctx context.Context, log *slog.Logger) (anchor.Chain, error), noNumbering bool) error {
	d.fed = federation.NewClient(federation.ClientConfig{
		Self: d.h.InstanceID, SelfName: d.h.Name,
		Tokens: federation.NewTokenSource(d.h.InstanceID, d.h.InstanceKey(), d.clk),
		Peers:  d.federationPeers,
		Home:   d.federationHome,
		Clock:  d.clk,
		Logger: d.log.With("component", "federation"),
	})
	d.onClose("federation", d.fed.Close)

	chain, err := openChain(context.Background(), d.log)
	if err != nil {
		return err
	}
	if chain != nil {
		d.chain = chain
		d.onClose("chain", chain.Close)
		info := chain.Info()
		d.log.Info("anchoring chain", "kind", info.Kind, "chain_id", info.ChainID, "contract", info.Contract, "account", info.Account)
	}
	d.ln, err = net.Listen("tcp", d.cfg.Settings.Listen)
	if err != nil {
		return fmt.Errorf("gateway listen on %s: %w", d.cfg.Settings.Listen, err)
	}
	d.onClose("gateway listener", func() error { d.ln.Close(); return nil }) // closed by the gateway when it served
	d.gatewayURL = d.cfg.Settings.GatewayURL
	if d.gatewayURL == "" {
		d.gatewayURL = "http://" + d.ln.Addr().String()
	}

	kickAnchoring := func() {}
	if d.h.Role == registry.RoleHome {
		if d.chain != nil {
			kickAnchoring = d.buildAnchoring()
			if d.checkpointer, err = d.buildCheckpointing(context.Background()); err != nil {
				return err
			}
		}
		// Home numbers memories (SPEC §10): one total order for every
		// instance, replicated through the home-written memory_numbers table.
		if !noNumbering {
			d.homeOnly = append(d.homeOnly, service{"numbering", d.numberer().Serve})
		}
	}
	d.createdAt = instanceCreatedAt(d.h.InstanceIDFile())
	return d.buildGateway(kickAnchoring)
}

// buildAnchoring makes home's anchoring worker and its metrics; it returns
// the kick the gateway calls after a new state version.
func (d *Daemon) buildAnchoring() (kick func()) {
	worker := anchor.NewWorker(anchor.WorkerConfig{DB: d.db, Writer: d.writer, Chain: d.chain, Seed: d.h.Seed(),
		Clock: d.clk, RPCURL: d.publicChainRPC(), Confirmations: d.cfg.Settings.Chain.ConfirmationsOrDefault(),
		// A promoted home sends again the roots its chain lacks (role.go).
		Recheck: d.promoted(),
		Quiet:   d.quiet,
		Logger:  d.log.With("component", "anchor")})
	d.anchorWorker = worker
	d.homeOnly = append(d.homeOnly, service{"anchoring", worker.Serve})
	d.metrics.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "crow_anchor_states_total",
			Help: "State versions anchored on chain by this home."}, func() float64 { return float64(worker.Stats().States) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "crow_anchor_memories_total",
			Help: "Memories (event hashes, encrypted content) anchored on chain by this home."}, func() float64 { return float64(worker.Stats().Memories) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "crow_anchor_deferred_seconds_total",
			Help: "Time the anchoring worker waited for a pause in API writes and replication before sending."},
			func() float64 { return d.quiet.Waited().Seconds() }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "crow_anchor_failed_rounds_total",
			Help: "Anchoring rounds that failed and were retried."}, func() float64 { return float64(worker.Stats().Failures) }),
	)
	return worker.Kick
}

// federationPeers is the registry's peer list as federation peers.
func (d *Daemon) federationPeers() []federation.Peer {
	eps := d.reg.Endpoints()
	out := make([]federation.Peer, 0, len(eps))
	for _, p := range eps {
		out = append(out, federation.Peer{ID: p.ID, Name: p.Name, GatewayURL: p.GatewayURL, Online: p.Online})
	}
	return out
}

// federationHome is the registry's home instance, where consolidations go.
func (d *Daemon) federationHome() (federation.Peer, error) {
	in, err := d.reg.Home()
	if err != nil {
		return federation.Peer{}, err
	}
	return federation.Peer{ID: in.ID, Name: in.Name, GatewayURL: in.GatewayURL}, nil
}

// instanceCreatedAt is when this instance was initialised: the time its
// instance-id file (written once, never rewritten) was created.
func instanceCreatedAt(instanceIDFile string) time.Time {
	st, err := os.Stat(instanceIDFile)
	if err != nil {
		return time.Unix(0, 0).UTC()
	}
	return st.ModTime().UTC().Truncate(time.Second)
}

// numberer is home's Numberer on the daemon's clock.
func (d *Daemon) numberer() *memory.Numberer {
	n := memory.NewNumberer(d.db, d.writer, d.log.With("component", "numbering"))
	n.Foreground = d.quiet
	n.Clock = d.clk
	return n
}

// publicChainRPC is the chain's public JSON-RPC endpoint, published in
// verification packets: this gateway's own /v1/chain/rpc for the embedded
// chain; for an external chain, [chain] public_rpc_url (never rpc_url,
// which may carry an API key).
func (d *Daemon) publicChainRPC() string {
	if d.chain == nil {
		return ""
	}
	if d.chain.Info().Kind != anchor.KindEmbedded {
		return d.cfg.Settings.Chain.PublicRPCURL
	}
	return strings.TrimSuffix(d.gatewayURL, "/") + "/v1/chain/rpc"
}
