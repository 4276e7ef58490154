package home

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
)

// SyncPausedName is the file holding the operator's replication pauses
// (`crow sync pause [ID]`). Local to this data directory: never replicated,
// not in backups.
const SyncPausedName = "sync-paused.json"

// SyncPaused is what the operator paused: every peer (All) and/or the
// instances listed in Peers (ids, sorted, no duplicates).
type SyncPaused struct {
	All   bool     `json:"all"`
	Peers []string `json:"peers"`
}

// SyncPausedFile is the path of sync-paused.json.
func (p Paths) SyncPausedFile() string { return p.join(SyncPausedName) }

// ReadSyncPaused reads the pauses; a missing file is no pause.
func (p Paths) ReadSyncPaused() (SyncPaused, error) {
	var s SyncPaused
	b, err := os.ReadFile(p.SyncPausedFile())
	if errors.Is(err, fs.ErrNotExist) {
		return SyncPaused{Peers: []string{}}, nil
	}
	if err != nil {
		return s, fmt.Errorf("reading %s: %w", p.SyncPausedFile(), err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("reading %s: %w (fix or delete the file: it only holds `crow sync pause` state)", p.SyncPausedFile(), err)
	}
	s.Peers = normPeers(s.Peers)
	return s, nil
}

// WriteSyncPaused replaces the pauses atomically.
func (p Paths) WriteSyncPaused(s SyncPaused) error {
	s.Peers = normPeers(s.Peers)
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return AtomicWrite(p.SyncPausedFile(), append(b, '\n'), 0o600)
}

func normPeers(ids []string) []string {
	out := slices.Clone(ids)
	if out == nil {
		out = []string{}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
