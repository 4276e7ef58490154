package anchor

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ethereum/go-ethereum/common"
)

// stateFile, in the embedded chain's directory, records what crow made
// there. The chain itself is in nodeName/ (geth's layout).
const (
	stateFile   = "crow-chain.json"
	stateFormat = 1
)

// chainState is the content of stateFile. Fields are only ever added.
type chainState struct {
	Format      int            `json:"format"`
	Account     common.Address `json:"account"`  // the anchoring key's address, funded in genesis
	ChainID     uint64         `json:"chain_id"` // 1337
	Genesis     common.Hash    `json:"genesis"`
	Contract    common.Address `json:"contract"`
	DeployBlock uint64         `json:"deploy_block"` // 0 if unknown
	// Legacy lists contracts this chain anchored with before (version 1,
	// one storage entry per state version), oldest first.
	Legacy []common.Address `json:"legacy_contracts,omitempty"`
}

// readState returns nil, nil when dir has no state file.
func readState(dir string) (*chainState, error) {
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("anchor: reading %s: %w", stateFile, err)
	}
	var st chainState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("anchor: parsing %s: %w", stateFile, err)
	}
	if st.Format != stateFormat {
		return nil, fmt.Errorf("anchor: %s has format %d, this crow reads %d", stateFile, st.Format, stateFormat)
	}
	return &st, nil
}

// writeState writes st atomically: temp file, fsync, rename, fsync dir.
func writeState(dir string, st chainState) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("anchor: encoding %s: %w", stateFile, err)
	}
	b = append(b, '\n')
	f, err := os.CreateTemp(dir, stateFile+".tmp*")
	if err != nil {
		return fmt.Errorf("anchor: writing %s: %w", stateFile, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after the rename
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("anchor: writing %s: %w", stateFile, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("anchor: syncing %s: %w", stateFile, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("anchor: writing %s: %w", stateFile, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, stateFile)); err != nil {
		return fmt.Errorf("anchor: renaming %s: %w", stateFile, err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync() // best effort: makes the rename durable on most filesystems
		d.Close()
	}
	return nil
}
