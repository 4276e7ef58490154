package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/crow-sync/crow/anchor"
	"github.com/crow-sync/crow/clock"
	"github.com/crow-sync/crow/doctor"
	"github.com/crow-sync/crow/federation"
	"github.com/crow-sync/crow/registry"
	"github.com/crow-sync/crow/store"
)

// DoctorReport is the answer of doctor.run (package doctor owns it).
type DoctorReport = doctor.Report

// DoctorEnv is what doctor.run reads beyond the other parts: the daemon's
// files and addresses.
type DoctorEnv struct {
	// HomeDir is $CROW_HOME; HasSeed and Locked say whether it holds the
	// master seed and whether that is encrypted at rest.
	HomeDir         string
	HasSeed, Locked bool
	// SecretFiles are more files holding secrets (the chain key files).
	SecretFiles []string
	// Listen is the address the gateway is bound to; GatewayURL the
	// configured gateway_url ("" when unset).
	Listen, GatewayURL string
}

// PeerCaller makes the federated calls of the peer checks
// (*federation.Client).
type PeerCaller interface {
	Ping(ctx context.Context, instanceID string) (federation.Pong, error)
	PeerCheck(ctx context.Context, instanceID string) (federation.CheckAnswer, error)
}

var (
	// DoctorRun checks this instance and its peers (package doctor).
	DoctorRun = define(&Def[NoInput, DoctorReport]{
		Spec: Spec{Name: "doctor.run", Method: "GET", Path: "/v1/doctor", Tool: "crow_doctor", Tag: "operations",
			Title:   "Check this instance",
			Summary: "Check this instance and its peers: files, seed, store, addresses, peers, tokens, clocks, chain, forks",
			Description: "Runs every check of crow doctor on this instance: secret files and their permissions, the seed, the store and " +
				"its free space, the gateway and sync addresses against the peers', each peer (reachable, certificate, federation " +
				"tokens both ways, clock skew), the anchoring chain and the own feed's fork. Each finding has a status (ok, warn, " +
				"problem), a message and what to do.",
			ReadOnly: true, NoRoute: true},
		Impl: (*App).doctorRun,
	})
	// PeerPing answers a peer's federated call with this instance's id and
	// clock: the callback of peer.check.
	PeerPing = define(&Def[NoInput, federation.Pong]{
		Spec: Spec{Name: "peer.ping", Tool: federation.PingTool, Tag: "instance", Title: "Answer a peer's ping",
			Summary: "This instance's id and clock, for a peer checking that its federation token is accepted here",
			Description: "Answers a federated call with this instance's id and clock. Peers call it back during crow_peer_check: " +
				"an answer proves their federation token is accepted here.",
			Access: Peer, ReadOnly: true, Idempotent: true, NoRoute: true},
		Impl: func(a *App, ctx context.Context, _ NoInput) (federation.Pong, error) { return a.pong(), nil },
	})
	// PeerCheckOp lets a peer check its federation tokens both ways: the
	// peer's call proves its token is accepted here, and this instance calls
	// the peer's peer.ping back with its own.
	PeerCheckOp = define(&Def[NoInput, federation.CheckAnswer]{
		Spec: Spec{Name: "peer.check", Tool: federation.CheckTool, Tag: "instance", Title: "Call a peer back",
			Summary: "Called by a peer over federation: this instance calls that peer back and answers whether its token was accepted",
			Description: "For crow doctor on a peer: the call itself proves the peer's federation token is accepted here; this " +
				"instance then calls the peer's crow_peer_ping with its own token and answers whether that was accepted, and its clock.",
			Access: Peer, ReadOnly: true, Idempotent: true, NoRoute: true},
		Impl: (*App).peerCheck,
	})
)

func (a *App) pong() federation.Pong {
	return federation.Pong{InstanceID: a.d.Self.InstanceID, Time: clock.Or(a.d.Clock).Now().UTC().Format(time.RFC3339Nano)}
}

// peerCheck calls the calling peer back.
func (a *App) peerCheck(ctx context.Context, _ NoInput) (federation.CheckAnswer, error) {
	peer, ok := PeerOf(ctx)
	if !ok {
		return federation.CheckAnswer{}, Invalidf("%s is called by a peer instance over federation (crow doctor on that instance)", federation.CheckTool)
	}
	if a.d.PeerCalls == nil {
		return federation.CheckAnswer{}, unavailable("federation client")
	}
	ans := federation.CheckAnswer{Pong: a.pong()}
	pong, err := a.d.PeerCalls.Ping(ctx, peer)
	switch {
	case err != nil:
		ans.CallbackError = err.Error()
	case pong.InstanceID != peer:
		ans.CallbackError = fmt.Sprintf("instance %s answered for %s", pong.InstanceID, peer)
	default:
		ans.CallbackOK = true
	}
	return ans, nil
}

