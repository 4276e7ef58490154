package daemon

import (
	"context"
	"encoding/hex"
	"time"

	"github.com/crow-sync/crow/conflicts"
	"github.com/crow-sync/crow/federation"
	"github.com/crow-sync/crow/gateway"
	"github.com/crow-sync/crow/identity"
	"github.com/crow-sync/crow/registry"
)

// summaryHook is this instance's own summary for federation's summary
// cache, which the gateway both uses and computes (Server.LocalSummary):
// buildGateway makes the cache with the hook, then sets the hook to the
// gateway it built, before any part runs.
type summaryHook struct {
	local func(ctx context.Context) (federation.Summary, error)
}

func (s *summaryHook) summary(ctx context.Context) (federation.Summary, error) { return s.local(ctx) }

// buildGateway is all of the gateway's wiring: what it is given of every
// stage. kickAnchoring is called after a new state version.
func (d *Daemon) buildGateway(kickAnchoring func()) {
	var hook summaryHook
	d.summaries = federation.NewSummaries(d.fed, d.clk, hook.summary)
	// A new instance's summary is fetched when it is registered, not at the
	// next 5-minute round.
	unsubscribe := d.reg.Subscribe(func(ev registry.Event) {
		if ev.Kind == registry.EventAdded {
			d.summaries.Kick()
		}
	})
	d.onClose(func() error { unsubscribe(); return nil })

	var chain gateway.ChainReader
	if d.chain != nil {
		chain = d.chain
	}
	h := d.h
	d.gw = gateway.New(gateway.Config{
		Logger: d.log,
		Self: gateway.Self{
			InstanceID: h.InstanceID, Name: h.Name, Role: h.Role, CrowID: h.CrowID,
			PublicKey: hex.EncodeToString(h.PublicKey), Version: d.cfg.Version,
			GatewayURL: d.gatewayURL, CreatedAt: d.createdAt.Format(time.RFC3339),
			SyncAddrs: d.tr.Addrs,
		},
		Keys:         gateway.NewKeyChecker(h.APIKeyHash()),
		RotateAPIKey: h.RotateAPIKey,
		Sign:         func(c []byte) []byte { return identity.SignChallenge(h.InstanceKey(), c, h.InstanceID) },
		Memories:     d.mem,
		Instances:    d.reg,
		DB:           d.db,
		Writer:       d.writer,
		Conflicts:    d.conflicts,
		Recovery:     conflicts.NewRecovery(d.conflicts, d.writer),
		Remote:       d.fed,
		Federation:   d.fed,
		Summaries:    d.summaries,

		Projects:             d.projects,
		ForwardConsolidation: d.fed.Consolidate,
		Chain:                chain,
		ProjectID:            h.Seed().ProjectIDHash,
		Consolidated:         kickAnchoring,
		VerifyPeerToken:      federation.Verifier(h.InstanceID, d.clk, d.reg.PeerKey),
		PeerAllowed:          federation.PeerAllowList(h.Role == registry.RoleHome).Allowed,
		SyncNode:             d.node,
		SyncFeeds:            d.syncFeeds,
		SyncPause: func(p bool) {
			d.pause.Set(p)
			d.log.Info("sync paused by the operator", "paused", p)
		},
		SyncPaused: d.pause.Paused,
		Metrics:    d.metrics,
	})
	hook.local = d.gw.LocalSummary
}
