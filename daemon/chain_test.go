package daemon

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"errors"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	ethcrypto "github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"

	"github.com/crow-sync/crow/anchor"
	"github.com/crow-sync/crow/home"
	"github.com/crow-sync/crow/identity"
)

// devChain is an embedded chain reached only over its loopback JSON-RPC, as
// an RPC backend (geth --dev) would be.
type devChain struct {
	url string
	key *ecdsa.PrivateKey
	acc common.Address
	ec  *ethclient.Client
}

func newDevChain(t *testing.T, key *ecdsa.PrivateKey) *devChain {
	t.Helper()
	if key == nil {
		var err error
		if key, err = ethcrypto.GenerateKey(); err != nil {
			t.Fatal(err)
		}
	}
	e, err := anchor.OpenEmbedded(t.TempDir(), key, nil, anchor.WithLoopbackRPC("127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	url := e.Info().RPCURL
	if url == "" {
		t.Fatal("no loopback RPC URL")
	}
	ec, err := ethclient.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ec.Close)
	return &devChain{url: url, key: key, acc: ethcrypto.PubkeyToAddress(key.PublicKey), ec: ec}
}

var deployedAt = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// site is a contractSite on c with its state file in a fresh directory and
// a Deploy that counts its calls.
func (c *devChain) site(t *testing.T, deploys *atomic.Int32) contractSite {
	return contractSite{
		rpcSection: rpcSection{Name: "[chain]", URL: c.url, StateFile: filepath.Join(t.TempDir(), home.ChainRPCName)},
		Account:    c.acc,
		Deploy: func(ctx context.Context) (common.Address, error) {
			deploys.Add(1)
			return anchor.Deploy(ctx, c.url, c.key)
		},
		Now: func() time.Time { return deployedAt },
	}
}

func (c *devChain) nonce(t *testing.T) uint64 {
	t.Helper()
	n, err := c.ec.NonceAt(context.Background(), c.acc, nil)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (c *devChain) genesis(t *testing.T) common.Hash {
	t.Helper()
	h, err := c.ec.HeaderByNumber(context.Background(), common.Big0)
	if err != nil {
		t.Fatal(err)
	}
	return h.Hash()
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

func readRecord(t *testing.T, path string) home.ContractRecord {
	t.Helper()
	r, err := home.ReadContractRecord(path)
	if err != nil || r == nil {
		t.Fatalf("record %s: %v, %v", path, r, err)
	}
	return *r
}

func wantErr(t *testing.T, err, kind error, names ...string) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("error %v, want %v", err, kind)
	}
	for _, n := range names {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("error %q does not name %q", err, n)
		}
	}
}

