// Package cluster runs n real crow daemons in one test process: each with
// its own $CROW_HOME in t.TempDir (real badger and search index), its
// gateway on 127.0.0.1:0, and replication over an in-memory network (or
// real libp2p on loopback), with Partition and Heal. Node 0 is home; the
// others are satellites of the same identity, registered with home (which
// replicates their rows to everyone). Logs are kept per node and printed
// when the test fails.
//
// It is meant as the base of scenario tests: nodes have short names, the
// HTTP helper speaks the REST API with the owner key, and Partition takes
// groups of names.
package cluster

import (
	"bytes"
	"cmp"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/crow-sync/crow/anchor"
	"github.com/crow-sync/crow/clock"
	"github.com/crow-sync/crow/daemon"
	"github.com/crow-sync/crow/home"
	"github.com/crow-sync/crow/identity"
	"github.com/crow-sync/crow/identity/member"
	"github.com/crow-sync/crow/store"
	"github.com/crow-sync/crow/sync/transport"
)

// Options tune a Cluster. The zero value is n in-memory nodes named A, B, C…
type Options struct {
	// Names names the nodes (default "A", "B", …); len(Names) must be n.
	Names []string
	// Libp2p replicates over real libp2p on loopback instead of the
	// in-memory network.
	Libp2p bool
	// Clock is every node's clock (default the real one); Clocks, if set,
	// gives the nodes it names their own instead (a skewed clock).
	Clock  clock.Clock
	Clocks map[string]clock.Clock
	// Announce, if set, makes the nodes it names report these sync
	// multiaddrs (/health, their registry row). In-memory transport only:
	// nothing ever dials them.
	Announce map[string][]string
	// LogLevel of the nodes' logs (default info).
	LogLevel slog.Level
	// Timeout bounds New's and Eventually's waits (default 30s).
	Timeout time.Duration
	// InstanceIDs, if set, are the nodes' instance ids (UUIDs, one per
	// node) instead of random ones: concurrent versions with equal Lamport
	// timestamps are ordered by instance id, so a scenario that prints
	// which version won needs them fixed.
	InstanceIDs []string
	// NoNumbering: home numbers no memory (see daemon.Deps.NoNumbering);
	// scenarios that print which concurrent version won set it.
	NoNumbering bool
}

// Node is one daemon of the cluster.
type Node struct {
	Name   string
	Daemon *daemon.Daemon
	Home   *home.Home
	// URL is the gateway's base URL; APIKey the owner key.
	URL    string
	APIKey string
	// PeerID is the node's id on the sync network.
	PeerID transport.PeerID

	c    *Cluster
	tr   transport.Transport // set when the transport opens
	stop context.CancelFunc
	done chan error
	log  *lockedBuffer
}

// DB is the node's store.
func (n *Node) DB() *store.DB { return n.Daemon.DB() }

// Cluster is a running set of nodes.
type Cluster struct {
	t       testing.TB
	opts    Options
	dir     string // every node's $CROW_HOME is a directory in it
	Nodes   []*Node
	net     *transport.MemNetwork // nil with Libp2p
	mu      sync.Mutex            // guards cut
	cut     map[[2]transport.PeerID]bool
	closeMu sync.Once
}

