package anchor

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"log/slog"
	"math/big"

	"github.com/ethereum/go-ethereum/accounts/abi/bind"
	"github.com/ethereum/go-ethereum/common"
	ethcrypto "github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"

	"github.com/crow-sync/crow/anchor/contract"
)

// RPC is a Chain over any EVM JSON-RPC endpoint (geth --dev, a Clique PoA
// chain, an L2) where the contract is already deployed (see Deploy) and owned
// by the key.
type RPC struct {
	*client
}

var _ Chain = (*RPC)(nil)
var _ MemoryReader = (*RPC)(nil)

// DialRPC connects to rpcURL and binds the ProjectStateAnchor at contractAddr,
// signing with key. It fails if there is no contract there or key's account
// does not own it (ErrNotOwner). Transactions pay the endpoint's suggested
// EIP-1559 fees; the account must be funded.
func DialRPC(ctx context.Context, rpcURL string, contractAddr common.Address, key *ecdsa.PrivateKey) (*RPC, error) {
	return dialRPC(ctx, rpcURL, contractAddr, key, slog.New(slog.DiscardHandler))
}

func dialRPC(ctx context.Context, rpcURL string, contractAddr common.Address, key *ecdsa.PrivateKey, log *slog.Logger) (*RPC, error) {
	if key == nil {
		return nil, errors.New("anchor: DialRPC needs a key")
	}
	ec, chainID, err := dial(ctx, rpcURL)
	if err != nil {
		return nil, err
	}
	c, err := newClient(ec, contractAddr, key, chainID, ChainInfo{Kind: KindRPC, RPCURL: rpcURL}, log)
	if err != nil {
		ec.Close()
		return nil, err
	}
	if err := c.checkOwner(ctx); err != nil {
		ec.Close()
		return nil, err
	}
	return &RPC{client: c}, nil
}

// DialRPCReadOnly connects to rpcURL and binds the ProjectStateAnchor at
// contractAddr to read it (an instance without the anchoring key: a
// satellite reading home's contract). Its writing methods fail with
// ErrNotOwner.
func DialRPCReadOnly(ctx context.Context, rpcURL string, contractAddr common.Address) (*RPC, error) {
	key, err := ethcrypto.GenerateKey() // signs nothing: it owns no contract and holds no funds
	if err != nil {
		return nil, err
	}
	ec, chainID, err := dial(ctx, rpcURL)
	if err != nil {
		return nil, err
	}
	c, err := newClient(ec, contractAddr, key, chainID, ChainInfo{Kind: KindRPC, RPCURL: rpcURL}, slog.New(slog.DiscardHandler))
	if err != nil {
		ec.Close()
		return nil, err
	}
	if err := c.checkContract(ctx); err != nil {
		ec.Close()
		return nil, err
	}
	c.readOnly = true
	return &RPC{client: c}, nil
}

// Close closes the connection.
func (r *RPC) Close() error {
	r.closeClient()
	return nil
}

func dial(ctx context.Context, rpcURL string) (*ethclient.Client, *big.Int, error) {
	ec, err := ethclient.DialContext(ctx, rpcURL)
	if err != nil {
		return nil, nil, fmt.Errorf("dialing %s: %w", rpcURL, err)
	}
	chainID, err := ec.ChainID(ctx)
	if err != nil {
		ec.Close()
		return nil, nil, fmt.Errorf("reading chain id from %s: %w", rpcURL, err)
	}
	return ec, chainID, nil
}

// Deploy deploys a new ProjectStateAnchor owned by key's account through
// rpcURL, waits for it to be mined and returns its address.
func Deploy(ctx context.Context, rpcURL string, key *ecdsa.PrivateKey) (common.Address, error) {
	ec, chainID, err := dial(ctx, rpcURL)
	if err != nil {
		return common.Address{}, err
	}
	defer ec.Close()
	addr, _, err := deploy(ctx, ec, key, chainID, slog.New(slog.DiscardHandler))
	return addr, err
}

// deploy sends the contract creation, waits for it and checks the code is
// there. It returns the address and the block it was mined in.
func deploy(ctx context.Context, ec *ethclient.Client, key *ecdsa.PrivateKey, chainID *big.Int, log *slog.Logger) (common.Address, uint64, error) {
	opts, err := bind.NewKeyedTransactorWithChainID(key, chainID)
	if err != nil {
		return common.Address{}, 0, fmt.Errorf("deploying: making signer: %w", err)
	}
	opts.Context = ctx
	addr, tx, _, err := contract.DeployProjectStateAnchor(opts, ec)
	if err != nil {
		return common.Address{}, 0, fmt.Errorf("deploying: %w", err)
	}
	rcpt, err := waitMined(ctx, ec, tx.Hash(), log)
	if err != nil {
		return common.Address{}, 0, fmt.Errorf("deploying: waiting for tx %s: %w", tx.Hash().Hex(), err)
	}
	if rcpt.Status != 1 {
		return common.Address{}, 0, fmt.Errorf("deploying: %w: tx %s", ErrReverted, tx.Hash().Hex())
	}
	code, err := ec.CodeAt(ctx, addr, rcpt.BlockNumber) // at its block: "latest" may not be that block yet
	if err != nil {
		return common.Address{}, 0, fmt.Errorf("deploying: reading code: %w", err)
	}
	if len(code) == 0 {
		return common.Address{}, 0, fmt.Errorf("deploying: no code at %s after tx %s", addr.Hex(), tx.Hash().Hex())
	}
	log.Info("deployed ProjectStateAnchor", "contract", addr.Hex(), "tx", tx.Hash().Hex(), "block", rcpt.BlockNumber.Uint64())
	return addr, rcpt.BlockNumber.Uint64(), nil
}
