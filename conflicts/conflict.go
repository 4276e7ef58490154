package conflicts

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/crow-sync/crow/store"
)

// Op classifies a conflict.
type Op string

// Conflict ops (the seed's sync_conflicts.op).
const (
	// OpUpdate: both versions are live edits of a shared row.
	OpUpdate Op = "update"
	// OpDelete: one version deletes the row, the other edits it.
	OpDelete Op = "delete"
	// OpInsert: both versions created the row independently (neither has any
	// other instance's history of it): an id collision. Restore refuses it.
	OpInsert Op = "insert"
)

// Version identifies and carries one version of a row.
type Version struct {
	InstanceID string          // origin
	Lamport    uint64          // lamport_ts
	VV         store.VV        // the version's own vector (not a merge)
	Deleted    bool            // a tombstone
	Data       json.RawMessage // the row data
}

// Conflict is a sync_conflicts record. JSON field names are stable: the seed's
// columns, plus the two versions' vectors and tombstone flags that restore
// and resolution replication need. resolved_at is null until resolved.
type Conflict struct {
	ID                string          `json:"id"`
	TableName         string          `json:"table_name"`
	RowID             string          `json:"row_id"`
	WinningInstanceID string          `json:"winning_instance_id"`
	LosingInstanceID  string          `json:"losing_instance_id"`
	WinningLamportTS  uint64          `json:"winning_lamport_ts"`
	LosingLamportTS   uint64          `json:"losing_lamport_ts"`
	WinningData       json.RawMessage `json:"winning_data"`
	LosingData        json.RawMessage `json:"losing_data"`
	Op                Op              `json:"op"`
	Resolved          bool            `json:"resolved"`
	ResolvedAt        *time.Time      `json:"resolved_at"`
	// Resolution is how it was resolved ("keep" or "restore"), "" while
	// unresolved. Resolved, ResolvedAt and Resolution come from the synced
	// sync_conflicts row of the same id (see Recovery), joined on read.
	Resolution     Action    `json:"resolution"`
	CreatedAt      time.Time `json:"created_at"`
	WinningVV      store.VV  `json:"winning_vv"`
	LosingVV       store.VV  `json:"losing_vv"`
	WinningDeleted bool      `json:"winning_deleted"`
	LosingDeleted  bool      `json:"losing_deleted"`
}

// New builds the record of winner overwriting loser on table/rowID, with its
// derived id and canonical data. CreatedAt is left zero (PutTxn stamps it).
func New(table, rowID string, winner, loser Version, op Op) (*Conflict, error) {
	wd, err := Canonical(winner.Data)
	if err != nil {
		return nil, err
	}
	ld, err := Canonical(loser.Data)
	if err != nil {
		return nil, err
	}
	return &Conflict{
		ID: ID(table, rowID, winner, loser), TableName: table, RowID: rowID,
		WinningInstanceID: winner.InstanceID, LosingInstanceID: loser.InstanceID,
		WinningLamportTS: winner.Lamport, LosingLamportTS: loser.Lamport,
		WinningData: wd, LosingData: ld, Op: op,
		WinningVV: winner.VV.Copy(), LosingVV: loser.VV.Copy(),
		WinningDeleted: winner.Deleted, LosingDeleted: loser.Deleted,
	}, nil
}

// Winner returns the winning version recorded in c.
func (c *Conflict) Winner() Version {
	return Version{c.WinningInstanceID, c.WinningLamportTS, c.WinningVV, c.WinningDeleted, c.WinningData}
}

// Loser returns the losing version recorded in c.
func (c *Conflict) Loser() Version {
	return Version{c.LosingInstanceID, c.LosingLamportTS, c.LosingVV, c.LosingDeleted, c.LosingData}
}

// ID derives a conflict id: the first 16 bytes, hex, of SHA-256 over a
// canonical encoding of the domain "crow-conflict-v1", table, row id and the
// two versions' (instance id, lamport, vv), the versions sorted by (instance
// id, lamport) so the argument order does not matter. Frozen: changing it
// changes every id.
func ID(table, rowID string, a, b Version) string {
	vs := []Version{a, b}
	slices.SortFunc(vs, func(x, y Version) int {
		return cmp.Or(cmp.Compare(x.InstanceID, y.InstanceID), cmp.Compare(x.Lamport, y.Lamport))
	})
	h := sha256.New()
	var buf []byte
	str := func(s string) {
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(s)))
		buf = append(buf, s...)
	}
	str("crow-conflict-v1")
	str(table)
	str(rowID)
	for _, v := range vs {
		str(v.InstanceID)
		buf = binary.BigEndian.AppendUint64(buf, v.Lamport)
		ids := make([]string, 0, len(v.VV))
		for id, n := range v.VV {
			if n > 0 {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids)
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(ids)))
		for _, id := range ids {
			str(id)
			buf = binary.BigEndian.AppendUint64(buf, v.VV[id])
		}
	}
	h.Write(buf)
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// Canonical returns data in canonical wire form: compact JSON with object keys
// sorted at every level and numbers kept as written. Empty input is "{}".
func Canonical(data json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return json.RawMessage("{}"), nil
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("canonicalising row data: %w", err)
	}
	b, err := json.Marshal(v) // maps marshal with sorted keys
	if err != nil {
		return nil, fmt.Errorf("canonicalising row data: %w", err)
	}
	return b, nil
}

