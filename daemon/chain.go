package daemon

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/ethereum/go-ethereum/common"
	ethcrypto "github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/crow-sync/crow/anchor"
	"github.com/crow-sync/crow/home"
	"github.com/crow-sync/crow/registry"
)

// chainOpenTimeout bounds connecting to an RPC chain, checking its contract
// and, on the first start, deploying it.
const chainOpenTimeout = 3 * time.Minute

// openChain opens the anchoring chain (SPEC §11): an external EVM chain when
// [chain] rpc_url is set, else, on home, the embedded dev chain in
// $CROW_HOME/chain. A satellite without rpc_url reads no chain (nil): its
// verify answers rely on home's replicated anchor records.
//
// On an RPC chain the contract follows resolveContract: the one home deployed
// and recorded in chain-rpc.json, deployed once if there is none, never
// another one silently.
func openChain(ctx context.Context, h *home.Home, cfg home.Config, log *slog.Logger) (anchor.Chain, error) {
	var key *ecdsa.PrivateKey
	if h.HasSeed() {
		key = h.Seed().AnchorKey()
	}
	if cfg.Chain.KeyFile != "" {
		k, err := ethcrypto.LoadECDSA(cfg.Chain.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("reading the chain key %s: %w", cfg.Chain.KeyFile, err)
		}
		key = k
	}
	if cfg.Chain.RPCURL != "" {
		canDeploy := key != nil
		if key == nil {
			// An instance without the seed only reads the chain: a throwaway
			// key satisfies the client and can send nothing (no funds).
			if cfg.Chain.Contract == "" {
				return nil, fmt.Errorf("[chain] rpc_url is set but [chain] contract is not: an instance without the master seed reads home's contract, it cannot deploy one")
			}
			k, err := ethcrypto.GenerateKey()
			if err != nil {
				return nil, err
			}
			key = k
		}
		ch, err := dialContract(ctx, rpcSection{
			Name:       "[chain]",
			URL:        cfg.Chain.RPCURL,
			Configured: cfg.Chain.Contract,
			StateFile:  h.ChainRPCFile(),
		}, key, canDeploy, log)
		if err != nil {
			return nil, err
		}
		ch.SetTxPolicy(anchor.TxPolicy{MaxFeePerGas: cfg.Chain.MaxFeeWei(), MaxPriorityFeePerGas: cfg.Chain.MaxPriorityFeeWei(),
			ReplaceAfter: cfg.Chain.ReplaceAfter.Std()})
		return ch, nil
	}
	if h.Role != registry.RoleHome {
		return nil, nil
	}
	ch, err := anchor.OpenEmbedded(h.ChainDir(), key, log.With("component", "chain"))
	if err != nil {
		return nil, fmt.Errorf("opening the embedded chain in %s: %w", h.ChainDir(), err)
	}
	return ch, nil
}

// dialCheckpoint opens the [chain.checkpoint] chain, or returns nil when
// checkpoints are off. Only an instance holding the seed checkpoints; the
// key is key_file's, else the seed's anchoring key. The contract follows the
// same rules as the anchoring chain's, recorded in checkpoint-rpc.json.
func dialCheckpoint(ctx context.Context, h *home.Home, cfg home.Config, log *slog.Logger) (*anchor.RPC, error) {
	cp := cfg.Chain.Checkpoint
	if !cp.Enabled() {
		return nil, nil
	}
	if !h.HasSeed() {
		return nil, fmt.Errorf("[chain.checkpoint] is set on an instance without the master seed: checkpoints are sent by home")
	}
	key := h.Seed().AnchorKey()
	if cp.KeyFile != "" {
		k, err := ethcrypto.LoadECDSA(cp.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("reading the checkpoint key %s: %w", cp.KeyFile, err)
		}
		key = k
	}
	ch, err := dialContract(ctx, rpcSection{
		Name:       "[chain.checkpoint]",
		URL:        cp.RPCURL,
		Configured: cp.Contract,
		StateFile:  h.CheckpointRPCFile(),
	}, key, true, log)
	if err != nil {
		return nil, err
	}
	ch.SetTxPolicy(anchor.TxPolicy{MaxFeePerGas: cp.MaxFeeWei(), ReplaceAfter: cfg.Chain.ReplaceAfter.Std()})
	return ch, nil
}

