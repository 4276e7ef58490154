package main

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/crow-sync/crow/anchor"
	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/clock"
	"github.com/crow-sync/crow/conflicts"
	"github.com/crow-sync/crow/federation"
	"github.com/crow-sync/crow/feed"
	"github.com/crow-sync/crow/gateway"
	"github.com/crow-sync/crow/home"
	"github.com/crow-sync/crow/identity"
	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/projects"
	"github.com/crow-sync/crow/registry"
	"github.com/crow-sync/crow/search"
	"github.com/crow-sync/crow/store"
	crowsync "github.com/crow-sync/crow/sync"
	"github.com/crow-sync/crow/sync/apply"
	"github.com/crow-sync/crow/sync/feeds"
	"github.com/crow-sync/crow/sync/protocol"
	"github.com/crow-sync/crow/sync/transport"
)

// serveDaemon builds the daemon's tree and runs it until ctx is done. This is
// the one place that composes the packages; each part runs as Serve(ctx).
func serveDaemon(ctx context.Context, log *slog.Logger, h *home.Home, cfg home.Config) (err error) {
	unlock, err := h.Lock()
	if err != nil {
		return err
	}
	defer unlock()
	db, err := store.Open(h.DBDir(), store.Options{Logger: log.With("component", "badger")})
	if err != nil {
		return fmt.Errorf("opening store: %w", err)
	}
	defer func() {
		if cerr := db.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("closing store: %w", cerr)
		}
	}()
	metrics := prometheus.NewRegistry()
	metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	// Feeds: our own log and the verified replicas of everyone else's.
	feedStore := feed.NewKVStorage(db)
	own, err := feed.OpenLog(feedStore, h.InstanceKey())
	if err != nil {
		return err
	}
	replicas := feed.OpenReplicas(feedStore, own.Key())
	// applier and reg are set below; replicas only grow once the sync node runs.
	var (
		applier *apply.Applier
		reg     *registry.Registry
	)
	syncFeeds := feeds.New(own, replicas, feeds.Options{
		Logger:   log,
		OnStored: func(feed.PublicKey, feed.State) { applier.Notify() },
		// A revoked instance's feed takes no new entries, whoever relays it.
		Allow: func(key feed.PublicKey) bool {
			in, err := reg.LookupKey(key[:])
			return err != nil || !in.Revoked()
		},
	})

	// The local write path appends to our feed in the row's transaction.
	writer, err := store.NewWriter(db, store.WriterOptions{InstanceID: h.InstanceID, Journal: syncFeeds.Journal(own), Logger: log})
	if err != nil {
		return err
	}
	ix, err := search.Open(h.IndexDir(), log)
	if err != nil {
		return fmt.Errorf("opening search index: %w", err)
	}
	defer ix.Close()
	indexer := search.NewIndexer(db, ix)
	mem := memory.NewService(db, writer, ix, memory.Options{})

	reg, err = registry.New(ctx, registry.Config{
		Seed: h.Seed(), SelfID: h.InstanceID,
		Table:        registry.StoreTable{DB: db, Writer: writer},
		Observations: registry.StoreObservations{DB: db},
		MirrorPath:   h.InstancesFile(), Logger: log,
	})
	if err != nil {
		return err
	}
	prober := registry.NewProber(reg, registry.ProberConfig{})

	// The apply loop turns replicated feeds into rows; conflicts are recorded.
	conflictStore := conflicts.NewStore(db, time.Now)
	applyMetrics, err := apply.NewMetrics(metrics)
	if err != nil {
		return err
	}
	applier, err = apply.New(apply.Options{
		DB: db, Replicas: replicas, Conflicts: conflictStore, Self: own.Key(), InstanceID: h.InstanceID,
		AuthorKey: h.Seed().InstancePublicKey, Metrics: applyMetrics, Logger: log,
		OnApplied: func(table string, _ *store.Row) {
			if table == store.TableCrowInstances {
				if err := reg.Reload(context.Background()); err != nil {
					log.Warn("reloading the registry after replication", "err", err)
				}
			}
		},
	})
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("gateway listen on %s: %w", cfg.Listen, err)
	}
	defer ln.Close()
	syncListen, err := defaultSyncListen(cfg.SyncListen, cfg.Listen)
	if err != nil {
		return err
	}
	// Replication follows the registry: only registered, non-revoked
	// instances are admitted and dialled, and the operator may pause it.
	var paused atomic.Bool
	peersChanged := make(chan struct{}, 1)
	notifyPeers := func() {
		select {
		case peersChanged <- struct{}{}:
		default:
		}
	}
	host, err := transport.NewHost(transport.HostConfig{
		Key: h.InstanceKey(), Listen: []string{syncListen}, Logger: log,
		Admitter: transport.AdmitFunc(func(p transport.PeerID) bool {
			pub, err := p.PublicKey()
			return err == nil && !paused.Load() && reg.IsAdmittedKey(pub)
		}),
	})
	if err != nil {
		return fmt.Errorf("sync listen on %s: %w", syncListen, err)
	}
	defer host.Close()
	// A fork (two signed histories of one feed) stops that feed; the operator
	// hears of it through a high-priority notification.
	forks := make(chan crowsync.Event, 16)
	node, err := crowsync.NewNode(crowsync.Config{
		Transport: host, Feeds: withTestHooks(log, syncFeeds), Self: crowsync.FeedKey(own.Key()), Logger: log, Registerer: metrics,
		OnEvent: func(ev crowsync.Event) {
			if ev.Kind == protocol.EventFork {
				select {
				case forks <- ev:
				default: // a burst: the notification is deduplicated anyway
				}
			}
		},
	})
	if err != nil {
		return err
	}

	gatewayURL := cfg.GatewayURL
	if gatewayURL == "" {
		gatewayURL = "http://" + ln.Addr().String()
	}
	createdAt := instanceCreatedAt(h)
	chain, err := openChain(ctx, h, cfg, log)
	if err != nil {
		return err
	}
	var (
		chainReader   app.ChainReader
		homeOnly      []service // the services only home runs
		kickAnchoring = func() {}
	)
	if chain != nil {
		defer chain.Close()
		chainReader = chain
		info := chain.Info()
		log.Info("anchoring chain", "kind", info.Kind, "chain_id", info.ChainID, "contract", info.Contract, "account", info.Account)
		if h.Role == registry.RoleHome {
			worker := anchor.NewWorker(anchor.WorkerConfig{DB: db, Writer: writer, Chain: chain, Seed: h.Seed(),
				Logger: log.With("component", "anchor")})
			homeOnly = append(homeOnly, service{"anchoring", worker.Serve})
			kickAnchoring = worker.Kick
			metrics.MustRegister(
				prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "crow_anchor_states_total",
					Help: "State versions anchored on chain by this home."}, func() float64 { return float64(worker.Stats().States) }),
				prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "crow_anchor_memories_total",
					Help: "Memories (event hashes, encrypted content) anchored on chain by this home."}, func() float64 { return float64(worker.Stats().Memories) }),
				prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "crow_anchor_failed_rounds_total",
					Help: "Anchoring rounds that failed and were retried."}, func() float64 { return float64(worker.Stats().Failures) }),
			)
		}
	}
	fed := newFederation(h, reg, log)
	defer fed.client.Close()
	var appl *app.App
	summaries := federation.NewSummaries(fed.client, clock.System{}, func(ctx context.Context) (federation.Summary, error) {
		return appl.LocalSummary(ctx)
	})
	// A new instance's summary is fetched when it is registered, not at the
	// next 5-minute round.
	unsubscribeSummaries := reg.Subscribe(func(ev registry.Event) {
		if ev.Kind == registry.EventAdded {
			summaries.Kick()
		}
	})
	defer unsubscribeSummaries()
	keys := gateway.NewKeyChecker(h.APIKeyHash())
	appl = app.New(app.Deps{
		Logger: log,
		Self: app.Self{
			InstanceID: h.InstanceID, Name: h.Name, Role: h.Role, CrowID: h.CrowID,
			PublicKey: hex.EncodeToString(h.PublicKey), Version: version,
			GatewayURL: gatewayURL, CreatedAt: createdAt.Format(time.RFC3339),
			SyncAddrs: host.Addrs,
		},
		Sign:      func(c []byte) []byte { return identity.SignChallenge(h.InstanceKey(), c, h.InstanceID) },
		Memories:  mem,
		Instances: reg,
		DB:        db,
		Writer:    writer,
		Conflicts: conflictStore,
		Recovery:  conflicts.NewRecovery(conflictStore, writer),
		SyncNode:  node,
		SyncFeeds: syncFeeds,
		SyncPause: func(p bool) {
			paused.Store(p)
			log.Info("sync paused by the operator", "paused", p)
			notifyPeers()
		},
		SyncPaused: paused.Load,
		// The new key is on disk before the gateway accepts it (and only it).
		RotateAPIKey: func() (string, error) {
			key, err := h.RotateAPIKey()
			if err == nil {
				keys.SetHash(sha256.Sum256([]byte(key)))
			}
			return key, err
		},
		KickSummaries: summaries.Kick,

		Projects:     projects.New(db, writer, h.Role == registry.RoleHome),
		Forwarder:    projects.ForwarderFunc(fed.forwardConsolidation(reg)),
		Consolidated: kickAnchoring,
		Chain:        chainReader,
		ProjectID:    h.Seed().ProjectIDHash,
		Federation:   fed.client,
		Summaries:    summaries,
	})
	gw := gateway.New(gateway.Config{
		Logger:          log,
		App:             appl,
		Keys:            keys,
		Writer:          writer,
		Remote:          fed.client,
		VerifyPeerToken: fed.verify,
		Metrics:         metrics,
	})
	if err := h.WriteGatewayAddr(ln.Addr().String()); err != nil {
		return err
	}
	defer h.RemoveGatewayAddr()
	log.Info("crow serving", "gateway", ln.Addr().String(), "sync", host.Addrs(), "instance_id", h.InstanceID,
		"role", h.Role, "feed_length", own.Head().Length)

	// Home numbers memories (SPEC §10): one total order for every instance,
	// replicated through the home-written memory_numbers table.
	if h.Role == registry.RoleHome {
		homeOnly = append(homeOnly, service{"numbering", memory.NewNumberer(db, writer, log.With("component", "numbering")).Serve})
	}
	err = runServices(ctx, log, append(homeOnly,
		service{"writer", writer.Serve},
		service{"indexer", indexer.Serve},
		service{"gateway", func(ctx context.Context) error { return gw.Serve(ctx, ln) }},
		service{"sync", node.Serve},
		service{"apply", applier.Serve},
		service{"federation-summaries", summaries.Serve},
		service{"fork-notifier", func(ctx context.Context) error {
			for {
				select {
				case <-ctx.Done():
					return nil
				case ev := <-forks:
					who := ev.Feed.Short()
					if in, err := reg.LookupKey(ev.Feed[:]); err == nil {
						who = in.Name + " (" + in.ID + ")"
					}
					body := fmt.Sprintf("The feed of %s has two validly signed histories that do not extend each other "+
						"(a restored backup or a cloned machine?). It stopped replicating; both heads are kept as evidence.", who)
					if err := conflictStore.Raise(conflicts.KindFeedFork, "A feed forked", body, conflicts.InstancesLink); err != nil {
						log.Error("raising the fork notification", "err", err)
					}
				}
			}
		}},
		service{"prober", prober.Serve},
		service{"registry", func(ctx context.Context) error {
			// Our own row: in the table from the first start, and kept current
			// (sync addresses change when the port is chosen by the system).
			_, err := reg.RegisterSelf(ctx, registry.SelfInfo{
				Name: h.Name, Role: h.Role, GatewayURL: gatewayURL, SyncAddrs: host.Addrs(), CreatedAt: createdAt,
			})
			if errors.Is(err, registry.ErrRevoked) {
				return fmt.Errorf("this instance has been revoked; it cannot serve this identity any more: %w", err)
			} else if err != nil {
				return err
			}
			unsub := reg.Subscribe(func(registry.Event) { notifyPeers() })
			defer unsub()
			return crowsync.FollowPeers(ctx, node, func() []crowsync.Peer {
				if paused.Load() {
					return nil
				}
				return syncPeers(log, reg)
			}, peersChanged)
		}},
	)...)
	log.Info("crow stopped", "err", err)
	return err
}

// syncPeers lists the registered, non-revoked peers as sync peers.
func syncPeers(log *slog.Logger, reg *registry.Registry) []crowsync.Peer {
	var out []crowsync.Peer
	for _, in := range reg.Peers() {
		pub, err := in.PublicKeyBytes()
		if err != nil {
			log.Warn("peer with unusable key", "instance", in.ID, "err", err)
			continue
		}
		id, err := transport.PeerIDFromPublicKey(ed25519.PublicKey(pub))
		if err != nil {
			continue
		}
		out = append(out, crowsync.Peer{ID: id, Addrs: in.SyncAddrs})
	}
	return out
}

// instanceCreatedAt is when this instance was initialised: the time its
// instance-id file (written once, never rewritten) was created.
func instanceCreatedAt(h *home.Home) time.Time {
	st, err := os.Stat(h.InstanceIDFile())
	if err != nil {
		return time.Unix(0, 0).UTC()
	}
	return st.ModTime().UTC().Truncate(time.Second)
}