// TestChainResolveContract: the first start deploys and records the
// contract; later starts use it and deploy nothing; a configured contract
// must match; a reset chain or a vanished contract is refused.
func TestChainResolveContract(t *testing.T) {
	ctx := context.Background()
	c := newDevChain(t, nil)
	var deploys atomic.Int32
	s := c.site(t, &deploys)

	// First start: deploys, records.
	addr, err := resolveContract(ctx, c.ec, s, quiet())
	if err != nil {
		t.Fatal(err)
	}
	if deploys.Load() != 1 {
		t.Fatalf("%d deployments, want 1", deploys.Load())
	}
	rec := readRecord(t, s.StateFile)
	if rec.Status != home.ContractDeployed || rec.Contract != addr || rec.ChainID != 1337 || rec.Genesis != c.genesis(t) ||
		!rec.DeployedAt.Equal(deployedAt) || rec.Account != c.acc || rec.DeployNonce != 1 {
		t.Errorf("record = %+v (contract %s)", rec, addr.Hex())
	}
	// deploy_block is the block that created it (the embedded chain keeps
	// every block's state).
	before, _ := c.ec.CodeAt(ctx, addr, new(big.Int).SetUint64(rec.DeployBlock-1))
	at, _ := c.ec.CodeAt(ctx, addr, new(big.Int).SetUint64(rec.DeployBlock))
	if len(before) != 0 || len(at) == 0 {
		t.Errorf("deploy_block %d: code before %d bytes, at %d bytes", rec.DeployBlock, len(before), len(at))
	}
	st, err := os.Stat(s.StateFile)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("state file: %v, %v", st, err)
	}
	if ents, _ := os.ReadDir(filepath.Dir(s.StateFile)); len(ents) != 1 {
		t.Errorf("state dir holds %d entries (a temp file left?)", len(ents))
	}

	// Second start, no contract configured: the recorded one, nothing sent.
	n := c.nonce(t)
	again, err := resolveContract(ctx, c.ec, s, quiet())
	if err != nil || again != addr {
		t.Fatalf("second start: %s, %v; want %s", again.Hex(), err, addr.Hex())
	}
	if deploys.Load() != 1 || c.nonce(t) != n {
		t.Errorf("second start deployed: %d deployments, nonce %d → %d", deploys.Load(), n, c.nonce(t))
	}

	// The same contract configured is fine.
	s.Configured = strings.ToLower(addr.Hex())
	if got, err := resolveContract(ctx, c.ec, s, quiet()); err != nil || got != addr {
		t.Errorf("configured = recorded: %s, %v", got.Hex(), err)
	}

	// Another one configured: refused, naming both, the chain id and the file.
	other := common.HexToAddress("0x00000000000000000000000000000000000000c0")
	s.Configured = other.Hex()
	_, err = resolveContract(ctx, c.ec, s, quiet())
	wantErr(t, err, errContractChanged, addr.Hex(), other.Hex(), "1337", s.StateFile, "remove")
	s.Configured = ""

	// The recorded contract gone (the record points at an empty address).
	gone := rec
	gone.Contract = common.HexToAddress("0x00000000000000000000000000000000000000d0")
	if err := home.WriteContractRecord(s.StateFile, gone); err != nil {
		t.Fatal(err)
	}
	_, err = resolveContract(ctx, c.ec, s, quiet())
	wantErr(t, err, errNoContract, "the chain at "+c.url+" has no contract at "+gone.Contract.Hex()+": was it reset?", s.StateFile)

	// A chain with another id.
	otherID := rec
	otherID.ChainID = 5
	if err := home.WriteContractRecord(s.StateFile, otherID); err != nil {
		t.Fatal(err)
	}
	_, err = resolveContract(ctx, c.ec, s, quiet())
	wantErr(t, err, errChainChanged, "chain id 1337", "chain id 5", s.StateFile)
	if deploys.Load() != 1 {
		t.Errorf("a refused start deployed (%d deployments)", deploys.Load())
	}
}

// TestChainResolveOtherGenesis: the recorded chain replaced by another one
// behind the same kind of URL (a dev chain restarted without its datadir)
// is refused, naming both genesis hashes; nothing is deployed on it.
func TestChainResolveOtherGenesis(t *testing.T) {
	ctx := context.Background()
	a, b := newDevChain(t, nil), newDevChain(t, nil)
	var deploys atomic.Int32
	s := a.site(t, &deploys)
	if _, err := resolveContract(ctx, a.ec, s, quiet()); err != nil {
		t.Fatal(err)
	}
	s.URL = b.url
	nb := b.nonce(t)
	_, err := resolveContract(ctx, b.ec, s, quiet())
	wantErr(t, err, errChainChanged, a.genesis(t).Hex(), b.genesis(t).Hex(), s.StateFile)
	if deploys.Load() != 1 || b.nonce(t) != nb {
		t.Errorf("deployed on the other chain: %d deployments", deploys.Load())
	}
}