// rpcSection is one config section naming an RPC chain and its contract.
type rpcSection struct {
	Name       string // "[chain]" or "[chain.checkpoint]", for messages
	URL        string // its rpc_url
	Configured string // its contract, "" if none (an address: Config.Validate)
	StateFile  string // where the deployed contract is recorded
}

// dialContract resolves the section's contract (deploying it with key if
// canDeploy and there is none) and binds an RPC Chain to it.
func dialContract(ctx context.Context, sec rpcSection, key *ecdsa.PrivateKey, canDeploy bool, log *slog.Logger) (*anchor.RPC, error) {
	ctx, cancel := context.WithTimeout(ctx, chainOpenTimeout)
	defer cancel()
	ec, err := ethclient.DialContext(ctx, sec.URL)
	if err != nil {
		return nil, fmt.Errorf("connecting to the %s chain at %s: %w", sec.Name, redactURL(sec.URL), err)
	}
	defer ec.Close()
	bind := func(ctx context.Context, addr common.Address) (*anchor.RPC, error) {
		var ch *anchor.RPC
		var err error
		if canDeploy {
			ch, err = anchor.DialRPC(ctx, sec.URL, addr, key)
		} else {
			ch, err = anchor.DialRPCReadOnly(ctx, sec.URL, addr) // a satellite: reads home's contract
		}
		if err != nil {
			return nil, fmt.Errorf("binding the %s contract %s at %s: %w", sec.Name, addr.Hex(), redactURL(sec.URL), err)
		}
		return ch, nil
	}
	var checked *anchor.RPC // bound by Check, if it ran
	site := contractSite{rpcSection: sec, Account: ethcrypto.PubkeyToAddress(key.PublicKey), Now: time.Now}
	if canDeploy {
		site.Deploy = func(ctx context.Context) (common.Address, error) { return anchor.Deploy(ctx, sec.URL, key) }
		site.Check = func(ctx context.Context, addr common.Address) (err error) {
			checked, err = bind(ctx, addr)
			return err
		}
	}
	addr, err := resolveContract(ctx, ec, site, log)
	if err != nil {
		if checked != nil {
			checked.Close()
		}
		return nil, err
	}
	if checked != nil {
		return checked, nil
	}
	return bind(ctx, addr)
}

// Why resolveContract refuses to start. The error it returns matches one of
// these (errors.Is) and reads as a paragraph naming the addresses, the chain,
// the file and what to do.
var (
	errChainChanged    = errors.New("the chain is not the one the contract was deployed on")
	errContractChanged = errors.New("the configured contract is not the one home deployed")
	errNoContract      = errors.New("no contract on the chain")
	errDeployPending   = errors.New("the contract deployment is still pending")
	errDeployLost      = errors.New("the recorded contract deployment left no contract")
)

// refusal is an error whose text is msg alone and which matches kind.
type refusal struct {
	kind error
	msg  string
}

func (r *refusal) Error() string { return r.msg }
func (r *refusal) Unwrap() error { return r.kind }

func refuse(kind error, format string, args ...any) error {
	return &refusal{kind: kind, msg: fmt.Sprintf(format, args...)}
}

// contractSite is what resolveContract needs to know about one RPC chain.
type contractSite struct {
	rpcSection
	Account common.Address                                    // the signing account (the deployer)
	Deploy  func(ctx context.Context) (common.Address, error) // deploys the contract; nil: this instance cannot
	Now     func() time.Time                                  // for deployed_at
	// Check, if set, vets a configured contract before home records it
	// (dialContract binds the client there, which checks the owner), so a
	// mistyped address is not kept.
	Check func(ctx context.Context, addr common.Address) error
}

