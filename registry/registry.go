package registry

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crow-sync/crow/identity/member"
)

// DefaultHealthTimeout bounds each /health request made by Register.
const DefaultHealthTimeout = 10 * time.Second

// Config holds what a Registry needs. Trust, SelfID, SelfKey, SelfCert,
// Table and Revocations are required.
type Config struct {
	Trust  Trust  // our crow id and root public key
	SelfID string // this instance's id
	// SelfKey is this instance's Ed25519 key (it signs announcements) and
	// SelfCert its membership certificate (it goes in our own row).
	SelfKey  ed25519.PrivateKey
	SelfCert member.Certificate
	// RootKey is the root private key, held only where the master seed is
	// (home). Without it Revoke, CreateInvite and Enroll fail with
	// ErrNotHome.
	RootKey ed25519.PrivateKey
	Table   Table // the synced crow_instances table
	// Revocations is the synced crow_revocations table (row id = revoked
	// key hex; see RevocationRow).
	Revocations Table
	// Invites keeps home's invites (local-only); nil refuses invites.
	Invites InviteStore
	// Observations keeps probe results; nil keeps them in memory only.
	Observations Observations
	// MirrorPath is where the merged view is mirrored
	// ($CROW_HOME/instances.json); empty disables the mirror.
	MirrorPath string
	// HTTPClient makes /health requests; nil uses a client that does not
	// follow redirects.
	HTTPClient *http.Client
	// HealthTimeout bounds each /health request of Register; 0 means
	// DefaultHealthTimeout.
	HealthTimeout time.Duration
	Clock         Clock     // nil means SystemClock
	Rand          io.Reader // challenge randomness; nil means crypto/rand
	Logger        *slog.Logger
	// FeedForked, if set, reports whether the feed of an instance key forked
	// (this instance's own feed included: it runs from a restored or cloned
	// copy); the merged view then shows that instance as StatusForked.
	FeedForked func(key ed25519.PublicKey) bool
}

// EventKind says what changed in an Event.
type EventKind int

// Event kinds.
const (
	EventAdded   EventKind = iota + 1 // a row appeared (registered here or replicated)
	EventUpdated                      // name, role, URL or sync addresses changed
	EventRevoked                      // the instance was revoked: drop its connections
	// EventRemoved: the row vanished from the table or became invalid (the
	// registry itself never deletes rows). Treat it like EventRevoked.
	EventRemoved
)