// volatileFields are bookkeeping fields of row data that say when a version
// was written, not what it says: two edits that agree on everything else are
// the same edit, made twice.
var volatileFields = []string{"updated_at"}

// normalized is the canonical form of data without its volatile fields.
func normalized(data json.RawMessage) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(data, &obj) == nil && obj != nil {
		for _, f := range volatileFields {
			delete(obj, f)
		}
		data, _ = json.Marshal(obj)
	}
	return Canonical(data)
}

// forms returns the canonical form of data (Canonical) and its normalized form (the canonical
// form without volatile fields, as normalized), decoding it once.
func forms(data json.RawMessage) (canon, norm json.RawMessage, err error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return json.RawMessage("{}"), json.RawMessage("{}"), nil
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, nil, fmt.Errorf("canonicalising row data: %w", err)
	}
	if canon, err = json.Marshal(v); err != nil {
		return nil, nil, fmt.Errorf("canonicalising row data: %w", err)
	}
	norm = canon
	if m, ok := v.(map[string]any); ok {
		removed := false
		for _, f := range volatileFields {
			if _, ok := m[f]; ok {
				delete(m, f)
				removed = true
			}
		}
		if removed {
			if norm, err = json.Marshal(m); err != nil {
				return nil, nil, fmt.Errorf("canonicalising row data: %w", err)
			}
		}
	}
	return canon, norm, nil
}

// NewUnlessEquivalent is New with the op from Classify, or nil if the two versions are
// Equivalent (noise, not a conflict). It decodes each version's data once.
func NewUnlessEquivalent(table, rowID string, winner, loser Version) (*Conflict, error) {
	if winner.Deleted && loser.Deleted {
		return nil, nil
	}
	wc, wn, err := forms(winner.Data)
	if err != nil {
		return nil, err
	}
	lc, ln, err := forms(loser.Data)
	if err != nil {
		return nil, err
	}
	if winner.Deleted == loser.Deleted && bytes.Equal(wn, ln) {
		return nil, nil
	}
	return &Conflict{
		ID: ID(table, rowID, winner, loser), TableName: table, RowID: rowID,
		WinningInstanceID: winner.InstanceID, LosingInstanceID: loser.InstanceID,
		WinningLamportTS: winner.Lamport, LosingLamportTS: loser.Lamport,
		WinningData: wc, LosingData: lc, Op: Classify(winner, loser),
		WinningVV: winner.VV.Copy(), LosingVV: loser.VV.Copy(),
		WinningDeleted: winner.Deleted, LosingDeleted: loser.Deleted,
	}, nil
}

// Equivalent reports whether two versions are the same after normalising to
// wire form: both tombstones, or same tombstone flag and same canonical data
// apart from volatile bookkeeping fields (updated_at). Equivalent concurrent
// versions are noise, not conflicts.
func Equivalent(a, b Version) (bool, error) {
	if a.Deleted && b.Deleted {
		return true, nil
	}
	if a.Deleted != b.Deleted {
		return false, nil
	}
	ca, err := normalized(a.Data)
	if err != nil {
		return false, err
	}
	cb, err := normalized(b.Data)
	if err != nil {
		return false, err
	}
	return bytes.Equal(ca, cb), nil
}

// Classify returns the op of a conflict between two concurrent versions that
// are not Equivalent: delete if exactly one is a tombstone; insert if both
// are independent creations (each vector holds only its own origin); else
// update.
func Classify(a, b Version) Op {
	switch {
	case a.Deleted != b.Deleted:
		return OpDelete
	case independent(a) && independent(b):
		return OpInsert
	}
	return OpUpdate
}

func independent(v Version) bool {
	for id, n := range v.VV {
		if id != v.InstanceID && n > 0 {
			return false
		}
	}
	return true
}
