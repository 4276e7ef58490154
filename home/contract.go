package home

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/ethereum/go-ethereum/common"
)

// ContractFormat is the format of a ContractRecord file.
const ContractFormat = "crow-contract-v1"

// Status of a ContractRecord.
const (
	// ContractDeploying: the deployment is about to be sent or in flight;
	// Contract is where it lands (Account's nonce DeployNonce), DeployBlock a
	// lower bound. Written before the transaction, so a crash in between
	// cannot lead to a second contract.
	ContractDeploying = "deploying"
	// ContractDeployed: the chain has code at Contract.
	ContractDeployed = "deployed"
)

// ContractRecord is the contract home deployed on an RPC chain, kept in
// chain-rpc.json or checkpoint-rpc.json (mode 0600) so that restarts use it
// and never deploy another. It names no RPC URL (the URL may carry an API
// key): the chain is identified by ChainID and Genesis, the hash of its
// block 0.
//
// Compatibility: fields are only ever added; a reader refuses a Format it
// does not know.
type ContractRecord struct {
	Format      string         `json:"format"`       // ContractFormat
	Status      string         `json:"status"`       // ContractDeploying or ContractDeployed
	ChainID     uint64         `json:"chain_id"`     // eth_chainId
	Genesis     common.Hash    `json:"genesis_hash"` // hash of block 0
	Contract    common.Address `json:"contract"`
	DeployBlock uint64         `json:"deploy_block"` // block of the deployment (a lower bound while deploying)
	DeployedAt  time.Time      `json:"deployed_at"`  // when home deployed it (sent it, while deploying)
	Account     common.Address `json:"account"`      // the deploying account
	DeployNonce uint64         `json:"deploy_nonce"` // Account's nonce of the deployment
	// Adopted: home did not deploy it but was configured with it ([chain]
	// contract) when it had no record; DeployBlock and DeployNonce are then
	// 0 (unknown) and DeployedAt is when it was recorded.
	Adopted bool `json:"adopted,omitempty"`
}

// ReadContractRecord reads the record at path: nil and no error if there is
// none, an error naming path if it cannot be used.
func ReadContractRecord(path string) (*ContractRecord, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	var r ContractRecord
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if r.Format != ContractFormat {
		return nil, fmt.Errorf("reading %s: format %q, want %q", path, r.Format, ContractFormat)
	}
	if r.Status != ContractDeploying && r.Status != ContractDeployed {
		return nil, fmt.Errorf("reading %s: status %q, want %q or %q", path, r.Status, ContractDeploying, ContractDeployed)
	}
	if r.Contract == (common.Address{}) || r.Genesis == (common.Hash{}) {
		return nil, fmt.Errorf("reading %s: no contract or genesis_hash", path)
	}
	return &r, nil
}

// WriteContractRecord replaces the record at path atomically (AtomicWrite,
// mode 0600), setting Format.
func WriteContractRecord(path string, r ContractRecord) error {
	r.Format = ContractFormat
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return AtomicWrite(path, append(b, '\n'), 0o600)
}
