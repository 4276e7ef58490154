package store

import (
	"encoding/json"
	"fmt"
	"time"
)

// ChangeSchema is the change record schema version this build writes.
const ChangeSchema = 1

// Op is a row operation.
type Op string

// Ops of a change record.
const (
	OpInsert Op = "insert"
	OpUpdate Op = "update"
	OpDelete Op = "delete"
)

// ChangeRecord is the payload of one feed entry (SPEC §5).
//
// Frozen wire format, schema 1. Compatibility rules: fields are never renamed, retyped or
// given new meaning within a schema; the JSON field order is the struct order and vv keys are
// sorted (encoding/json), so the bytes are deterministic and pinned by a golden test. Adding
// a field a schema-1 reader must understand requires schema 2; receivers park records with a
// schema they do not know (ErrUnknownSchema) instead of dropping them.
type ChangeRecord struct {
	Schema     int             `json:"schema"`
	Type       string          `json:"type"`
	Table      string          `json:"table"`
	RowID      string          `json:"row_id"`
	Op         Op              `json:"op"`
	Data       json.RawMessage `json:"data"`
	Lamport    uint64          `json:"lamport"`
	InstanceID string          `json:"instance_id"`
	Timestamp  int64           `json:"timestamp"`
	VV         VV              `json:"vv"`
}

// changeFor builds the change record of a row version written by op.
func changeFor(r *Row, op Op) ChangeRecord {
	return ChangeRecord{
		Schema:     ChangeSchema,
		Type:       ChangeType(r.Table, op),
		Table:      r.Table,
		RowID:      r.RowID,
		Op:         op,
		Data:       r.Data,
		Lamport:    r.LamportTS,
		InstanceID: r.InstanceID,
		Timestamp:  r.UpdatedAt.Unix(),
		VV:         r.VV,
	}
}

// Marshal encodes the record in its frozen wire form.
func (c ChangeRecord) Marshal() ([]byte, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encoding change record: %w", err)
	}
	return b, nil
}

// ParseChange decodes a change record. A record with an unknown schema returns
// ErrUnknownSchema (with the schema field filled in) so the caller can park it. The record's
// Data may share memory with b: the caller must not modify b while it uses the record.
func ParseChange(b []byte) (ChangeRecord, error) {
	var c ChangeRecord
	if !parseChangeFast(b, &c) {
		c = ChangeRecord{}
		if err := json.Unmarshal(b, &c); err != nil {
			var probe struct {
				Schema int `json:"schema"`
			}
			if json.Unmarshal(b, &probe) == nil && probe.Schema != ChangeSchema {
				return ChangeRecord{Schema: probe.Schema}, fmt.Errorf("%w: %d", ErrUnknownSchema, probe.Schema)
			}
			return ChangeRecord{}, fmt.Errorf("decoding change record: %w", err)
		}
	}
	if c.Schema != ChangeSchema {
		return ChangeRecord{Schema: c.Schema}, fmt.Errorf("%w: %d", ErrUnknownSchema, c.Schema)
	}
	switch c.Op {
	case OpInsert, OpUpdate, OpDelete:
	default:
		return ChangeRecord{}, fmt.Errorf("decoding change record: bad op %q", c.Op)
	}
	if !ValidTable(c.Table) {
		return ChangeRecord{}, fmt.Errorf("decoding change record: %w: %q", ErrInvalidTable, c.Table)
	}
	return c, nil
}

// Row returns the row envelope the record describes (UpdatedAt from Timestamp).
func (c ChangeRecord) Row() *Row {
	return &Row{
		RowID: c.RowID, Table: c.Table, Data: c.Data, LamportTS: c.Lamport,
		InstanceID: c.InstanceID, VV: c.VV.Copy(), Deleted: c.Op == OpDelete,
		UpdatedAt: unixUTC(c.Timestamp),
	}
}

func unixUTC(s int64) time.Time { return time.Unix(s, 0).UTC() }