// New starts n daemons, registers every satellite with home, and waits
// until every node's registry lists all n instances. The cluster closes at
// test cleanup.
func New(t testing.TB, n int, opts Options) *Cluster {
	t.Helper()
	if n < 1 {
		t.Fatal("cluster: n must be at least 1")
	}
	if opts.Names == nil {
		for i := range n {
			opts.Names = append(opts.Names, string(rune('A'+i)))
		}
	}
	if len(opts.Names) != n {
		t.Fatalf("cluster: %d names for %d nodes", len(opts.Names), n)
	}
	if opts.InstanceIDs != nil && len(opts.InstanceIDs) != n {
		t.Fatalf("cluster: %d instance ids for %d nodes", len(opts.InstanceIDs), n)
	}
	if opts.Timeout == 0 {
		opts.Timeout = 30 * time.Second
	}
	// The directory first: cleanups run last-registered first, so the
	// daemons stop before it is removed.
	c := &Cluster{t: t, opts: opts, dir: t.TempDir(), cut: map[[2]transport.PeerID]bool{}}
	if !opts.Libp2p {
		c.net = transport.NewMemNetwork()
	}
	t.Cleanup(c.Close)
	seed, err := identity.NewSeed(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range opts.Names {
		id := ""
		if opts.InstanceIDs != nil {
			id = opts.InstanceIDs[i]
		}
		if i == 0 {
			c.Nodes = append(c.Nodes, c.start(name, c.initHome(name, id, seed)))
			continue
		}
		// Satellites are enrolled by invitation, as in production: they
		// hold their own key and home's certificate, never the seed.
		c.Nodes = append(c.Nodes, c.start(name, c.initJoined(name, id)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), opts.Timeout)
	defer cancel()
	homeNode := c.Nodes[0]
	for _, s := range c.Nodes[1:] {
		if _, announceErr, err := homeNode.Daemon.Registry().Join(ctx, s.URL, homeNode.URL); err != nil || announceErr != nil {
			c.fatalf("registering %s with %s: %v %v", s.Name, homeNode.Name, err, announceErr)
		}
	}
	c.Eventually("every node to know every instance", func() bool {
		for _, nd := range c.Nodes {
			if len(nd.Daemon.Registry().List()) != n {
				return false
			}
		}
		return true
	})
	return c
}

// Add enrolls and starts one more satellite named name (as New does), registers it with
// home and waits until every node's registry lists every instance.
func (c *Cluster) Add(name string) *Node {
	c.t.Helper()
	nd := c.start(name, c.initJoined(name, ""))
	c.Nodes = append(c.Nodes, nd)
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.Timeout)
	defer cancel()
	homeNode := c.Nodes[0]
	if _, announceErr, err := homeNode.Daemon.Registry().Join(ctx, nd.URL, homeNode.URL); err != nil || announceErr != nil {
		c.fatalf("registering %s with %s: %v %v", nd.Name, homeNode.Name, err, announceErr)
	}
	c.Eventually("every node to know "+name, func() bool {
		for _, n := range c.Nodes {
			if len(n.Daemon.Registry().List()) != len(c.Nodes) {
				return false
			}
		}
		return true
	})
	return nd
}

// Dir is the node's $CROW_HOME.
func (n *Node) Dir() string { return n.Home.Root }

// initHome initialises the home node's directory with seed. id, if not "",
// replaces the instance id Init chose (before anything derives from it: the
// instance key is derived from the seed and the id; the certificate is
// issued again for it at start).
func (c *Cluster) initHome(name, id string, seed identity.Seed) string {
	t := c.t
	dir := filepath.Join(c.dir, name)
	if _, err := home.Init(dir, name, seed, home.RoleHome); err != nil {
		t.Fatalf("cluster: init %s: %v", name, err)
	}
	if id != "" {
		p := home.PathsOf(dir)
		if err := os.WriteFile(p.InstanceIDFile(), []byte(id+"\n"), 0o600); err != nil {
			t.Fatalf("cluster: setting the instance id of %s: %v", name, err)
		}
		if err := os.Remove(p.CertificateFile()); err != nil {
			t.Fatalf("cluster: %v", err)
		}
	}
	return dir
}

// initJoined enrolls a satellite with the running home node: an invite, a
// join request from a fresh key, home's answer, then the joined layout.
func (c *Cluster) initJoined(name, id string) string {
	t := c.t
	ctx := context.Background()
	hm := c.Nodes[0]
	if id == "" {
		var err error
		if id, err = home.NewInstanceID(); err != nil {
			t.Fatal(err)
		}
	}
	made, err := hm.Daemon.Registry().CreateInvite(ctx, name, 0, hm.URL)
	if err != nil {
		t.Fatalf("cluster: invite for %s: %v", name, err)
	}
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	req, err := member.NewJoinRequest(made.Invite, id, key, name, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ans, err := hm.Daemon.Registry().Enroll(ctx, req)
	if err != nil {
		t.Fatalf("cluster: enrolling %s: %v", name, err)
	}
	dir := filepath.Join(c.dir, name)
	if _, err := home.InitJoined(dir, home.Joined{Name: name, InstanceID: id, Key: key, Certificate: ans.Certificate,
		RootPublicKey: ans.RootPublicKey, HomeURL: hm.URL, HomeID: hm.Home.InstanceID}); err != nil {
		t.Fatalf("cluster: init %s: %v", name, err)
	}
	// New registers every satellite itself, in order, before any scenario
	// writes; the first start's own enrollment would race it (and shift the
	// Lamport clocks scenarios pin).
	if err := os.Remove(home.PathsOf(dir).JoinFile()); err != nil {
		t.Fatal(err)
	}
	return dir
}

// start loads and serves the node in dir.
func (c *Cluster) start(name, dir string) *Node {
	t := c.t
	h, err := home.Load(dir)
	if err != nil {
		t.Fatalf("cluster: load %s: %v", name, err)
	}
	nd := &Node{Name: name, Home: h, APIKey: h.APIKey(), c: c, log: &lockedBuffer{}, done: make(chan error, 1)}
	settings := home.DefaultConfig()
	settings.Listen = "127.0.0.1:0"
	settings.SyncListen = "/ip4/127.0.0.1/tcp/0"
	log := slog.New(slog.NewTextHandler(nd.log, &slog.HandlerOptions{Level: c.opts.LogLevel})).With("instance", name)
	d, err := daemon.New(daemon.Config{Home: h, Settings: settings, Version: "cluster"}, daemon.Deps{
		Logger:      log,
		Clock:       cmp.Or(c.opts.Clocks[name], c.opts.Clock),
		Transport:   c.transport(nd),
		Chain:       noChain,
		Getenv:      func(string) string { return "" },
		NoNumbering: c.opts.NoNumbering,
	})
	if err != nil {
		t.Fatalf("cluster: building %s: %v", name, err)
	}
	nd.Daemon, nd.URL, nd.PeerID = d, d.GatewayURL(), d.PeerID()
	ctx, cancel := context.WithCancel(context.Background())
	nd.stop = cancel
	go func() { nd.done <- d.Serve(ctx) }()
	return nd
}

// noChain: cluster nodes anchor nothing (the embedded chain is a geth node
// per home; anchoring has its own tests).
func noChain(context.Context, *slog.Logger) (anchor.Chain, error) { return nil, nil }

// transport opens nd's sync transport: the in-memory network, or libp2p;
// either way admission also honours the cluster's partitions.
func (c *Cluster) transport(nd *Node) func(daemon.TransportConfig) (daemon.Transport, error) {
	open := daemon.MemTransport(c.net)
	if c.net == nil {
		open = daemon.Libp2pTransport
	}
	return func(cfg daemon.TransportConfig) (daemon.Transport, error) {
		self, err := transport.PeerIDFromPublicKey(cfg.Key.Public().(ed25519.PublicKey))
		if err != nil {
			return nil, err
		}
		admit := cfg.Admit
		cfg.Admit = transport.AdmitFunc(func(p transport.PeerID) bool { return !c.isCut(self, p) && admit.Admit(p) })
		tr, err := open(cfg)
		if err == nil {
			nd.tr = tr
		}
		if addrs, ok := c.opts.Announce[nd.Name]; ok && err == nil {
			if c.net == nil {
				return nil, fmt.Errorf("cluster: Announce needs the in-memory transport")
			}
			return announced{tr, addrs}, nil
		}
		return tr, err
	}
}

// announced is a transport reporting fixed addresses.
type announced struct {
	daemon.Transport
	addrs []string
}

func (a announced) Addrs() []string { return a.addrs }

// Stop stops the node's daemon and waits for it (its gateway stops
// answering); the cluster's Close still reports how it ended.
func (n *Node) Stop() {
	n.stop()
	err := <-n.done
	n.done <- err
}

// Node returns the node named name.
func (c *Cluster) Node(name string) *Node {
	for _, n := range c.Nodes {
		if n.Name == name {
			return n
		}
	}
	c.fatalf("cluster: no node %q", name)
	return nil
}

func pair(a, b transport.PeerID) [2]transport.PeerID {
	if a > b {
		a, b = b, a
	}
	return [2]transport.PeerID{a, b}
}

func (c *Cluster) isCut(a, b transport.PeerID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cut[pair(a, b)]
}

// Partition splits the cluster into groups of node names: nodes in
// different groups cannot replicate until Heal (their sessions end now).
// Nodes named in no group form one more group. A new Partition replaces
// the previous one. (Only replication is cut: gateways still answer, and
// the harness still reaches every node.)
func (c *Cluster) Partition(groups ...[]string) {
	c.t.Helper()
	group := map[string]int{}
	for i, g := range groups {
		for _, name := range g {
			c.Node(name) // must exist
			group[name] = i + 1
		}
	}
	c.Heal()
	for i, a := range c.Nodes {
		for _, b := range c.Nodes[i+1:] {
			if group[a.Name] == group[b.Name] {
				continue
			}
			c.mu.Lock()
			c.cut[pair(a.PeerID, b.PeerID)] = true
			c.mu.Unlock()
			if c.net != nil {
				c.net.Partition(a.PeerID, b.PeerID)
			} else {
				_ = a.tr.Disconnect(b.PeerID)
			}
		}
	}
}

// Heal undoes Partition; the nodes reconnect by their own redials.
func (c *Cluster) Heal() {
	c.mu.Lock()
	cut := c.cut
	c.cut = map[[2]transport.PeerID]bool{}
	c.mu.Unlock()
	if c.net != nil {
		for p := range cut {
			c.net.Heal(p[0], p[1])
		}
	}
}

// Eventually waits until cond holds, failing the test after the timeout.
func (c *Cluster) Eventually(what string, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(c.opts.Timeout)
	for !cond() {
		if time.Now().After(deadline) {
			c.fatalf("cluster: timed out after %v waiting for %s", c.opts.Timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Close stops every node and waits for it; a node that failed fails the
// test. At cleanup of a failed test it prints every node's log.
func (c *Cluster) Close() {
	c.closeMu.Do(func() {
		for _, n := range slices.Backward(c.Nodes) {
			n.stop()
		}
		for _, n := range c.Nodes {
			if err := <-n.done; err != nil {
				c.t.Errorf("cluster: node %s: %v", n.Name, err)
			}
		}
		if c.t.Failed() {
			for _, n := range c.Nodes {
				c.t.Logf("---- log of %s ----\n%s", n.Name, n.log.String())
			}
		}
	})
}

// Log returns what node n logged so far.
func (n *Node) Log() string { return n.log.String() }

func (c *Cluster) fatalf(format string, args ...any) {
	c.t.Helper()
	c.t.Fatalf(format, args...)
}

// lockedBuffer is a log sink safe for concurrent writers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
