package app

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/crow-sync/crow/anchor"
	"github.com/crow-sync/crow/changes"
	"github.com/crow-sync/crow/clock"
	"github.com/crow-sync/crow/conflicts"
	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/projects"
	"github.com/crow-sync/crow/records"
	"github.com/crow-sync/crow/reenroll"
	"github.com/crow-sync/crow/registry"
	"github.com/crow-sync/crow/store"
	crowsync "github.com/crow-sync/crow/sync"
)

// Self describes this instance (for /health, the router and messages).
type Self struct {
	InstanceID string
	Name       string
	Role       string
	CrowID     string
	PublicKey  string // hex Ed25519
	Version    string
	GatewayURL string // the URL peers reach this gateway at
	CreatedAt  string // RFC 3339: when this instance was initialised
	// Certificate is this instance's membership certificate (text form).
	Certificate string
	// SyncAddrs returns the multiaddrs peers dial; it may change at run time.
	SyncAddrs func() []string
}

// SyncFeeds is what the operations read of the feeds held here.
type SyncFeeds interface {
	Heads() ([]crowsync.Head, error)
}

// SyncNode is what the operations read of the replication node.
type SyncNode interface {
	Status(ctx context.Context) ([]crowsync.PeerStatus, error)
}

// Deps are the domain parts the operations call. A nil part makes the
// operations that need it answer KindUnavailable (tests build an App with
// only what they exercise).
type Deps struct {
	Logger *slog.Logger
	Self   Self
	// Sign signs a health challenge with the instance key.
	Sign     func(challenge []byte) []byte
	Memories *memory.Service
	// Instances is the registry of crow_instances.
	Instances *registry.Registry
	SyncNode  SyncNode
	SyncFeeds SyncFeeds
	// SyncPause pauses (true) or resumes replication with instance id, or
	// with every peer when id is "" (resuming every peer also lifts the
	// single pauses); it persists the change. SyncPaused reports the pause
	// of every peer and the instances paused one by one (sorted ids).
	SyncPause  func(id string, paused bool) error
	SyncPaused func() (all bool, peers []string)
	// Records serves the typed operations of notes, sources, contacts,
	// settings, blog posts and crow_context, and the search across tables.
	Records *records.Service
	// DB and Writer serve the generic rows of the tables operations.
	DB     *store.DB
	Writer *store.Writer
	// Conflicts holds sync_conflicts records and notifications; Recovery
	// resolves them.
	Conflicts *conflicts.Store
	Recovery  *conflicts.Recovery
	// RotateAPIKey replaces the owner API key (and makes the gateway accept
	// only the new one) and returns it.
	RotateAPIKey func() (string, error)
	// Promote makes this instance home (home failover, app/promote.go);
	// force skips the check that the current home no longer answers. Nil:
	// instance.promote is unavailable.
	Promote func(ctx context.Context, force bool) (Promoted, error)
	// Projects holds the Project State versions; Forwarder sends a
	// consolidation to home when this instance is not home (nil: refused).
	Projects  *projects.Service
	Forwarder projects.Forwarder
	// Consolidated, if set, is called after this instance stored a new
	// state version (the daemon kicks the anchoring worker).
	Consolidated func()
	// Foreground, if set, is called as every operation that is not ReadOnly
	// (every GET is, TestTableSanity) starts: the user's writes are foreground work, which the daemon's
	// background workers let pass (clock.Quiet). It must not block.
	Foreground func()
	// Chain reads anchors for verification (nil: this instance reads no
	// chain and reports home's replicated records as unverified);
	// ProjectID is the keyed project id the chain uses (ok false: this
	// instance cannot name the project on chain yet; anchor.SeedProjectID
	// on home, anchor.RecordsProjectID elsewhere).
	Chain     ChainReader
	ProjectID func(project string) ([32]byte, bool)
	// AnchorWorker is home's anchoring worker (nil elsewhere) and
	// ChainRPCURL the public JSON-RPC URL published in packets, for
	// chain.status.
	AnchorWorker *anchor.Worker
	ChainRPCURL  string
	// Prover proves numbered memories (nil: memory.proof is unavailable).
	Prover MemoryProver
	// Federation fans searches out to other instances; SearchDeadline
	// bounds each instance's part (default DefaultSearchDeadline). Nil:
	// only this instance can be searched.
	Federation     Searcher
	SearchDeadline time.Duration
	// Summaries caches the other instances' summaries (nil: this
	// instance's own only).
	Summaries SummaryCache
	// Clock stamps the summaries (nil: the system clock).
	Clock clock.Clock
	// Kick, if set, is called after a registration whose peer registered
	// this instance back (the summaries cache fetches it at once).
	KickSummaries func()
	// Reenroll recovers a forked copy (nil: instance.reenroll is
	// unavailable, sync.status shows no fork).
	Reenroll *reenroll.Manager
	// Config is the effective configuration config.show answers (nil:
	// unavailable).
	Config *ConfigShown
	// Doctor is what doctor.run reads of the daemon (nil: unavailable);
	// PeerCalls makes the federated calls of the peer checks (nil: the
	// token checks and peer.check fail as unavailable).
	Doctor    *DoctorEnv
	PeerCalls PeerCaller
	// Changes answers what the other instances changed since a cursor (nil:
	// changes.since is unavailable).
	Changes *changes.Service
}

// App runs the operations of the table over Deps.
type App struct {
	d   Deps
	log *slog.Logger
	// rotateMu serialises API key rotations.
	rotateMu sync.Mutex
}

// New returns an App over d.
func New(d Deps) *App {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	return &App{d: d, log: d.Logger.With("component", "app")}
}

// Self is this instance's description.
func (a *App) Self() Self { return a.d.Self }

// unavailable is the error of an operation whose part is not configured.
func unavailable(what string) error {
	return Errorf(KindUnavailable, "this instance has no %s configured", what)
}
