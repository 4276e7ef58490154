package anchor

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/rawdb"
	ethcrypto "github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/eth"
	"github.com/ethereum/go-ethereum/eth/catalyst"
	"github.com/ethereum/go-ethereum/eth/ethconfig"
	"github.com/ethereum/go-ethereum/eth/filters"
	"github.com/ethereum/go-ethereum/ethclient"
	gethlog "github.com/ethereum/go-ethereum/log"
	"github.com/ethereum/go-ethereum/node"
	"github.com/ethereum/go-ethereum/p2p"
	"github.com/ethereum/go-ethereum/rpc"
)

// openTimeout bounds the work OpenEmbedded does on the chain (deploying the
// contract on first start, checking it afterwards).
const openTimeout = 30 * time.Second

// nodeName is the node's instance directory under dir. "geth" keeps the
// layout geth itself uses, so `geth --dev --datadir <dir>` can open the chain
// for inspection while crow is stopped.
const nodeName = "geth"

// Embedded is the default Chain: a go-ethereum node inside this process, with
// a single account (the seed's anchoring key, funded in genesis) and a block
// sealed as soon as a transaction arrives. The chain lives in one directory
// and survives restarts; see the package documentation for the design.
type Embedded struct {
	*client
	dir     string
	stack   *node.Node
	backend *eth.Ethereum
	once    sync.Once
	err     error
}

var _ Chain = (*Embedded)(nil)
var _ MemoryReader = (*Embedded)(nil)

// EmbeddedOption configures OpenEmbedded.
type EmbeddedOption func(*embeddedOptions)

type embeddedOptions struct {
	rpcHost string
	rpcPort int
}

// WithLoopbackRPC also serves the chain's JSON-RPC (eth, net and web3 only)
// over HTTP at addr, which must be a loopback address ("127.0.0.1:8545";
// port 0 picks a free one; see ChainInfo.RPCURL). Anyone on this machine can
// then read the chain with standard tools, or point an RPC Chain at it.
func WithLoopbackRPC(addr string) EmbeddedOption {
	return func(o *embeddedOptions) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			o.rpcHost, o.rpcPort = addr, -1
			return
		}
		p, err := strconv.Atoi(port)
		if err != nil {
			p = -1
		}
		o.rpcHost, o.rpcPort = host, p
	}
}

func (o embeddedOptions) check() error {
	if o.rpcHost == "" {
		return nil
	}
	if o.rpcPort < 0 || o.rpcPort > 65535 {
		return fmt.Errorf("anchor: loopback RPC address %q: bad port", net.JoinHostPort(o.rpcHost, strconv.Itoa(o.rpcPort)))
	}
	if ip := net.ParseIP(o.rpcHost); o.rpcHost != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("anchor: RPC address %q is not a loopback address", o.rpcHost)
	}
	return nil
}

// OpenEmbedded opens the embedded chain persisted in dir, creating it (and
// deploying the contract, owned by key's account) if dir holds none. A chain
// created for another key is refused with ErrWrongKey. log may be nil; the
// node's own warnings and errors go to it too.
//
// dir is locked while the chain is open: a second OpenEmbedded on the same
// dir fails until Close.
func OpenEmbedded(dir string, key *ecdsa.PrivateKey, log *slog.Logger, opts ...EmbeddedOption) (*Embedded, error) {
	if key == nil {
		return nil, errors.New("anchor: OpenEmbedded needs a key")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var o embeddedOptions
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	account := ethcrypto.PubkeyToAddress(key.PublicKey)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("anchor: creating %s: %w", dir, err)
	}
	st, err := readState(dir)
	if err != nil {
		return nil, err
	}
	if st != nil && st.Account != account {
		return nil, fmt.Errorf("%w: %s was made for %s, the key is %s", ErrWrongKey, dir, st.Account.Hex(), account.Hex())
	}

	stack, err := node.New(nodeConfig(dir, o, log))
	if err != nil {
		return nil, fmt.Errorf("anchor: creating node in %s: %w", dir, err)
	}
	e, err := startEmbedded(dir, stack, key, st, log)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("anchor: opening embedded chain in %s: %w", dir, err), stack.Close())
	}
	return e, nil
}