// resolveContract returns the contract to anchor with on the chain ec talks
// to, under these rules (SPEC §11: never redeployed silently):
//
//  1. A record in s.StateFile (home.ContractRecord) names the chain by id and
//     genesis hash: another chain (a dev chain restarted without its datadir,
//     another network behind the URL) is refused, naming both.
//  2. A configured contract other than the recorded one is refused, naming
//     both; the way to move on purpose is to remove the file.
//  3. The recorded contract must have code on the chain, else refused ("was
//     it reset?"). Otherwise it is the answer, configured or not.
//  4. Without a record, a configured contract is used (it must have code);
//     an instance that can deploy records it (adopted), so that dropping the
//     setting later cannot lead to a deployment.
//  5. Without either, s.Deploy deploys it, and the record is written before
//     the transaction (status deploying, with the nonce and so the address
//     it lands at) and after it (deployed, with its block). A start that
//     finds a deploying record adopts the contract if it landed, deploys
//     again only if the nonce was never used, and otherwise refuses.
//
// Every file write is atomic (home.WriteContractRecord).
func resolveContract(ctx context.Context, ec *ethclient.Client, s contractSite, log *slog.Logger) (common.Address, error) {
	rec, err := home.ReadContractRecord(s.StateFile)
	if err != nil {
		return common.Address{}, err
	}
	chainID, genesis, err := chainIdentity(ctx, ec)
	if err != nil {
		return common.Address{}, fmt.Errorf("reading the %s chain at %s: %w", s.Name, redactURL(s.URL), err)
	}
	if rec == nil {
		if s.Configured != "" {
			addr := common.HexToAddress(s.Configured)
			if err := s.checkCode(ctx, ec, addr, false); err != nil {
				return common.Address{}, err
			}
			if s.Deploy != nil {
				// Home keeps it too, so that dropping the setting later
				// cannot lead to a deployment.
				if s.Check != nil {
					if err := s.Check(ctx, addr); err != nil {
						return common.Address{}, err
					}
				}
				err := home.WriteContractRecord(s.StateFile, home.ContractRecord{Status: home.ContractDeployed, ChainID: chainID,
					Genesis: genesis, Contract: addr, DeployedAt: s.Now().UTC(), Account: s.Account, Adopted: true})
				if err != nil {
					return common.Address{}, fmt.Errorf("recording the %s contract %s: %w", s.Name, addr.Hex(), err)
				}
				log.Info("recorded the configured contract; restarts keep it", "section", s.Name, "contract", addr.Hex(), "file", s.StateFile)
			}
			return addr, nil
		}
		return s.deploy(ctx, ec, chainID, genesis, log)
	}
	if rec.ChainID != chainID || rec.Genesis != genesis {
		return common.Address{}, refuse(errChainChanged, "the %s rpc_url %s serves chain id %d with genesis %s, but %s records contract %s on chain id %d with genesis %s. "+
			"Was the chain reset (a geth --dev restarted without its datadir) or the URL pointed at another network? "+
			"Anchors made on the recorded chain cannot be checked on this one. Point rpc_url back at that chain, or, to start over on this one, remove %s: the next start deploys a new contract",
			s.Name, redactURL(s.URL), chainID, genesis.Hex(), s.StateFile, rec.Contract.Hex(), rec.ChainID, rec.Genesis.Hex(), s.StateFile)
	}
	if s.Configured != "" && common.HexToAddress(s.Configured) != rec.Contract {
		how := "deployed"
		if rec.Adopted {
			how = "uses"
		}
		return common.Address{}, refuse(errContractChanged, "%s contract is %s, but this home %s %s on chain id %d and records it in %s. "+
			"crow does not switch contracts silently: the anchors made so far live in %s. "+
			"To keep it, remove the contract setting (or make it %s); to move to %s on purpose, remove %s",
			s.Name, common.HexToAddress(s.Configured).Hex(), how, rec.Contract.Hex(), chainID, s.StateFile,
			rec.Contract.Hex(), rec.Contract.Hex(), common.HexToAddress(s.Configured).Hex(), s.StateFile)
	}
	if rec.Status == home.ContractDeploying {
		return s.finishDeploy(ctx, ec, rec, log)
	}
	if err := s.checkCode(ctx, ec, rec.Contract, true); err != nil {
		return common.Address{}, err
	}
	return rec.Contract, nil
}

