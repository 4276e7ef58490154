package doctor

import (
	"cmp"
	"context"
	"io/fs"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/crow-sync/crow/anchor"
)

// Status is a finding's verdict. JSON values are part of the REST API.
type Status string

const (
	OK      Status = "ok"
	Warn    Status = "warn"
	Problem Status = "problem"
)

func (s Status) rank() int {
	switch s {
	case Problem:
		return 2
	case Warn:
		return 1
	}
	return 0
}

// Check ids (Finding.Check). Stable: scripts filter on them.
const (
	CheckFiles       = "files"
	CheckSeed        = "seed"
	CheckStore       = "store"
	CheckDisk        = "disk"
	CheckAddresses   = "addresses"
	CheckCertificate = "certificate"
	CheckPeer        = "peer"
	CheckTokens      = "tokens"
	CheckClock       = "clock"
	CheckChain       = "chain"
	CheckFork        = "fork"
)

// Finding is one verdict of one check. JSON names are part of the REST API.
type Finding struct {
	Check string `json:"check"`
	// Subject names what was looked at when a check has several (a file, a
	// peer's name); "" otherwise.
	Subject string `json:"subject,omitempty"`
	Status  Status `json:"status"`
	Message string `json:"message"`
	// Fix says what to do: a command or a setting ("" when Status is ok).
	Fix string `json:"fix,omitempty"`
}

// Report is the answer of doctor.run.
type Report struct {
	InstanceID string    `json:"instance_id"`
	Name       string    `json:"name"`
	Role       string    `json:"role"`
	CheckedAt  string    `json:"checked_at"` // RFC 3339
	Status     Status    `json:"status"`     // the worst finding's
	Problems   int       `json:"problems"`
	Warnings   int       `json:"warnings"`
	Findings   []Finding `json:"findings"`
}

// Self is the instance being checked.
type Self struct {
	InstanceID, Name, Role string
	// Revoked: a revocation of this instance's id or key is known here.
	Revoked   bool
	RevokedAt string
}

// Files is what the files check looks at.
type Files struct {
	Dir string // $CROW_HOME
	// HasSeed: this instance holds the master seed (file identity), else
	// its own instance.key.
	HasSeed bool
	// Locked: the seed is encrypted at rest (identity holds a blob).
	Locked bool
	// Extra are more secret files (the chain key files of config.toml).
	Extra []string
}

// Net is what the addresses check looks at.
type Net struct {
	// Listen is the address the gateway is bound to (host:port).
	Listen string
	// GatewayURL is the configured gateway_url ("" when unset); Advertised
	// the URL peers are told (gateway_url, else http://Listen).
	GatewayURL, Advertised string
	// SyncAddrs are the multiaddrs this instance announces.
	SyncAddrs []string
}

// Peer is another registered instance.
type Peer struct {
	ID, Name, Role string
	GatewayURL     string
	SyncAddrs      []string
	Revoked        bool
	RevokedAt      string
}

// Health is a peer's proven /health answer: when it was asked and answered
// (this instance's clock) and the peer's own clock (zero: not reported).
type Health struct {
	Sent, Received, PeerTime time.Time
}

// Callback is a peer's answer to the token check: its clock, and whether
// its own federated call back to this instance was accepted.
type Callback struct {
	PeerTime      time.Time
	CallbackOK    bool
	CallbackError string
}

// Errors the probes wrap so the checks tell the cases apart.
var (
	// ErrUnreachable: the peer could not be asked (no answer, an error
	// status, a timeout).
	ErrUnreachable = errorString("unreachable")
	// ErrNotTrusted: the peer answered but did not prove it is the
	// registered, certified, non-revoked instance.
	ErrNotTrusted = errorString("not trusted")
	// ErrRefused: the peer refused this instance's federation token.
	ErrRefused = errorString("token refused")
)

type errorString string

func (e errorString) Error() string { return string(e) }

// Probes reach the peers.
type Probes interface {
	// Health asks peer id for a challenged /health.
	Health(ctx context.Context, id string) (Health, error)
	// Callback makes a federated call to peer id that calls this instance
	// back.
	Callback(ctx context.Context, id string) (Callback, error)
}

// Store is the database's probe.
type Store interface {
	// Read reads something from the database.
	Read() error
	// Space is the free bytes of the store's filesystem and the threshold
	// below which writes are refused; ok false when unknown.
	Space() (free, threshold uint64, ok bool)
}

// Fork is this instance's own-feed fork, as the reenroll manager sees it.
type Fork struct {
	Error              string
	Length, PeerLength uint64
}

// Env is every fact and probe the checks use. A nil part skips its check.
type Env struct {
	Self  Self
	Now   func() time.Time
	Files Files
	// Stat reads a file's mode (default os.Stat).
	Stat  func(string) (fs.FileInfo, error)
	Store Store
	Net   Net
	Peers []Peer
	Probe Probes
	// Chain reads the chain's status (package anchor's); Home says this
	// instance is the one that anchors.
	Chain func(ctx context.Context) (anchor.ChainStatus, error)
	// Fork reports this instance's own fork (nil: none).
	Fork func() *Fork
}

// Run runs every check of env and returns the report, findings in check
// order (peers by name).
func Run(ctx context.Context, env Env) Report {
	if env.Now == nil {
		env.Now = time.Now
	}
	if env.Stat == nil {
		env.Stat = os.Stat
	}
	var fs []Finding
	fs = append(fs, checkFiles(env)...)
	fs = append(fs, checkSeed(env)...)
	fs = append(fs, checkStore(env)...)
	fs = append(fs, checkAddresses(env)...)
	fs = append(fs, checkCertificate(env)...)
	fs = append(fs, checkPeers(ctx, env)...)
	fs = append(fs, checkChain(ctx, env)...)
	fs = append(fs, checkFork(env)...)
	r := Report{InstanceID: env.Self.InstanceID, Name: env.Self.Name, Role: env.Self.Role,
		CheckedAt: env.Now().UTC().Format(time.RFC3339), Status: OK, Findings: fs}
	for _, f := range fs {
		switch f.Status {
		case Problem:
			r.Problems++
		case Warn:
			r.Warnings++
		}
		if f.Status.rank() > r.Status.rank() {
			r.Status = f.Status
		}
	}
	return r
}

// checkPeers runs the per-peer checks in parallel, and returns them in
// peer name order.
func checkPeers(ctx context.Context, env Env) []Finding {
	peers := slices.Clone(env.Peers)
	slices.SortFunc(peers, func(a, b Peer) int { return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID)) })
	out := make([][]Finding, len(peers))
	var wg sync.WaitGroup
	for i, p := range peers {
		if p.ID == env.Self.InstanceID {
			continue
		}
		wg.Go(func() { out[i] = checkPeer(ctx, env, p) })
	}
	wg.Wait()
	var all []Finding
	for _, f := range out {
		all = append(all, f...)
	}
	return all
}