func nodeConfig(dir string, o embeddedOptions, log *slog.Logger) *node.Config {
	cfg := node.DefaultConfig
	cfg.Name = nodeName
	cfg.DataDir = dir
	cfg.DBEngine = "pebble"
	cfg.IPCPath = ""                  // no socket
	cfg.HTTPHost, cfg.WSHost = "", "" // no servers (and no engine API is registered, so no auth server)...
	cfg.P2P = p2p.Config{             // ...and no networking at all
		NoDiscovery: true,
		NoDial:      true,
		MaxPeers:    0,
		ListenAddr:  "",
	}
	if o.rpcHost != "" {
		cfg.HTTPHost, cfg.HTTPPort = o.rpcHost, o.rpcPort
		cfg.HTTPModules = []string{"eth", "net", "web3"}
		cfg.HTTPVirtualHosts = []string{"localhost"}
	}
	cfg.Logger = gethlog.NewLogger(minLevel{log.Handler(), slog.LevelWarn})
	return &cfg
}

// startEmbedded assembles eth + filters + the simulated beacon on stack,
// starts it and makes sure the contract is there. It is what
// ethclient/simulated.NewBackend does, minus its reset to genesis, over a
// persistent datadir.
func startEmbedded(dir string, stack *node.Node, key *ecdsa.PrivateKey, st *chainState, log *slog.Logger) (*Embedded, error) {
	account := ethcrypto.PubkeyToAddress(key.PublicKey)
	genesis, err := genesisFor(stack, account)
	if err != nil {
		return nil, err
	}
	backend, err := eth.New(stack, ethConfig(genesis, account))
	if err != nil {
		return nil, fmt.Errorf("starting eth: %w", err)
	}
	// eth_getLogs and friends live in the filter system, which eth.New does
	// not register (geth's cmd does it separately, and so does simulated).
	fsys := filters.NewFilterSystem(backend.APIBackend, filters.Config{})
	stack.RegisterAPIs([]rpc.API{{Namespace: "eth", Service: filters.NewFilterAPI(fsys)}})

	// Period 0: the beacon seals a block whenever the pool gets a
	// transaction (the loop lives in its "dev" API, as in geth --dev). It
	// picks up the chain where the database left it.
	beacon, err := catalyst.NewSimulatedBeacon(0, account, backend)
	if err != nil {
		return nil, fmt.Errorf("starting simulated beacon: %w", err)
	}
	catalyst.RegisterSimulatedBeaconAPIs(stack, beacon)
	stack.RegisterLifecycle(beacon)
	if err := stack.Start(); err != nil {
		return nil, fmt.Errorf("starting node: %w", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	// The beacon's on-demand loop subscribes to the pool in a goroutine of
	// its own: a deployment sent before it subscribed is never sealed. While
	// this function works, a transaction left executable for two ticks in a
	// row is sealed here (once the loop runs, it seals within milliseconds).
	go nudgeBeacon(ctx, backend, beacon, log)
	ec := ethclient.NewClient(stack.Attach())
	chainID := backend.BlockChain().Config().ChainID
	if bal, err := ec.BalanceAt(ctx, account, nil); err != nil {
		ec.Close()
		return nil, fmt.Errorf("reading balance: %w", err)
	} else if bal.Sign() == 0 {
		ec.Close()
		return nil, fmt.Errorf("%w: %s is not funded on this chain", ErrWrongKey, account.Hex())
	}
	addr, err := ensureContract(ctx, dir, ec, key, chainID, backend, st, log)
	if err != nil {
		ec.Close()
		return nil, err
	}
	info := ChainInfo{Kind: KindEmbedded}
	if stack.Config().HTTPHost != "" {
		info.RPCURL = stack.HTTPEndpoint()
	}
	c, err := newClient(ec, addr, key, chainID, info, log)
	if err != nil {
		ec.Close()
		return nil, err
	}
	db := backend.ChainDb()
	c.durable = db.SyncKeyValue
	head := backend.BlockChain().CurrentBlock().Number.Uint64()
	log.Info("embedded chain open", "dir", dir, "chain_id", chainID.Uint64(), "contract", addr.Hex(), "account", account.Hex(), "head", head, "rpc", info.RPCURL)
	return &Embedded{client: c, dir: dir, stack: stack, backend: backend}, nil
}

// nudgeBeacon seals a block when a transaction stayed executable in the pool
// for two ticks of 1 s in a row, until the chain has grown once past the head
// it opened at (the beacon's on-demand loop is then subscribed to the pool:
// what it missed is only what was sent before that) or ctx ends
// (startEmbedded's work). It stops then because a seal of its own may race a
// rewind of the chain (debug_setHead): the beacon's sealBlock reads the head
// and then its finalized block, which a rewind in between has dropped.
func nudgeBeacon(ctx context.Context, backend *eth.Ethereum, beacon *catalyst.SimulatedBeacon, log *slog.Logger) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	opened := backend.BlockChain().CurrentBlock().Number.Uint64()
	stuck := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if backend.BlockChain().CurrentBlock().Number.Uint64() > opened {
			return
		}
		if executable, _ := backend.TxPool().Stats(); executable == 0 {
			stuck = 0
			continue
		}
		if stuck++; stuck >= 2 {
			log.Info("sealing a block for a transaction the dev beacon missed at start")
			beacon.Commit()
			stuck = 0
		}
	}
}