// checkCode refuses an address without code; recorded says whether it
// comes from s.StateFile (else from the configured contract).
func (s contractSite) checkCode(ctx context.Context, ec *ethclient.Client, addr common.Address, recorded bool) error {
	code, err := ec.CodeAt(ctx, addr, nil)
	if err != nil {
		return fmt.Errorf("reading the code at %s on the %s chain: %w", addr.Hex(), s.Name, err)
	}
	if len(code) > 0 {
		return nil
	}
	if !recorded {
		return refuse(errNoContract, "the chain at %s has no contract at %s (%s contract names it): is it the right chain and address?",
			redactURL(s.URL), addr.Hex(), s.Name)
	}
	return refuse(errNoContract, "the chain at %s has no contract at %s: was it reset? %s records it as this home's contract. "+
		"Restore the chain, or remove %s to deploy a new contract (anchors made on the old one will no longer verify)",
		redactURL(s.URL), addr.Hex(), s.StateFile, s.StateFile)
}

// deploy deploys the contract and records it, before and after.
func (s contractSite) deploy(ctx context.Context, ec *ethclient.Client, chainID uint64, genesis common.Hash, log *slog.Logger) (common.Address, error) {
	if s.Deploy == nil {
		return common.Address{}, fmt.Errorf("%s rpc_url is set but contract is not, and this instance cannot deploy one", s.Name)
	}
	nonce, err := ec.PendingNonceAt(ctx, s.Account)
	if err != nil {
		return common.Address{}, fmt.Errorf("reading the nonce of %s: %w", s.Account.Hex(), err)
	}
	head, err := ec.BlockNumber(ctx)
	if err != nil {
		return common.Address{}, fmt.Errorf("reading the %s chain's head: %w", s.Name, err)
	}
	rec := home.ContractRecord{
		Status:      home.ContractDeploying,
		ChainID:     chainID,
		Genesis:     genesis,
		Contract:    ethcrypto.CreateAddress(s.Account, nonce),
		DeployBlock: head + 1,
		DeployedAt:  s.Now().UTC(),
		Account:     s.Account,
		DeployNonce: nonce,
	}
	if err := home.WriteContractRecord(s.StateFile, rec); err != nil {
		return common.Address{}, err
	}
	log.Info("deploying ProjectStateAnchor", "section", s.Name, "chain_id", chainID, "account", s.Account.Hex(), "nonce", nonce, "contract", rec.Contract.Hex())
	addr, err := s.Deploy(ctx)
	if err != nil {
		return common.Address{}, fmt.Errorf("deploying ProjectStateAnchor on the %s chain (recorded in %s; the next start picks it up): %w", s.Name, s.StateFile, err)
	}
	if addr != rec.Contract {
		// Another sender used the account between our read and the deploy.
		log.Warn("the contract landed at another nonce than expected", "expected", rec.Contract.Hex(), "contract", addr.Hex())
		rec.Contract = addr
	}
	return s.recordDeployed(ctx, ec, rec, log)
}

// finishDeploy settles a deploying record left by an earlier start.
func (s contractSite) finishDeploy(ctx context.Context, ec *ethclient.Client, rec *home.ContractRecord, log *slog.Logger) (common.Address, error) {
	code, err := ec.CodeAt(ctx, rec.Contract, nil)
	if err != nil {
		return common.Address{}, fmt.Errorf("reading the code at %s on the %s chain: %w", rec.Contract.Hex(), s.Name, err)
	}
	if len(code) > 0 {
		log.Warn("adopting the contract deployed by an earlier start", "section", s.Name, "contract", rec.Contract.Hex())
		return s.recordDeployed(ctx, ec, *rec, log)
	}
	mined, err := ec.NonceAt(ctx, rec.Account, nil)
	if err != nil {
		return common.Address{}, fmt.Errorf("reading the nonce of %s: %w", rec.Account.Hex(), err)
	}
	pending, err := ec.PendingNonceAt(ctx, rec.Account)
	if err != nil {
		return common.Address{}, fmt.Errorf("reading the nonce of %s: %w", rec.Account.Hex(), err)
	}
	switch {
	case mined > rec.DeployNonce:
		return common.Address{}, refuse(errDeployLost, "%s records a deployment from %s with nonce %d, to land at %s, but that nonce is used and there is no code there "+
			"(the deployment reverted, or another transaction took the nonce). Remove %s to deploy a new contract",
			s.StateFile, rec.Account.Hex(), rec.DeployNonce, rec.Contract.Hex(), s.StateFile)
	case pending > rec.DeployNonce:
		return common.Address{}, refuse(errDeployPending, "the deployment from %s with nonce %d (to land at %s, recorded in %s) is not included yet; start again once it is",
			rec.Account.Hex(), rec.DeployNonce, rec.Contract.Hex(), s.StateFile)
	}
	// The nonce was never used: the transaction did not reach the chain.
	log.Warn("the deployment recorded by an earlier start never reached the chain; deploying again", "section", s.Name, "file", s.StateFile)
	return s.deploy(ctx, ec, rec.ChainID, rec.Genesis, log)
}

