package registry

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/crow-sync/crow/home"
)

// MirrorVersion is the format version of instances.json.
const MirrorVersion = 1

// Mirror is the content of $CROW_HOME/instances.json: the merged view as
// this machine last saw it, for the CLI and start-up scripts that run before
// (or without) the database. Compatibility: fields are only added; a reader
// must ignore unknown fields. Example:
//
//	{"version":1,"crow_id":"crow1…","self":"<instance id>","updated_at":"2026-11-29T21:00:00Z",
//	 "instances":[{"id":"…","name":"desk","role":"home","gateway_url":"http://100.64.0.1:3001",
//	   "sync_addrs":["/ip4/100.64.0.1/tcp/3002"],"public_key":"<hex>","last_seen":1795987200,
//	   "status":"online","created_at":"2026-11-01T10:00:00Z"}]}
type Mirror struct {
	Version   int        `json:"version"`
	CrowID    string     `json:"crow_id"`
	Self      string     `json:"self"`
	UpdatedAt string     `json:"updated_at"` // RFC 3339
	Instances []Instance `json:"instances"`  // as List returns them
}

// ReadMirror reads an instances.json written by a Registry.
func ReadMirror(path string) (Mirror, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Mirror{}, fmt.Errorf("reading instances mirror: %w", err)
	}
	var m Mirror
	if err := json.Unmarshal(b, &m); err != nil {
		return Mirror{}, fmt.Errorf("decoding instances mirror %s: %w", path, err)
	}
	if m.Version != MirrorVersion {
		return Mirror{}, fmt.Errorf("decoding instances mirror %s: unsupported version %d", path, m.Version)
	}
	if m.Instances == nil {
		m.Instances = []Instance{}
	}
	return m, nil
}

// writeMirror writes the current merged view to the mirror path, if any,
// with home.AtomicWrite (temp → fsync → rename → fsync dir), mode 0600 like
// the other $CROW_HOME files.
// Failures are logged, not returned: the table is the truth and the next
// change (or probe round) rewrites the file.
func (r *Registry) writeMirror() {
	if r.mirrorPath == "" {
		return
	}
	r.mirrorMu.Lock()
	defer r.mirrorMu.Unlock()
	m := Mirror{
		Version: MirrorVersion, CrowID: r.crowID, Self: r.selfID,
		UpdatedAt: rfc3339(r.clock.Now()), Instances: r.List(),
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err == nil {
		err = home.AtomicWrite(r.mirrorPath, append(b, '\n'), 0o600)
	}
	if err != nil {
		r.log.Error("writing instances mirror", "path", r.mirrorPath, "err", err)
	}
}
