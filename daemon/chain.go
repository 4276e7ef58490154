package daemon

import (
	"context"
	"crypto/ecdsa"
	"fmt"
	"log/slog"

	"github.com/ethereum/go-ethereum/common"
	ethcrypto "github.com/ethereum/go-ethereum/crypto"

	"github.com/crow-sync/crow/anchor"
	"github.com/crow-sync/crow/home"
	"github.com/crow-sync/crow/registry"
)

// openChain opens the anchoring chain (SPEC §11): an external EVM chain when
// [chain] rpc_url is set (its contract deployed now if none is configured),
// else, on home, the embedded dev chain in $CROW_HOME/chain. A satellite
// without rpc_url reads no chain (nil): its verify answers rely on home's
// replicated anchor records.
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
		return dialChain(ctx, cfg, key, log)
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

func dialChain(ctx context.Context, cfg home.Config, key *ecdsa.PrivateKey, log *slog.Logger) (anchor.Chain, error) {
	if cfg.Chain.Contract == "" {
		addr, err := anchor.Deploy(ctx, cfg.Chain.RPCURL, key)
		if err != nil {
			return nil, fmt.Errorf("deploying ProjectStateAnchor: %w", err)
		}
		log.Warn("deployed ProjectStateAnchor; put it in config.toml ([chain] contract) so restarts use it", "contract", addr.Hex())
		cfg.Chain.Contract = addr.Hex()
	}
	if !common.IsHexAddress(cfg.Chain.Contract) {
		return nil, fmt.Errorf("[chain] contract %q is not an address", cfg.Chain.Contract)
	}
	ch, err := anchor.DialRPC(ctx, cfg.Chain.RPCURL, common.HexToAddress(cfg.Chain.Contract), key)
	if err != nil {
		return nil, fmt.Errorf("connecting to the chain: %w", err)
	}
	return ch, nil
}
