package daemon

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/crow-sync/crow/anchor"
	"github.com/crow-sync/crow/clock"
	"github.com/crow-sync/crow/feed"
	"github.com/crow-sync/crow/forget"
	"github.com/crow-sync/crow/home"
	"github.com/crow-sync/crow/reenroll"
	"github.com/crow-sync/crow/registry"
	"github.com/crow-sync/crow/store"
	crowsync "github.com/crow-sync/crow/sync"
	"github.com/crow-sync/crow/sync/apply"
	"github.com/crow-sync/crow/sync/feeds"
	"github.com/crow-sync/crow/sync/protocol"
	"github.com/crow-sync/crow/sync/transport"
)

// signal is a wake-up with at most one pending: Notify never blocks.
type signal struct{ c chan struct{} }

func newSignal() *signal { return &signal{c: make(chan struct{}, 1)} }

func (s *signal) Notify() {
	select {
	case s.c <- struct{}{}:
	default:
	}
}

// buildReplication is stage 3: the apply loop, the sync feeds, the
// transport and the sync node.
func (d *Daemon) buildReplication(open func(TransportConfig) (Transport, error)) error {
	applyMetrics, err := apply.NewMetrics(d.metrics)
	if err != nil {
		return err
	}
	// The apply loop turns replicated feeds into rows; conflicts are recorded.
	d.applier, err = apply.New(apply.Options{
		DB: d.db, Replicas: d.reps, Conflicts: d.conflicts, Self: d.own.Key(), InstanceID: d.h.InstanceID,
		FeedTrust: d.feedTrust, Metrics: applyMetrics, Logger: d.log, Clock: d.clk,
		// A demoted home's numbers above its successor's base (role.go).
		Refuse: d.refuseNumber,
		OnApplied: func(table string, _ *store.Row) {
			if table == store.TableCrowInstances || table == store.TableCrowRevocations {
				if err := d.reg.Reload(context.Background()); err != nil {
					d.log.Warn("reloading the registry after replication", "err", err)
				}
			}
		},
	})
	if err != nil {
		return err
	}
	// Forgets (SPEC §10): every instance erases a forgotten memory's content; home also
	// erases its versions' and destroys its data key.
	isHome := d.h.Role == registry.RoleHome
	d.forgetter, err = forget.New(forget.Options{
		DB: d.db, Writer: d.writer, Own: d.own, Replicas: d.reps, Conflicts: d.conflicts, Index: d.index,
		Home: isHome, Shred: func(id string) error { return anchor.ShredMemoryKey(d.db, id) },
		Clock: d.clk, Logger: d.log,
	})
	if err != nil {
		return err
	}
	// Reenrollment of a forked copy: right after a restart under the new
	// identity, the old feed's fork branch is archived and deleted before
	// replication starts (then its genuine branch replicates from peers).
	d.reenroll = reenroll.New(reenroll.Config{
		Self: d.h.InstanceID, Home: d.h, DB: d.db, Own: d.own, Reps: d.reps, Writer: d.writer, Join: joinHome,
		Reapply: func() { d.applier.Notify() },
		HomeOf: func() (string, string, error) {
			in, err := d.reg.Home()
			return in.ID, in.GatewayURL, err
		},
		Restart: d.requestRestart, Clock: d.clk, Logger: d.log,
	})
	if err := d.reenroll.Archive(context.Background()); err != nil {
		return err
	}
	d.syncFeeds = feeds.New(d.own, d.reps, feeds.Options{
		Logger:  d.log,
		Changes: d.changes,
		OnStored: func(feed.PublicKey, feed.State) {
			d.applier.Notify()
			d.forgetter.Notify()
			d.reenroll.Notify()
		},
		Allow: func(key feed.PublicKey) bool { return d.reg.AllowsFeed(key[:]) },
	})

	// Replication follows the registry: only registered, non-revoked
	// instances are admitted and dialled, and the operator may pause it.
	d.peers = newSignal()
	if d.pause, err = newPauseSwitch(d.h.Paths, d.peers); err != nil {
		return err
	}
	listen, err := defaultSyncListen(d.cfg.Settings.SyncListen, d.cfg.Settings.Listen)
	if err != nil {
		return err
	}
	d.tr, err = open(TransportConfig{
		Key: d.h.InstanceKey(), Listen: listen, Logger: d.log,
		Announce: d.cfg.Settings.SyncAnnounce, Registerer: d.metrics,
		Admit: syncAdmitter{d},
	})
	if err != nil {
		return fmt.Errorf("sync listen on %s: %w", listen, err)
	}
	d.onClose("sync transport", d.tr.Close)
	d.node, err = crowsync.NewNode(crowsync.Config{
		Transport: d.tr, Feeds: withTestHooks(d.log, d.getenv, d.syncFeeds), Self: crowsync.FeedKey(d.own.Key()),
		Clock: d.clk, Logger: d.log, Registerer: d.metrics, OnTraffic: d.quiet.Touch,
		OnCatchUp: func() { d.quiet.TouchFor(catchUpHold) },
		// A fork (two signed histories of one feed) stops that feed; the
		// operator hears of it through a high-priority notification.
		OnEvent: func(ev crowsync.Event) {
			if ev.Kind == protocol.EventFork {
				key := ev.Feed
				d.forks.Report(key[:])
			}
		},
	})
	return err
}