// TestChainResolveInterruptedDeploy: a deploying record left by a crash is
// adopted if the contract landed, deployed again only if its nonce was never
// used, refused otherwise; a failed deployment leaves the deploying record.
func TestChainResolveInterruptedDeploy(t *testing.T) {
	ctx := context.Background()
	c := newDevChain(t, nil)
	var deploys atomic.Int32
	s := c.site(t, &deploys)
	intent := func(nonce uint64, contract common.Address) {
		t.Helper()
		err := home.WriteContractRecord(s.StateFile, home.ContractRecord{Status: home.ContractDeploying, ChainID: 1337, Genesis: c.genesis(t),
			Contract: contract, DeployBlock: 1, DeployedAt: deployedAt, Account: c.acc, DeployNonce: nonce})
		if err != nil {
			t.Fatal(err)
		}
	}

	// A failed deployment: the intent stays.
	failing := s
	failing.Deploy = func(context.Context) (common.Address, error) { return common.Address{}, errors.New("boom") }
	if _, err := resolveContract(ctx, c.ec, failing, quiet()); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("failing deploy: %v", err)
	}
	if r := readRecord(t, s.StateFile); r.Status != home.ContractDeploying || r.DeployNonce != c.nonce(t) {
		t.Errorf("after a failed deploy: %+v", r)
	}
	// Its nonce was never used: the next start deploys, at that address.
	want := readRecord(t, s.StateFile).Contract
	got, err := resolveContract(ctx, c.ec, s, quiet())
	if err != nil || got != want || deploys.Load() != 1 {
		t.Fatalf("redeploy after an unused nonce: %s, %v (%d deployments), want %s", got.Hex(), err, deploys.Load(), want.Hex())
	}

	// The deployment landed but the start died before recording it.
	n := c.nonce(t)
	landed, err := anchor.Deploy(ctx, c.url, c.key)
	if err != nil || landed != ethcrypto.CreateAddress(c.acc, n) {
		t.Fatalf("deploy: %s, %v", landed.Hex(), err)
	}
	intent(n, landed)
	got, err = resolveContract(ctx, c.ec, s, quiet())
	if err != nil || got != landed || deploys.Load() != 1 {
		t.Fatalf("adopt: %s, %v (%d deployments), want %s", got.Hex(), err, deploys.Load(), landed.Hex())
	}
	if r := readRecord(t, s.StateFile); r.Status != home.ContractDeployed || r.DeployBlock <= 1 {
		t.Errorf("adopted record = %+v", r)
	}

	// The nonce used by something else and no code: refused.
	intent(0, common.HexToAddress("0x00000000000000000000000000000000000000e0"))
	_, err = resolveContract(ctx, c.ec, s, quiet())
	wantErr(t, err, errDeployLost, s.StateFile, "nonce 0")
	if deploys.Load() != 1 {
		t.Errorf("%d deployments", deploys.Load())
	}
}

// TestChainResolveConfigured: without a record, a configured contract is
// used (it must have code); home records it, so that dropping the setting
// does not deploy; a satellite (no Deploy) records nothing and needs one.
func TestChainResolveConfigured(t *testing.T) {
	ctx := context.Background()
	c := newDevChain(t, nil)
	var deploys atomic.Int32
	first := ethcrypto.CreateAddress(c.acc, 0) // the embedded chain's own contract

	sat := c.site(t, &deploys)
	sat.Deploy = nil
	sat.Configured = first.Hex()
	if got, err := resolveContract(ctx, c.ec, sat, quiet()); err != nil || got != first {
		t.Errorf("satellite, configured: %s, %v", got.Hex(), err)
	}
	if _, err := os.Stat(sat.StateFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a satellite recorded its contract: %v", err)
	}
	sat.Configured = ""
	if _, err := resolveContract(ctx, c.ec, sat, quiet()); err == nil || !strings.Contains(err.Error(), "cannot deploy") {
		t.Errorf("satellite without contract: %v", err)
	}

	s := c.site(t, &deploys)
	s.Configured = "0x00000000000000000000000000000000000000f0"
	_, err := resolveContract(ctx, c.ec, s, quiet())
	wantErr(t, err, errNoContract, common.HexToAddress(s.Configured).Hex(), "[chain] contract")

	// A configured contract the client refuses (say, owned by another
	// account) is not recorded.
	s.Configured = first.Hex()
	s.Check = func(context.Context, common.Address) error { return errors.New("not the owner") }
	if _, err := resolveContract(ctx, c.ec, s, quiet()); err == nil || !strings.Contains(err.Error(), "not the owner") {
		t.Errorf("check failed: %v", err)
	}
	if _, err := os.Stat(s.StateFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused contract was recorded: %v", err)
	}
	s.Check = nil
	if got, err := resolveContract(ctx, c.ec, s, quiet()); err != nil || got != first {
		t.Fatalf("home, configured: %s, %v", got.Hex(), err)
	}
	if rec := readRecord(t, s.StateFile); !rec.Adopted || rec.Contract != first || rec.Status != home.ContractDeployed {
		t.Errorf("adopted record = %+v", rec)
	}
	s.Configured = ""
	if got, err := resolveContract(ctx, c.ec, s, quiet()); err != nil || got != first {
		t.Errorf("setting dropped: %s, %v", got.Hex(), err)
	}
	s.Configured = "0x00000000000000000000000000000000000000f1"
	_, err = resolveContract(ctx, c.ec, s, quiet())
	wantErr(t, err, errContractChanged, "uses "+first.Hex(), common.HexToAddress(s.Configured).Hex())
	if deploys.Load() != 0 {
		t.Errorf("%d deployments", deploys.Load())
	}
}