// genesisFor returns the genesis to create the chain with, or nil when dir
// already holds a chain (which is then reopened as it is, with its stored
// genesis and config — like geth --dev over an existing datadir). It checks
// that an existing chain funded account.
func genesisFor(stack *node.Node, account common.Address) (*core.Genesis, error) {
	if rawdb.PreexistingDatabase(stack.ResolvePath("chaindata")) != "" {
		db, err := stack.OpenDatabaseWithOptions("chaindata", node.DatabaseOptions{ReadOnly: true})
		if err != nil {
			return nil, fmt.Errorf("opening chain database: %w", err)
		}
		defer db.Close()
		if rawdb.ReadCanonicalHash(db, 0) != (common.Hash{}) {
			g, err := core.ReadGenesis(db)
			if err != nil {
				return nil, fmt.Errorf("reading stored genesis: %w", err)
			}
			if _, ok := g.Alloc[account]; !ok {
				return nil, fmt.Errorf("%w: its genesis does not fund %s", ErrWrongKey, account.Hex())
			}
			return nil, nil
		}
	}
	// A fresh dev chain: geth --dev's genesis (chain id 1337, the
	// precompiles and system contracts, account funded with 2^256-9 wei)
	// with the forks up to Osaka active from block 0 and none after. geth's
	// dev config also turns on the unreleased Amsterdam/Bogota rules, whose
	// state-gas repricing (EIP-8037) makes a stored anchor cost ~5x more gas
	// and which may still change; Osaka's rules are final, like those of
	// the chains the RPC backend talks to.
	g := core.DeveloperGenesisBlock(ethconfig.Defaults.Miner.GasCeil, &account)
	cfg := *g.Config
	cfg.AmsterdamTime, cfg.BogotaTime = nil, nil
	g.Config = &cfg
	return g, nil
}

func ethConfig(genesis *core.Genesis, account common.Address) *ethconfig.Config {
	cfg := ethconfig.Defaults
	cfg.Genesis = genesis
	cfg.SyncMode = ethconfig.FullSync
	// Hash-based archive state: every block's state is committed to the
	// database when the block is (path-based state and pruned hash state
	// keep recent state in memory until a clean shutdown, so a crash would
	// rewind the chain and lose anchors).
	cfg.StateScheme = rawdb.HashScheme
	cfg.NoPruning = true
	// Keep every transaction findable by hash, forever.
	cfg.TransactionHistory = 0
	cfg.TxLookupLimit = 0
	// A chain of a few thousand small blocks needs no log index: eth_getLogs
	// scans block blooms. Fewer background indexers, less to recover.
	cfg.LogNoHistory = true
	// Small caches: this chain holds one contract.
	cfg.DatabaseCache = 16
	cfg.TrieCleanCache = 16
	cfg.TrieDirtyCache = 0
	cfg.SnapshotCache = 0
	cfg.TxPool.NoLocals = true
	cfg.TxPool.Journal = ""
	cfg.Miner.PendingFeeRecipient = account
	return &cfg
}