func (k EventKind) String() string {
	switch k {
	case EventAdded:
		return "added"
	case EventUpdated:
		return "updated"
	case EventRevoked:
		return "revoked"
	case EventRemoved:
		return "removed"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Event reports a change of the crow_instances table, local or replicated.
type Event struct {
	Kind     EventKind
	Instance Instance
}

// Registry is the crow_instances registry (SPEC §7). It is safe for concurrent
// use. Reads (List, Get, Home, IsAdmitted) are served from an in-memory
// snapshot and never touch storage.
type Registry struct {
	trust      Trust
	selfID     string
	crowID     string
	selfKey    ed25519.PrivateKey
	selfCert   member.Certificate
	rootKey    ed25519.PrivateKey
	table      Table
	revTable   Table
	invites    InviteStore
	obsStore   Observations
	mirrorPath string
	client     *http.Client
	timeout    time.Duration
	clock      Clock
	rand       io.Reader
	log        *slog.Logger
	feedForked func(key ed25519.PublicKey) bool

	// snap is the current table snapshot; replaced (never mutated) under writeMu.
	snap atomic.Pointer[snapshot]
	// homeIdx is the verified home records of snap (home.go), replaced with it.
	homeIdx atomic.Pointer[homeIndex]

	// writeMu serialises table writes, Reload and the delivery of events, so
	// subscribers see events in the order the snapshot changed.
	writeMu sync.Mutex

	mu sync.Mutex // guards the fields below
	// observed holds this machine's probe results by id.
	observed map[string]Observation
	// syncing holds ids the sync layer reports as syncing.
	syncing map[string]bool
	// revoked holds every verified revocation seen (it only grows).
	revoked revocationSet
	// subs holds subscribers by handle.
	subs    map[int]func(Event)
	nextSub int

	// mirrorMu serialises mirror writes so the last write holds the latest view.
	mirrorMu sync.Mutex

	// strangers times the refusals of instances not known yet
	// (ExpectedKeyRefusal).
	strangers strangers
}

// snapshot is an immutable view of the table.
type snapshot struct {
	rows  map[string]Row    // by id, certified rows only (Revoked set by any revocation seen)
	byKey map[string]string // hex public key → id
	// revoked is the revocation set this snapshot was built with.
	revoked revocationSet
}

func (s *snapshot) admitted(id string) bool {
	r, ok := s.rows[id]
	return ok && !r.Revoked
}

// keyRevoked reports whether hex key k is revoked (under any id).
func (s *snapshot) keyRevoked(k string) bool {
	_, ok := s.revoked.byKey[k]
	return ok
}

// New loads the table and the observations, writes the mirror and returns the
// registry. It does not write to the table: call RegisterSelf for that.
func New(ctx context.Context, cfg Config) (*Registry, error) {
	if cfg.Table == nil || cfg.Revocations == nil {
		return nil, errors.New("registry: Config.Table and Config.Revocations are required")
	}
	if err := cfg.Trust.check(); err != nil {
		return nil, err
	}
	if err := validateID(cfg.SelfID); err != nil {
		return nil, fmt.Errorf("creating registry: self: %w", err)
	}
	if len(cfg.SelfKey) != ed25519.PrivateKeySize {
		return nil, errors.New("registry: Config.SelfKey is required")
	}
	if _, err := cfg.Trust.certify(cfg.SelfCert.String(), cfg.SelfID, cfg.SelfKey.Public().(ed25519.PublicKey), string(cfg.SelfCert.Role)); err != nil {
		return nil, fmt.Errorf("creating registry: our own certificate: %w", err)
	}
	if cfg.RootKey != nil && !cfg.Trust.RootPublicKey.Equal(cfg.RootKey.Public()) {
		return nil, errors.New("registry: Config.RootKey is not the root key of Config.Trust")
	}
	r := &Registry{
		trust: cfg.Trust, selfID: cfg.SelfID, crowID: cfg.Trust.CrowID, selfKey: cfg.SelfKey, selfCert: cfg.SelfCert,
		rootKey: cfg.RootKey, table: cfg.Table, revTable: cfg.Revocations, invites: cfg.Invites, revoked: newRevocationSet(),
		obsStore: cfg.Observations, mirrorPath: cfg.MirrorPath, client: cfg.HTTPClient,
		timeout: cmp.Or(cfg.HealthTimeout, DefaultHealthTimeout), clock: cfg.Clock,
		rand: cfg.Rand, log: cfg.Logger, feedForked: cfg.FeedForked,
		observed: map[string]Observation{}, syncing: map[string]bool{}, subs: map[int]func(Event){},
	}
	if r.client == nil {
		r.client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if r.clock == nil {
		r.clock = SystemClock{}
	}
	if r.rand == nil {
		r.rand = rand.Reader
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	r.log = r.log.With("component", "registry")
	if r.obsStore != nil {
		obs, err := r.obsStore.Load(ctx)
		if err != nil {
			return nil, fmt.Errorf("loading observations: %w", err)
		}
		for id, o := range obs {
			r.observed[id] = o
		}
	}
	r.snap.Store(&snapshot{rows: map[string]Row{}, byKey: map[string]string{}, revoked: newRevocationSet()})
	if err := r.Reload(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// SelfID returns this instance's id.
func (r *Registry) SelfID() string { return r.selfID }

// CrowID returns our crow id.
func (r *Registry) CrowID() string { return r.crowID }

// Trust returns our crow id and root public key.
func (r *Registry) Trust() Trust { return r.trust }

// SelfCertificate returns this instance's membership certificate.
func (r *Registry) SelfCertificate() member.Certificate { return r.selfCert }

// HoldsRootKey reports whether this instance holds the root key (home).
func (r *Registry) HoldsRootKey() bool { return r.rootKey != nil }

// Reload re-reads the whole table, replaces the in-memory index, writes the
// mirror and delivers an Event for every row that appeared, changed or was
// revoked. The apply loop calls it after applying crow_instances changes that
// arrived by replication (it is cheap: the table has a handful of rows).
// Malformed rows, and rows without a valid certificate of our root key for
// their id, key and role, are logged and left out (never admitted). Every
// verified revocation, in crow_revocations or in a row, marks the rows it
// names revoked.
func (r *Registry) Reload(ctx context.Context) error {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	revRaws, err := r.revTable.List(ctx)
	if err != nil {
		return fmt.Errorf("reloading revocations: %w", err)
	}
	raws, err := r.table.List(ctx)
	if err != nil {
		return fmt.Errorf("reloading instances: %w", err)
	}
	r.mu.Lock()
	for _, raw := range revRaws {
		rv, err := r.trust.decodeRevocationRow(raw)
		if err != nil {
			r.log.Warn("security: ignoring a crow_revocations row that does not verify", "err", err)
			continue
		}
		r.revoked.add(rv)
	}
	rows := make([]Row, 0, len(raws))
	for _, raw := range raws {
		row, err := decodeRow(raw)
		if err == nil {
			err = r.validateRow(row)
		}
		if err != nil {
			r.log.Warn("ignoring invalid crow_instances row", "id", row.ID, "err", err)
			continue
		}
		if row.Revocation != "" {
			if rv, err := r.trust.verifyRevocation(row.Revocation); err == nil {
				r.revoked.add(rv)
			}
		}
		rows = append(rows, row)
	}
	revoked := r.revoked.clone()
	r.mu.Unlock()
	next := &snapshot{rows: make(map[string]Row, len(rows)), byKey: make(map[string]string, len(rows)), revoked: revoked}
	for _, row := range rows {
		next.put(row)
	}
	r.installLocked(next)
	return nil
}

// put indexes row, marking it revoked if s.revoked names its id or key.
func (s *snapshot) put(row Row) {
	if rv, ok := s.revoked.revokes(row.ID, row.PublicKey); ok && !row.Revoked {
		row.Revoked, row.RevokedAt = true, rfc3339(rv.RevokedAt)
	}
	if old, ok := s.rows[row.ID]; ok {
		delete(s.byKey, old.PublicKey)
	}
	s.rows[row.ID] = row
	s.byKey[row.PublicKey] = row.ID
}

// installLocked replaces the snapshot, mirrors it and notifies subscribers of
// the differences. writeMu must be held.
func (r *Registry) installLocked(next *snapshot) {
	r.homeIdx.Store(r.indexHomes(next))
	prev := r.snap.Swap(next)
	var events []Event
	for _, id := range sortedIDs(next.rows) {
		row := next.rows[id]
		old, existed := prev.rows[id]
		switch {
		case !existed:
			events = append(events, Event{Kind: EventAdded, Instance: r.instance(row)})
			if row.Revoked {
				events = append(events, Event{Kind: EventRevoked, Instance: r.instance(row)})
			}
		case row.Revoked && !old.Revoked:
			events = append(events, Event{Kind: EventRevoked, Instance: r.instance(row)})
		case !sameFacts(old, row):
			events = append(events, Event{Kind: EventUpdated, Instance: r.instance(row)})
		}
	}
	for _, id := range sortedIDs(prev.rows) {
		if _, ok := next.rows[id]; !ok {
			events = append(events, Event{Kind: EventRemoved, Instance: r.instance(prev.rows[id])})
		}
	}
	r.writeMirror()
	r.mu.Lock()
	subs := make([]func(Event), 0, len(r.subs))
	for _, k := range slices.Sorted(maps.Keys(r.subs)) {
		subs = append(subs, r.subs[k])
	}
	r.mu.Unlock()
	for _, ev := range events {
		for _, fn := range subs {
			fn(ev)
		}
	}
}

// Subscribe calls fn for every later Event, in order, synchronously from the
// goroutine that made the change (Register, Revoke, RegisterSelf or Reload).
// fn must return quickly and must not call those four methods (it may call
// the read methods). The sync layer uses it to drop a revoked peer's
// connections and to dial new ones. The returned func unsubscribes.
func (r *Registry) Subscribe(fn func(Event)) (unsubscribe func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.nextSub
	r.nextSub++
	r.subs[h] = fn
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.subs, h)
	}
}

// instance builds the merged view of a row.
func (r *Registry) instance(row Row) Instance {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.instanceLocked(row)
}

// instanceLocked is instance with r.mu held.
func (r *Registry) instanceLocked(row Row) Instance {
	var in Instance
	if rec, ok := r.homes().current(); ok && row.Role == RoleHome && row.ID != rec.InstanceID {
		row.Role = RoleSatellite // demoted by a later home record (home.go), until it rewrites its row
	}
	if row.ID == r.selfID {
		// We are running, so we are online; last_seen is now.
		in = view(row, Observation{Status: StatusOnline, LastSeen: r.clock.Now().Unix()}, true, false)
	} else {
		o, ok := r.observed[row.ID]
		in = view(row, o, ok, r.syncing[row.ID])
	}
	if in.Status != StatusRevoked && r.feedForked != nil {
		if key, err := decodeKey(row.PublicKey); err == nil && r.feedForked(key) {
			in.Status = StatusForked
		}
	}
	return in
}

// List returns the merged view of every registered instance, revoked ones
// included: home first, then by name and id.
func (r *Registry) List() []Instance {
	snap := r.snap.Load()
	r.mu.Lock()
	out := make([]Instance, 0, len(snap.rows))
	for _, row := range snap.rows {
		out = append(out, r.instanceLocked(row))
	}
	r.mu.Unlock()
	slices.SortFunc(out, func(a, b Instance) int {
		return cmp.Or(cmp.Compare(roleRank(a.Role), roleRank(b.Role)), cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID))
	})
	return out
}

func roleRank(role string) int {
	if role == RoleHome {
		return 0
	}
	return 1
}

// Peers returns the merged view of every non-revoked instance but self: the
// peers the sync layer keeps connected (and dials at their SyncAddrs).
func (r *Registry) Peers() []Instance {
	all := r.List()
	out := all[:0]
	for _, in := range all {
		if in.ID != r.selfID && !in.Revoked() {
			out = append(out, in)
		}
	}
	return out
}

// Get returns the merged view of instance id, or ErrNotFound.
func (r *Registry) Get(id string) (Instance, error) {
	row, ok := r.snap.Load().rows[id]
	if !ok {
		return Instance{}, fmt.Errorf("getting instance %q: %w", id, ErrNotFound)
	}
	return r.instance(row), nil
}

// Home returns the non-revoked home instance, or ErrNotFound if none is
// registered. If replication ever brings two (two machines registered
// different homes before they synced), the earliest created wins (then the
// smaller id) and a warning is logged.
func (r *Registry) Home() (Instance, error) {
	if rec, ok := r.homes().current(); ok {
		if row, ok := r.snap.Load().rows[rec.InstanceID]; ok && !row.Revoked {
			return r.instance(row), nil
		}
	}
	homes := homesOf(r.snap.Load(), "")
	if len(homes) == 0 {
		return Instance{}, fmt.Errorf("getting home instance: %w", ErrNotFound)
	}
	if len(homes) > 1 {
		r.log.Warn("more than one home instance registered", "chosen", homes[0].ID, "other", homes[1].ID)
	}
	return r.instance(homes[0]), nil
}

// homesOf lists non-revoked homes other than except, earliest created first.
func homesOf(s *snapshot, except string) []Row {
	var homes []Row
	for _, row := range s.rows {
		if row.Role == RoleHome && !row.Revoked && row.ID != except {
			homes = append(homes, row)
		}
	}
	slices.SortFunc(homes, func(a, b Row) int {
		return cmp.Or(cmp.Compare(a.CreatedAt, b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return homes
}

// IsAdmitted reports whether idOrKey — an instance id or a hex Ed25519 public
// key — belongs to a registered, non-revoked instance. It reads the
// in-memory index only (no I/O, no locks), for the sync connection gater.
func (r *Registry) IsAdmitted(idOrKey string) bool {
	snap := r.snap.Load()
	if snap.admitted(idOrKey) {
		return true
	}
	id, ok := snap.byKey[idOrKey]
	return ok && snap.admitted(id)
}

// IsAdmittedKey is IsAdmitted for a raw public key (a libp2p peer's key):
// the key of a registered instance whose certificate verified when its row
// was indexed, and that no revocation seen names (by id or by key). It is
// the connection gater's check: lock-free, no I/O, no signature check on
// the hot path (certificates are verified once, when rows are indexed).
func (r *Registry) IsAdmittedKey(pub ed25519.PublicKey) bool {
	st, _ := r.KeyStatus(pub)
	return st == KeyCertified
}

// KeyStatus says what the registry knows of key pub and, when it is
// certified, for which instance id. The apply loop parks the feeds of keys
// that are not KeyCertified.
func (r *Registry) KeyStatus(pub []byte) (KeyStatus, string) {
	if len(pub) != ed25519.PublicKeySize {
		return KeyUnknown, ""
	}
	snap := r.snap.Load()
	k := hex.EncodeToString(pub)
	if snap.keyRevoked(k) {
		return KeyRevoked, ""
	}
	id, ok := snap.byKey[k]
	switch {
	case !ok:
		return KeyUnknown, ""
	case snap.rows[id].Revoked:
		return KeyRevoked, id
	}
	return KeyCertified, id
}

// LookupKey returns the merged view of the instance with public key pub
// (revoked or not), or ErrNotFound.
func (r *Registry) LookupKey(pub ed25519.PublicKey) (Instance, error) {
	snap := r.snap.Load()
	id, ok := snap.byKey[hex.EncodeToString(pub)]
	if !ok {
		return Instance{}, fmt.Errorf("looking up instance by key: %w", ErrNotFound)
	}
	return r.instance(snap.rows[id]), nil
}

// SetSyncing is the sync layer's hook: while syncing is true for a peer its
// status shows "syncing" (revoked still wins). It is not persisted and does
// not rewrite the mirror by itself (the next probe round does).
func (r *Registry) SetSyncing(id string, syncing bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if syncing {
		r.syncing[id] = true
	} else {
		delete(r.syncing, id)
	}
}

// recordObservations applies one probe round: updates the in-memory
// observations, stores them and rewrites the mirror.
func (r *Registry) recordObservations(ctx context.Context, obs map[string]Observation) error {
	if len(obs) == 0 {
		return nil
	}
	r.mu.Lock()
	for id, o := range obs {
		r.observed[id] = o
	}
	r.mu.Unlock()
	r.writeMirror()
	if r.obsStore != nil {
		if err := r.obsStore.Store(ctx, obs); err != nil {
			return fmt.Errorf("storing observations: %w", err)
		}
	}
	return nil
}

// observe records one observation outside a probe round (a successful
// registration proves the instance is online now).
func (r *Registry) observe(ctx context.Context, id string, o Observation) {
	if err := r.recordObservations(ctx, map[string]Observation{id: o}); err != nil {
		r.log.Warn("recording observation", "id", id, "err", err)
	}
}

func sortedIDs(m map[string]Row) []string { return slices.Sorted(maps.Keys(m)) }
