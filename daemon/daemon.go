package daemon

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/crow-sync/crow/anchor"
	"github.com/crow-sync/crow/clock"
	"github.com/crow-sync/crow/conflicts"
	"github.com/crow-sync/crow/federation"
	"github.com/crow-sync/crow/feed"
	"github.com/crow-sync/crow/forget"
	"github.com/crow-sync/crow/gateway"
	"github.com/crow-sync/crow/home"
	"github.com/crow-sync/crow/identity/member"
	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/projects"
	"github.com/crow-sync/crow/reenroll"
	"github.com/crow-sync/crow/registry"
	"github.com/crow-sync/crow/search"
	"github.com/crow-sync/crow/store"
	crowsync "github.com/crow-sync/crow/sync"
	"github.com/crow-sync/crow/sync/apply"
	"github.com/crow-sync/crow/sync/feeds"
	"github.com/crow-sync/crow/sync/transport"
)

// Config is what the operator chose: the instance and its settings.
type Config struct {
	// Home is the loaded $CROW_HOME: identity, role, name, paths (required).
	Home *home.Home
	// Settings are the merged flags, CROW_* variables and config.toml:
	// listen addresses, the advertised gateway URL, the chain.
	Settings home.Config
	// Shown is Settings key by key with where each value came from, for
	// config.show (crow serve fills it; nil: Settings, every source
	// "default").
	Shown []home.Setting
	// Version is reported by /health.
	Version string
}

// Deps are the parts tests swap. The zero value is production.
type Deps struct {
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Clock is the time of every part that takes one (default clock.System).
	Clock clock.Clock
	// Transport opens the sync transport (default: a libp2p Host listening
	// on the sync address). See MemTransport for the in-memory one.
	Transport func(TransportConfig) (Transport, error)
	// InMemoryStore runs badger without disk (the search index stays in
	// $CROW_HOME).
	InMemoryStore bool
	// Chain opens the anchoring chain; it may return nil for none. Default:
	// the configured external chain, else on home the embedded dev chain.
	Chain func(ctx context.Context, log *slog.Logger) (anchor.Chain, error)
	// Getenv reads the test-hook variables (default os.Getenv).
	Getenv func(string) string
	// NoNumbering: home runs no Numberer. For tests that pin which of two
	// concurrent versions wins: the Numberer's writes advance home's
	// Lamport clock at times that depend on scheduling.
	NoNumbering bool
}

// TransportConfig is what a sync transport is opened with.
type TransportConfig struct {
	Key    ed25519.PrivateKey // the instance key: the peer id derives from it
	Listen string             // multiaddr
	Admit  transport.Admitter // who may connect
	Logger *slog.Logger
	// Announce are the multiaddrs peers are told to dial (none: Listen's).
	Announce []string
	// Registerer receives the transport's metrics.
	Registerer prometheus.Registerer
}

// Transport is a sync transport that reports the addresses peers dial.
type Transport interface {
	transport.Transport
	Addrs() []string
}

// MemTransport returns a Deps.Transport joining net (in memory, addresses
// ignored), for tests.
func MemTransport(net *transport.MemNetwork) func(TransportConfig) (Transport, error) {
	return func(c TransportConfig) (Transport, error) {
		id, err := transport.PeerIDFromPublicKey(c.Key.Public().(ed25519.PublicKey))
		if err != nil {
			return nil, err
		}
		return net.Join(id, c.Admit), nil
	}
}

// Libp2pTransport opens a libp2p Host (TCP, Noise, yamux) on c.Listen: the
// production transport.
func Libp2pTransport(c TransportConfig) (Transport, error) {
	return transport.NewHost(transport.HostConfig{Key: c.Key, Listen: []string{c.Listen}, Logger: c.Logger, Admitter: c.Admit,
		Announce: c.Announce, Registerer: c.Registerer})
}

