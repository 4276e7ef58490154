package daemon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"time"

	"github.com/crow-sync/crow/anchor"
	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/conflicts"
	"github.com/crow-sync/crow/federation"
	"github.com/crow-sync/crow/gateway"
	"github.com/crow-sync/crow/identity"
	"github.com/crow-sync/crow/records"
	"github.com/crow-sync/crow/registry"
)

// buildGateway is all of the edges' wiring: the operations (app) over every
// stage's parts, and the gateway that serves them. kickAnchoring is called
// after a new state version.
func (d *Daemon) buildGateway(kickAnchoring func()) {
	h := d.h
	var chain app.ChainReader
	if d.chain != nil {
		chain = d.chain
	}
	keys := gateway.NewKeyChecker(h.APIKeyHash())
	deps := app.Deps{
		Logger: d.log,
		Clock:  d.clk,
		Self: app.Self{
			InstanceID: h.InstanceID, Name: h.Name, Role: h.Role, CrowID: h.CrowID,
			PublicKey: hex.EncodeToString(h.PublicKey), Version: d.cfg.Version,
			GatewayURL: d.gatewayURL, CreatedAt: d.createdAt.Format(time.RFC3339),
			SyncAddrs: d.tr.Addrs, Certificate: d.cert.String(),
		},
		Sign:      func(c []byte) []byte { return identity.SignChallenge(h.InstanceKey(), c, h.InstanceID) },
		Memories:  d.mem,
		Records:   records.NewService(d.db, d.writer, d.index, records.Options{Clock: d.clk}),
		Instances: d.reg,
		DB:        d.db,
		Writer:    d.writer,
		Conflicts: d.conflicts,
		Recovery:  conflicts.NewRecovery(d.conflicts, d.writer),
		SyncNode:  d.node,
		SyncFeeds: d.syncFeeds,
		SyncPause: func(p bool) {
			d.pause.Set(p)
			d.log.Info("sync paused by the operator", "paused", p)
		},
		SyncPaused: d.pause.Paused,
		// The new key is on disk before the gateway accepts it (and only it).
		RotateAPIKey: func() (string, error) {
			key, err := h.RotateAPIKey()
			if err == nil {
				keys.SetHash(sha256.Sum256([]byte(key)))
			}
			return key, err
		},
		Promote: func(ctx context.Context, force bool) (app.Promoted, error) {
			p, err := d.promote(ctx, force)
			if err != nil {
				return app.Promoted{}, err
			}
			return app.Promoted{InstanceID: p.Record.InstanceID, Name: h.Name, Epoch: p.Record.Epoch, Base: p.Record.Base,
				PreviousHome: p.PreviousHome, IssuedAt: p.Record.IssuedAt.Format(time.RFC3339), Restarting: true}, nil
		},
		Projects:     d.projects,
		Forwarder:    d.fed,
		Consolidated: kickAnchoring,
		Chain:        chain,
		ProjectID:    d.projectID(),
		AnchorWorker: d.anchorWorker,
		ChainRPCURL:  d.publicChainRPC(),
		Prover:       d.prover(),
		Federation:   d.fed,
		Reenroll:     d.reenroll,
	}
	// The summaries cache puts this instance's own summary first: computed
	// by federation.Local, as the app's summaries operation does.
	self := federation.Local{InstanceID: h.InstanceID, Name: h.Name, Memories: d.mem, Clock: d.clk}
	d.summaries = federation.NewSummaries(d.fed, d.clk, self.Summary)
	deps.Summaries = d.summaries
	deps.KickSummaries = d.summaries.Kick
	a := app.New(deps)
	// A new instance's summary is fetched when it is registered, not at the
	// next 5-minute round.
	unsubscribe := d.reg.Subscribe(func(ev registry.Event) {
		if ev.Kind == registry.EventAdded {
			d.summaries.Kick()
		}
	})
	d.onClose(func() error { unsubscribe(); return nil })

	// The embedded chain's JSON-RPC, public and read-only, where packets
	// say it is (publicChainRPC). An RPC backend's rpc_url is never
	// published, so it is not proxied either.
	var chainRPC http.Handler
	if src, ok := d.chain.(anchor.RPCSource); ok && d.publicChainRPC() != "" {
		chainRPC = anchor.NewPublicRPC(src, d.log.With("component", "chainrpc"))
	}

	d.gw = gateway.New(gateway.Config{
		Logger:          d.log,
		App:             a,
		Keys:            keys,
		Writer:          d.writer,
		Remote:          d.fed,
		VerifyPeerToken: federation.Verifier(h.InstanceID, d.clk, d.reg.PeerKey),
		// A token of an instance not registered here yet is the start-up
		// race, not an attack, within the registry's grace.
		ExpectedTokenRefusal: func(token string, err error) bool {
			issuer, ok := federation.ClaimedIssuer(token)
			return ok && errors.Is(err, registry.ErrNotFound) && d.reg.ExpectedIDRefusal(issuer)
		},
		Metrics:  d.metrics,
		ChainRPC: chainRPC,
	})
}

// projectID names projects on chain: home computes the keyed id from the
// seed; an instance without the seed reads it from home's replicated anchor
// records.
func (d *Daemon) projectID() func(string) ([32]byte, bool) {
	if d.h.HasSeed() {
		return anchor.SeedProjectID(d.h.Seed())
	}
	return anchor.RecordsProjectID(d.db)
}

// prover proves numbered memories with what this instance holds: home has
// the chain, the seed and the data keys; any other instance answers from
// home's replicated anchor records (and the chain, if it reads one).
func (d *Daemon) prover() anchor.Prover {
	p := anchor.Prover{DB: d.db, Versions: anchor.MemoryVersions{DB: d.db}}
	if mc, ok := d.chain.(anchor.MemoryChain); ok {
		p.Chain = mc
	}
	// Only home holds data keys (never replicated): a satellite that
	// imported the seed still sends decryption to home.
	if d.h.Role == registry.RoleHome && d.h.HasSeed() {
		seed := d.h.Seed()
		p.Seed = &seed
	}
	return p
}
