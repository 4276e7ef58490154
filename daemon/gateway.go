package daemon

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"path/filepath"
	"time"

	"github.com/crow-sync/crow/anchor"
	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/changes"
	"github.com/crow-sync/crow/conflicts"
	"github.com/crow-sync/crow/federation"
	"github.com/crow-sync/crow/gateway"
	"github.com/crow-sync/crow/home"
	"github.com/crow-sync/crow/identity"
	"github.com/crow-sync/crow/records"
	"github.com/crow-sync/crow/registry"
)

// buildGateway is all of the edges' wiring: the operations (app) over every
// stage's parts, and the gateway that serves them. kickAnchoring is called
// after a new state version.
func (d *Daemon) buildGateway(kickAnchoring func()) error {
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
		SyncPause: func(id string, p bool) error {
			if err := d.pause.Set(id, p); err != nil {
				return err
			}
			d.log.Info("sync paused by the operator", "peer", cmp.Or(id, "all"), "paused", p)
			return nil
		},
		SyncPaused: func() (bool, []string) { s := d.pause.Saved(); return s.All, s.Peers },
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
		Foreground:   d.quiet.Touch,
		Chain:        chain,
		ProjectID:    d.projectID(),
		AnchorWorker: d.anchorWorker,
		ChainRPCURL:  d.publicChainRPC(),
		Prover:       d.prover(),
		Federation:   d.fed,
		Reenroll:     d.reenroll,
		Config:       d.configShown(),
		Doctor:       d.doctorEnv(),
		PeerCalls:    d.fed,
		Changes: changes.New(changes.Options{DB: d.db, Feeds: d.reps, Self: h.InstanceID, Name: func(id string) string {
			if in, err := d.reg.Get(id); err == nil {
				return in.Name
			}
			return ""
		}}),
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
	d.onClose("gateway subscription", func() error { unsubscribe(); return nil })

	// The embedded chain's JSON-RPC, public and read-only, where packets
	// say it is (publicChainRPC). An RPC backend's rpc_url is never
	// published, so it is not proxied either.
	var chainRPC http.Handler
	if src, ok := d.chain.(anchor.RPCSource); ok && d.publicChainRPC() != "" {
		chainRPC = anchor.NewPublicRPC(src, d.log.With("component", "chainrpc"))
	}

	// Tokens accepted stay refused across restarts while they live.
	verify, replayLog, err := federation.PersistentVerifier(h.InstanceID, d.clk, d.reg.PeerKey, filepath.Join(h.Root, ReplayLogName))
	if err != nil {
		return err
	}
	d.onClose("replay log", replayLog.Close)

	d.gw = gateway.New(gateway.Config{
		Logger:          d.log,
		App:             a,
		Keys:            keys,
		Writer:          d.writer,
		Remote:          d.fed,
		VerifyPeerToken: verify,
		// A token of an instance not registered here yet is the start-up
		// race, not an attack, within the registry's grace.
		ExpectedTokenRefusal: func(token string, err error) bool {
			issuer, ok := federation.ClaimedIssuer(token)
			return ok && errors.Is(err, registry.ErrNotFound) && d.reg.ExpectedIDRefusal(issuer)
		},
		Metrics:  d.metrics,
		ChainRPC: chainRPC,
	})
	return nil
}

// ReplayLogName is the file in $CROW_HOME that keeps the federation tokens
// accepted, while they live (federation.ReplayLog).
const ReplayLogName = "federation-tokens.log"

// doctorEnv is what crow doctor reads of this daemon: its files and
// addresses.
func (d *Daemon) doctorEnv() *app.DoctorEnv {
	env := &app.DoctorEnv{HomeDir: d.h.Root, HasSeed: d.h.HasSeed(), Locked: d.h.LockedAtRest(),
		Listen: d.ln.Addr().String(), GatewayURL: d.cfg.Settings.GatewayURL}
	for _, f := range []string{d.cfg.Settings.Chain.KeyFile, d.cfg.Settings.Chain.Checkpoint.KeyFile} {
		if f != "" {
			env.SecretFiles = append(env.SecretFiles, f)
		}
	}
	return env
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

// configShown is the answer of config.show.
func (d *Daemon) configShown() *app.ConfigShown {
	shown := d.cfg.Shown
	if shown == nil {
		shown = home.Settings(d.cfg.Settings, nil)
	}
	return &app.ConfigShown{File: d.h.ConfigFile(), Settings: shown}
}