// Pacing of background work (Daemon.quiet): home's anchoring sends its next
// transaction once foreground work has paused for quietPause, or after
// quietMaxDefer of waiting under constant load.
const (
	quietPause    = 250 * time.Millisecond
	quietMaxDefer = 10 * time.Second
	// catchUpHold is how long a range served to a peer that is still
	// catching up counts as foreground work: the peer's next request comes
	// once it has stored the range (tens of milliseconds, more on a busy
	// machine), so background work does not start in that gap.
	catchUpHold = time.Second
)

// Daemon is one built instance. Its fields are set by New's stages, in
// order, and not changed afterwards.
type Daemon struct {
	cfg     Config
	h       *home.Home
	cert    member.Certificate // this instance's membership certificate
	builtIn time.Duration      // how long New took to build every part (logged)
	log     *slog.Logger
	clk     clock.Clock
	getenv  func(string) string
	metrics *prometheus.Registry
	closers []closer // what New opened, closed in reverse order
	served  bool
	// quiet is touched by foreground work (API writes, replication) and
	// paces home's anchoring transactions into its pauses.
	quiet *clock.Quiet

	// 1. storage
	db      *store.DB
	own     *feed.Log
	reps    *feed.Replicas
	changes *feeds.Changes
	writer  *store.Writer
	index   *search.Index
	indexer *search.Indexer

	// 2. domain
	reg       *registry.Registry
	prober    *registry.Prober
	mem       *memory.Service
	conflicts *conflicts.Store
	forks     *conflicts.ForkNotifier
	projects  *projects.Service

	// 3. replication
	applier   *apply.Applier
	forgetter *forget.Forgetter
	reenroll  *reenroll.Manager
	restart   chan struct{} // closed by requestRestart
	restartMu sync.Mutex
	syncFeeds *feeds.Feeds
	pause     *pauseSwitch
	peers     *signal
	tr        Transport
	node      *crowsync.Node

	// 4. edges
	fed       *federation.Client
	summaries *federation.Summaries
	chain     anchor.Chain
	// anchorWorker is home's anchoring worker (nil elsewhere).
	anchorWorker *anchor.Worker
	// checkpointer is home's public-chain checkpointer (nil when off).
	checkpointer *anchor.Checkpointer
	homeOnly     []service
	ln           net.Listener
	gatewayURL   string
	createdAt    time.Time
	gw           *gateway.Server
}

// New builds the tree (see the package documentation for the stages). On
// error, whatever was opened is closed again.
func New(cfg Config, deps Deps) (*Daemon, error) {
	if cfg.Home == nil {
		return nil, errors.New("daemon: Config.Home is required")
	}
	if cfg.Home.Locked() {
		return nil, fmt.Errorf("daemon: %w: decrypt it first (home.Home.Decrypt)", home.ErrLocked)
	}
	d := &Daemon{cfg: cfg, h: cfg.Home, log: deps.Logger, clk: deps.Clock, getenv: deps.Getenv, restart: make(chan struct{})}
	if d.log == nil {
		d.log = slog.Default()
	}
	if d.clk == nil {
		d.clk = clock.System{}
	}
	d.quiet = clock.NewQuiet(d.clk, quietPause, quietMaxDefer)
	// The membership certificate: a joined satellite holds the one home
	// issued; a seed holder issues its own (directories made before
	// certificates get one now).
	cert, err := cfg.Home.EnsureCertificate(d.clk.Now())
	if err != nil {
		return nil, fmt.Errorf("daemon: membership certificate: %w", err)
	}
	d.cert = cert
	if d.getenv == nil {
		d.getenv = os.Getenv
	}
	if deps.Transport == nil {
		deps.Transport = Libp2pTransport
	}
	if deps.Chain == nil {
		deps.Chain = func(ctx context.Context, log *slog.Logger) (anchor.Chain, error) {
			return openChain(ctx, cfg.Home, cfg.Settings, log)
		}
	}
	if err := d.build(deps); err != nil {
		d.close() // the build error is the one to report
		return nil, err
	}
	return d, nil
}