// TestChainOpenRPC: openChain on a home with [chain] rpc_url deploys once,
// records the contract in $CROW_HOME/chain-rpc.json, and reopens it.
func TestChainOpenRPC(t *testing.T) {
	seed, err := identity.NewSeed(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "h")
	if _, err := home.Init(dir, "test", seed, home.RoleHome); err != nil {
		t.Fatal(err)
	}
	h, err := home.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := newDevChain(t, seed.AnchorKey()) // the seed's account is funded there
	cfg := home.DefaultConfig()
	cfg.Chain.RPCURL = c.url

	open := func() anchor.ChainInfo {
		t.Helper()
		ch, err := openChain(context.Background(), h, cfg, quiet())
		if err != nil {
			t.Fatal(err)
		}
		defer ch.Close()
		return ch.Info()
	}
	first := open()
	n := c.nonce(t)
	second := open()
	if first.Kind != anchor.KindRPC || first.Contract != second.Contract || c.nonce(t) != n {
		t.Errorf("first %+v, second %+v, nonce %d → %d", first, second, n, c.nonce(t))
	}
	if rec := readRecord(t, h.ChainRPCFile()); rec.Contract.Hex() != first.Contract {
		t.Errorf("recorded %s, opened %s", rec.Contract.Hex(), first.Contract)
	}
	cfg.Chain.Contract = ethcrypto.CreateAddress(c.acc, 0).Hex()
	if _, err := openChain(context.Background(), h, cfg, quiet()); !errors.Is(err, errContractChanged) {
		t.Errorf("configured another contract: %v", err)
	}

	// Checkpoints: off by default; on, the same rules in their own file.
	if cp, err := dialCheckpoint(context.Background(), h, cfg, quiet()); cp != nil || err != nil {
		t.Errorf("checkpoints off: %v, %v", cp, err)
	}
	cfg.Chain.Checkpoint.RPCURL = c.url
	cp, err := dialCheckpoint(context.Background(), h, cfg, quiet())
	if err != nil {
		t.Fatal(err)
	}
	cp.Close()
	rec := readRecord(t, h.CheckpointRPCFile())
	if rec.Contract.Hex() != cp.Info().Contract || rec.Contract.Hex() == first.Contract {
		t.Errorf("checkpoint contract %s, recorded %s (anchoring contract %s)", cp.Info().Contract, rec.Contract.Hex(), first.Contract)
	}
	n = c.nonce(t)
	cp, err = dialCheckpoint(context.Background(), h, cfg, quiet())
	if err != nil {
		t.Fatal(err)
	}
	cp.Close()
	if cp.Info().Contract != rec.Contract.Hex() || c.nonce(t) != n {
		t.Errorf("checkpoint reopened at %s, nonce %d → %d", cp.Info().Contract, n, c.nonce(t))
	}
}

func TestChainRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:8545":               "http://127.0.0.1:8545",
		"https://mainnet.infura.io/v3/SECRET": "https://mainnet.infura.io/…",
		"https://rpc.example/?apikey=SECRET":  "https://rpc.example/…",
		"https://user:SECRET@rpc.example":     "https://rpc.example/…",
		"wss://ws.example/":                   "wss://ws.example",
		"/var/run/geth.ipc":                   "/var/run/geth.ipc",
		"http://[::1]:" + strconv.Itoa(8545):  "http://[::1]:8545",
	} {
		if got := redactURL(in); got != want || strings.Contains(got, "SECRET") {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