// serveRegistry keeps this instance's own row current, then keeps the sync
// node's peers equal to the registry's (but the paused ones).
func (d *Daemon) serveRegistry(ctx context.Context) error {
	// Our own row: in the table from the first start, and kept current
	// (sync addresses change when the port is chosen by the system).
	registerSelf := func() error {
		_, err := d.reg.RegisterSelf(ctx, registry.SelfInfo{
			Name: d.h.Name, Role: d.h.Role, GatewayURL: d.gatewayURL, SyncAddrs: d.tr.Addrs(), CreatedAt: d.createdAt,
		})
		return err
	}
	err := registerSelf()
	switch {
	case errors.Is(err, registry.ErrRevoked):
		return fmt.Errorf("this instance has been revoked; it cannot serve this identity any more: %w", err)
	case errors.Is(err, feed.ErrOwnForked):
		// A forked copy writes nothing until it is reenrolled (which
		// restarts the daemon); reads and replication of others go on.
		d.log.Warn("own registry row not updated: this instance's feed forked", "err", err)
	case errors.Is(err, store.ErrDiskFull):
		// A full disk must not stop the daemon (reads, sync status and the UI
		// keep working): the own row is written once space returns.
		d.log.Warn("own registry row not updated: disk full; retrying every 10s", "err", err)
		retried := make(chan struct{})
		defer func() { <-retried }()
		go func() {
			defer close(retried)
			t := d.clk.NewTicker(10 * time.Second)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C():
				}
				err := registerSelf()
				if err == nil {
					d.log.Info("own registry row updated after the disk had been full")
					return
				}
				if !errors.Is(err, store.ErrDiskFull) {
					d.log.Error("updating own registry row", "err", err)
					return
				}
			}
		}()
	case err != nil:
		return err
	}
	unsub := d.reg.Subscribe(func(registry.Event) {
		d.peers.Notify()
		// A certificate that arrived unparks its feed.
		d.applier.Notify()
	})
	defer unsub()
	if e, ok := d.h.PendingJoin(); ok {
		go d.completeJoin(ctx, e)
	}
	return crowsync.FollowPeers(ctx, d.node, d.syncPeers, d.peers.c, d.syncFarewell)
}

// revokedFarewell is how long a revoked instance keeps its open sync session:
// time enough to be announced, and to fetch, the head whose entry revokes it,
// so it learns of its revocation (and stops) instead of retrying for ever. It
// cannot open a new session, and nothing it sends is applied any more.
const revokedFarewell = 3 * time.Second

// syncFarewell gives a revoked instance its farewell; a paused or removed
// peer is cut at once.
func (d *Daemon) syncFarewell(p crowsync.PeerID) time.Duration {
	pub, err := p.PublicKey()
	if err != nil || (&syncAdmitter{d}).paused(p) {
		return 0
	}
	if st, _ := d.reg.KeyStatus(pub); st == registry.KeyRevoked {
		return revokedFarewell
	}
	return 0
}

// completeJoin finishes an enrollment by invitation at the first start: it
// registers home (whose URL the invite carried) and asks home to register
// this instance back, the normal registration on both sides, retrying until
// it succeeds. The registry then replicates from home.
func (d *Daemon) completeJoin(ctx context.Context, e home.Enrollment) {
	wait := time.Second
	for {
		in, announceErr, err := d.reg.Join(ctx, e.HomeURL, d.gatewayURL)
		if err == nil && announceErr == nil {
			if err := d.h.ClearPendingJoin(); err != nil {
				d.log.Warn("clearing the pending enrollment", "err", err)
			}
			d.log.Info("enrolled: home registered and registered us back", "home", in.ID, "url", e.HomeURL)
			return
		}
		d.log.Warn("completing the enrollment with home; retrying", "home", e.HomeURL, "err", errors.Join(err, announceErr), "in", wait)
		if clock.Wait(ctx, d.clk, wait) != nil {
			return
		}
		wait = min(2*wait, time.Minute)
	}
}

// syncPeers is the registry's peer list as sync peers.
func (d *Daemon) syncPeers() []crowsync.Peer {
	if d.pause.Paused() {
		return nil
	}
	var out []crowsync.Peer
	for _, p := range d.reg.Endpoints() {
		if d.pause.PeerPaused(p.ID) {
			continue // paused by the operator: not dialled (and refused by the gater)
		}
		id, err := transport.PeerIDFromPublicKey(p.Key)
		if err != nil {
			continue
		}
		addrs := p.SyncAddrs
		if pinned, ok := d.cfg.Settings.SyncDial[p.ID]; ok {
			addrs = pinned // the operator's path to this peer (e.g. through a proxy)
		}
		out = append(out, crowsync.Peer{ID: id, Addrs: addrs})
	}
	return out
}

// feedTrust is the apply loop's view of the registry (SPEC §2): a feed is
// applied only while its key holds a valid, unrevoked certificate, and only
// for the instance it certifies; whoever relayed it does not matter.
func (d *Daemon) feedTrust(key feed.PublicKey) (apply.Trust, string) {
	switch st, id := d.reg.KeyStatus(key[:]); st {
	case registry.KeyCertified:
		return apply.TrustCertified, id
	case registry.KeyRevoked:
		return apply.TrustRevoked, id
	}
	return apply.TrustUnknown, ""
}