// build runs the stages in order.
func (d *Daemon) build(deps Deps) error {
	start := time.Now()
	for _, stage := range []struct {
		name  string
		build func() error
	}{
		{"storage", func() error { return d.buildStorage(deps.InMemoryStore) }},
		{"domain", d.buildDomain},
		{"replication", func() error { return d.buildReplication(deps.Transport) }},
		{"edges", func() error { return d.buildEdges(deps.Chain, deps.NoNumbering) }},
	} {
		t := time.Now()
		if err := stage.build(); err != nil {
			return err
		}
		d.log.Debug("start-up stage built", "stage", stage.name, "took", time.Since(t))
	}
	d.builtIn = time.Since(start)
	return nil
}

// onClose registers f, named what, to run when the daemon closes (last
// registered, first run).
func (d *Daemon) onClose(what string, f func() error) {
	d.closers = append(d.closers, closer{what, f})
}

// closer is one part the daemon releases when it closes.
type closer struct {
	what  string
	close func() error
}

// close runs the closers and returns the first error. A closer that takes
// longer than stopReportEvery is logged by name while it runs.
func (d *Daemon) close() error {
	var first error
	for _, c := range slices.Backward(d.closers) {
		began := time.Now()
		slow := time.AfterFunc(stopReportEvery, func() {
			d.log.Warn("still closing", "part", c.what, "since", time.Since(began).Round(time.Second))
		})
		err := c.close()
		slow.Stop()
		if err != nil && first == nil {
			first = err
		}
	}
	d.closers = nil
	return first
}

// Close releases a Daemon that will not serve (Serve closes by itself).
func (d *Daemon) Close() error { return d.close() }

// Serve runs the daemon until ctx is done or a part fails, then stops and
// closes it. It returns the first part's error (nil after a clean stop).
func (d *Daemon) Serve(ctx context.Context) (err error) {
	if d.served {
		return errors.New("daemon: Serve called twice")
	}
	d.served = true
	defer func() {
		if cerr := d.close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if err := d.h.WriteGatewayAddr(d.ln.Addr().String()); err != nil {
		return err
	}
	defer d.h.RemoveGatewayAddr()
	d.log.Info("crow serving", "gateway", d.ln.Addr().String(), "sync", d.tr.Addrs(), "instance_id", d.h.InstanceID,
		"role", d.h.Role, "feed_length", d.own.Head().Length, "built_in", d.builtIn.Round(time.Millisecond))
	err = runServices(ctx, d.log, append(slices.Clone(d.homeOnly),
		service{"writer", d.writer.Serve},
		service{"indexer", d.indexer.Serve},
		service{"gateway", func(ctx context.Context) error { return d.gw.Serve(ctx, d.ln) }},
		service{"sync", d.node.Serve},
		service{"apply", d.applier.Serve},
		service{"forget", d.forgetter.Serve},
		service{"federation-summaries", d.summaries.Serve},
		service{"fork-notifier", d.forks.Serve},
		service{"prober", d.prober.Serve},
		service{"registry", d.serveRegistry},
		service{"reenroll", d.reenroll.Serve},
		service{"restart", d.waitRestart},
		service{"home-role", d.serveRole},
	)...)
	d.log.Info("crow stopped", "err", err)
	return err
}

// GatewayURL is the URL peers and clients reach the gateway at.
func (d *Daemon) GatewayURL() string { return d.gatewayURL }

// GatewayAddr is the address the gateway listens on.
func (d *Daemon) GatewayAddr() net.Addr { return d.ln.Addr() }

// DB is the instance's store.
func (d *Daemon) DB() *store.DB { return d.db }

// Registry is the instance's registry of crow_instances.
func (d *Daemon) Registry() *registry.Registry { return d.reg }

// Home is the instance's $CROW_HOME.
func (d *Daemon) Home() *home.Home { return d.h }

// PeerID is the instance's id on the sync network.
func (d *Daemon) PeerID() transport.PeerID { return d.tr.Self() }