// recordDeployed pins the deployment's block and writes the record as
// deployed.
func (s contractSite) recordDeployed(ctx context.Context, ec *ethclient.Client, rec home.ContractRecord, log *slog.Logger) (common.Address, error) {
	rec.DeployBlock = deployBlock(ctx, ec, rec.Contract, rec.DeployBlock)
	rec.Status = home.ContractDeployed
	if err := home.WriteContractRecord(s.StateFile, rec); err != nil {
		return common.Address{}, fmt.Errorf("recording the contract %s deployed on the %s chain: %w", rec.Contract.Hex(), s.Name, err)
	}
	log.Info("deployed ProjectStateAnchor; restarts use it", "section", s.Name, "contract", rec.Contract.Hex(),
		"chain_id", rec.ChainID, "block", rec.DeployBlock, "file", s.StateFile)
	return rec.Contract, nil
}

// maxDeployScan bounds the blocks deployBlock reads.
const maxDeployScan = 256

// deployBlock finds the block whose receipts created addr, scanning from
// from (a lower bound) to the head; where it cannot tell (a long way off,
// eth_getBlockReceipts unsupported) it returns from, still a safe start for
// a log scan.
func deployBlock(ctx context.Context, ec *ethclient.Client, addr common.Address, from uint64) uint64 {
	head, err := ec.BlockNumber(ctx)
	if err != nil || head < from || head-from >= maxDeployScan {
		return from
	}
	for n := from; n <= head; n++ {
		rcpts, err := ec.BlockReceipts(ctx, rpc.BlockNumberOrHashWithNumber(rpc.BlockNumber(n)))
		if err != nil {
			return from
		}
		for _, r := range rcpts {
			if r.ContractAddress == addr && r.Status == 1 {
				return n
			}
		}
	}
	return from
}

// chainIdentity returns the chain id and the hash of block 0, as the node
// reports it (not recomputed from the header, which on some L2s carries
// fields go-ethereum does not hash).
func chainIdentity(ctx context.Context, ec *ethclient.Client) (uint64, common.Hash, error) {
	id, err := ec.ChainID(ctx)
	if err != nil {
		return 0, common.Hash{}, fmt.Errorf("reading the chain id: %w", err)
	}
	if !id.IsUint64() {
		return 0, common.Hash{}, fmt.Errorf("chain id %s does not fit 64 bits", id)
	}
	var b0 *struct {
		Hash common.Hash `json:"hash"`
	}
	if err := ec.Client().CallContext(ctx, &b0, "eth_getBlockByNumber", "0x0", false); err != nil {
		return 0, common.Hash{}, fmt.Errorf("reading block 0: %w", err)
	}
	if b0 == nil || b0.Hash == (common.Hash{}) {
		return 0, common.Hash{}, errors.New("reading block 0: the node has none")
	}
	return id.Uint64(), b0.Hash, nil
}

// redactURL is an RPC URL fit for logs and errors: the scheme and host only,
// since providers put API keys in the path, the query or the user info.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		if u != nil && u.Scheme == "" && err == nil {
			return raw // an IPC path
		}
		return "(unparsable URL)"
	}
	out := u.Scheme + "://" + u.Host
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		out += "/…"
	}
	return out
}