// ensureContract returns the contract's address, deploying it if the chain
// has none yet, and records it in the state file.
func ensureContract(ctx context.Context, dir string, ec *ethclient.Client, key *ecdsa.PrivateKey, chainID *big.Int, backend *eth.Ethereum, st *chainState, log *slog.Logger) (common.Address, error) {
	account := ethcrypto.PubkeyToAddress(key.PublicKey)
	genesis := backend.BlockChain().Genesis().Hash()
	if st != nil && st.Contract != (common.Address{}) {
		if st.Genesis != genesis {
			return common.Address{}, fmt.Errorf("state file says genesis %s, the database has %s", st.Genesis.Hex(), genesis.Hex())
		}
		code, err := ec.CodeAt(ctx, st.Contract, nil)
		if err != nil {
			return common.Address{}, fmt.Errorf("reading contract code: %w", err)
		}
		if len(code) == 0 {
			return common.Address{}, fmt.Errorf("the chain has no contract at %s, where %s says it is (was the chain rewound?)", st.Contract.Hex(), stateFile)
		}
		current, err := isCurrentContract(ctx, ec, st.Contract)
		if err != nil {
			return common.Address{}, err
		}
		if current {
			return st.Contract, nil
		}
		// A chain made before Merkle-batched anchoring: deploy the current
		// contract beside the old one (kept in the state file). The anchor
		// worker anchors again, under roots, what was anchored there.
		addr, block, err := deploy(ctx, ec, key, chainID, log)
		if err != nil {
			return common.Address{}, fmt.Errorf("upgrading the contract: %w", err)
		}
		if err := backend.ChainDb().SyncKeyValue(); err != nil {
			return common.Address{}, fmt.Errorf("syncing the chain to disk: %w", err)
		}
		log.Info("upgraded the embedded chain's contract to Merkle-batched anchoring", "old", st.Contract.Hex(), "new", addr.Hex())
		ns := *st
		ns.Legacy = append(ns.Legacy, st.Contract)
		ns.Contract, ns.DeployBlock = addr, block
		if err := writeState(dir, ns); err != nil {
			return common.Address{}, err
		}
		return addr, nil
	}
	// The account's first transaction is always the deployment, so if a
	// previous start deployed but died before writing the state file, the
	// contract is at the nonce-0 address.
	var addr common.Address
	var block uint64
	first := ethcrypto.CreateAddress(account, 0)
	code, err := ec.CodeAt(ctx, first, nil)
	if err != nil {
		return common.Address{}, fmt.Errorf("reading code at %s: %w", first.Hex(), err)
	}
	current := false
	if len(code) > 0 {
		if current, err = isCurrentContract(ctx, ec, first); err != nil {
			return common.Address{}, err
		}
	}
	if current {
		addr = first
		log.Warn("adopting the contract deployed by an earlier start", "contract", addr.Hex())
	} else {
		addr, block, err = deploy(ctx, ec, key, chainID, log)
		if err != nil {
			return common.Address{}, err
		}
		if err := backend.ChainDb().SyncKeyValue(); err != nil {
			return common.Address{}, fmt.Errorf("syncing the chain to disk: %w", err)
		}
	}
	ns := chainState{Format: stateFormat, Account: account, ChainID: chainID.Uint64(), Genesis: genesis, Contract: addr, DeployBlock: block}
	if err := writeState(dir, ns); err != nil {
		return common.Address{}, err
	}
	return addr, nil
}

// Close stops the node, which writes the chain to disk, and releases dir.
// It is safe to call more than once. It first lets the dev beacon finish the
// seal it may be making for a transaction just sent: go-ethereum's sealBlock
// reads the head's finalized block, and one running while the node stops
// finds the chain closed under it (a nil dereference in its goroutine, which
// kills the process; seen in CI's -race run of the anchor tests).
func (e *Embedded) Close() error {
	e.once.Do(func() {
		e.closeClient()
		waitSealed(e.backend, closeSealWait)
		e.err = e.stack.Close()
	})
	return e.err
}

// closeSealWait bounds how long Close waits for the dev beacon.
const closeSealWait = 2 * time.Second

// waitSealed returns once the pool holds no executable transaction and the
// head has not moved for sealQuiet, or after max.
func waitSealed(backend *eth.Ethereum, max time.Duration) {
	if backend == nil {
		return
	}
	const sealQuiet = 50 * time.Millisecond
	head := func() uint64 {
		if b := backend.BlockChain().CurrentBlock(); b != nil {
			return b.Number.Uint64()
		}
		return 0
	}
	start := time.Now() // real time: the node's own goroutines run on it
	last, since := head(), start
	for time.Since(start) < max {
		executable, _ := backend.TxPool().Stats()
		if h := head(); h != last || executable != 0 {
			last, since = h, time.Now()
		} else if time.Since(since) >= sealQuiet {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// minLevel drops records below a level; the node logs a lot at Info.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

// p2pUseless is what the node warns on every start when, as here, it has
// no networking on purpose.
const p2pUseless = "P2P server will be useless, neither dialing nor listening"

func (h minLevel) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == p2pUseless {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(as), h.min}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{h.Handler.WithGroup(name), h.min}
}
