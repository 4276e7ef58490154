package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	sjson "github.com/segmentio/encoding/json"
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

// Marshal encodes the record in its frozen wire form: json.Marshal's bytes, written by
// appendChange (codec.go).
func (c ChangeRecord) Marshal() ([]byte, error) {
	n := 160 + len(c.Type) + len(c.Table) + len(c.RowID) + len(c.Op) + len(c.Data) + len(c.InstanceID) + 64*len(c.VV)
	b, err := appendChange(make([]byte, 0, n), &c)
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

// BatchSchema is the schema of a batch record: several change records in one feed entry.
const BatchSchema = 2

// BatchType is a batch record's type.
const BatchType = "batch"

// batchRecord is a feed entry holding several change records written together (by
// Writer.WriteEntry: home's numbering).
//
// Frozen wire format, schema 2: {"schema":2,"type":"batch","changes":[R1,R2,…]}, each Ri a
// schema-1 change record in its own frozen form, in write order, at least two. A reader
// applies them in order, all or none; a schema-1-only reader parks the entry as an unknown
// schema, as SPEC §5 asks. Pinned by a golden test.
type batchRecord struct {
	Schema  int               `json:"schema"`
	Type    string            `json:"type"`
	Changes []json.RawMessage `json:"changes"`
}

// batchPrefix starts every batch record (the frozen form marshalBatch writes).
const batchPrefix = `{"schema":2,"type":"batch","changes":[`

// marshalBatch encodes change records (already marshalled) as one batch record.
func marshalBatch(records [][]byte) []byte {
	n := len(batchPrefix) + len(records) + len("]}")
	for _, r := range records {
		n += len(r)
	}
	b := make([]byte, 0, n)
	b = append(b, batchPrefix...)
	for i, r := range records {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, r...)
	}
	return append(b, "]}"...)
}

// ParseChanges decodes a feed entry: a change record (one record) or a batch record (its
// records, in order). Errors are ParseChange's; a batch that is malformed, has fewer than
// two records or holds a record that is not schema 1 is an error for the whole entry, and
// an entry of any other schema is ErrUnknownSchema. The records' Data may share memory
// with b.
func ParseChanges(b []byte) ([]ChangeRecord, error) {
	if !bytes.HasPrefix(b, []byte(batchPrefix)) {
		c, err := ParseChange(b)
		if err != nil {
			return nil, err
		}
		return []ChangeRecord{c}, nil
	}
	var br batchRecord
	if err := sjson.Unmarshal(b, &br); err != nil {
		return nil, fmt.Errorf("decoding batch record: %w", err)
	}
	if br.Schema != BatchSchema || br.Type != BatchType || len(br.Changes) < 2 {
		return nil, fmt.Errorf("decoding batch record: schema %d, type %q, %d records", br.Schema, br.Type, len(br.Changes))
	}
	out := make([]ChangeRecord, len(br.Changes))
	for i, r := range br.Changes {
		c, err := ParseChange(r)
		if err != nil {
			return nil, fmt.Errorf("batch record, record %d: %w", i, err)
		}
		out[i] = c
	}
	return out, nil
}