func (a *App) doctorRun(ctx context.Context, _ NoInput) (DoctorReport, error) {
	if a.d.Doctor == nil {
		return DoctorReport{}, unavailable("doctor")
	}
	de := a.d.Doctor
	self := a.d.Self
	env := doctor.Env{
		Self: doctor.Self{InstanceID: self.InstanceID, Name: self.Name, Role: self.Role},
		Now:  clock.Or(a.d.Clock).Now,
		Files: doctor.Files{Dir: de.HomeDir, HasSeed: de.HasSeed, Locked: de.Locked,
			Extra: de.SecretFiles},
		Net: doctor.Net{Listen: de.Listen, GatewayURL: de.GatewayURL, Advertised: self.GatewayURL},
		Chain: func(ctx context.Context) (anchor.ChainStatus, error) {
			var ch anchor.Chain
			if c, ok := a.d.Chain.(anchor.Chain); ok {
				ch = c
			}
			return anchor.Status(ctx, ch, a.d.DB, a.d.AnchorWorker, a.d.ChainRPCURL)
		},
	}
	if self.SyncAddrs != nil {
		env.Net.SyncAddrs = self.SyncAddrs()
	}
	if a.d.DB != nil {
		env.Store = doctorStore{a.d.DB}
	}
	if reg := a.d.Instances; reg != nil {
		for _, in := range reg.List() {
			if in.ID == self.InstanceID {
				env.Self.Revoked, env.Self.RevokedAt = in.Revoked(), in.RevokedAt
				continue
			}
			env.Peers = append(env.Peers, doctor.Peer{ID: in.ID, Name: in.Name, Role: in.Role, GatewayURL: in.GatewayURL,
				SyncAddrs: in.SyncAddrs, Revoked: in.Revoked(), RevokedAt: in.RevokedAt})
		}
		env.Probe = doctorProbes{reg: reg, calls: a.d.PeerCalls}
	}
	if m := a.d.Reenroll; m != nil {
		env.Fork = func() *doctor.Fork {
			if fe := m.Forked(); fe != nil {
				return &doctor.Fork{Error: fe.Error(), Length: fe.Length, PeerLength: fe.PeerLength}
			}
			return nil
		}
	}
	return doctor.Run(ctx, env), nil
}

// doctorStore is doctor's probe of the store.
type doctorStore struct{ db *store.DB }

func (s doctorStore) Read() error {
	return s.db.View(func(txn *store.Txn) error {
		_, err := txn.Lamport()
		return err
	})
}

func (s doctorStore) Space() (free, threshold uint64, ok bool) { return s.db.SpaceStatus() }

// doctorProbes are doctor's probes of the peers: the registry's challenged
// /health and the federated peer.check.
type doctorProbes struct {
	reg   *registry.Registry
	calls PeerCaller
}

func (p doctorProbes) Health(ctx context.Context, id string) (doctor.Health, error) {
	c, err := p.reg.CheckInstance(ctx, id)
	h := doctor.Health{Sent: c.Sent, Received: c.Received, PeerTime: c.PeerTime}
	switch {
	case err == nil:
		return h, nil
	case errors.Is(err, registry.ErrUnhealthy):
		return h, fmt.Errorf("%w: %w", doctor.ErrUnreachable, err)
	}
	return h, fmt.Errorf("%w: %w", doctor.ErrNotTrusted, err)
}

func (p doctorProbes) Callback(ctx context.Context, id string) (doctor.Callback, error) {
	if p.calls == nil {
		return doctor.Callback{}, fmt.Errorf("%w: this instance has no federation client", doctor.ErrUnreachable)
	}
	ans, err := p.calls.PeerCheck(ctx, id)
	switch {
	case errors.Is(err, federation.ErrUnauthorized):
		return doctor.Callback{}, fmt.Errorf("%w: %w", doctor.ErrRefused, err)
	case err != nil:
		return doctor.Callback{}, err
	}
	cb := doctor.Callback{CallbackOK: ans.CallbackOK, CallbackError: ans.CallbackError}
	if t, err := time.Parse(time.RFC3339Nano, ans.Time); err == nil {
		cb.PeerTime = t
	}
	return cb, nil
}
