package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/crow-sync/crow/store"
)

// tableName is the synced table the registry lives in.
const tableName = "crow_instances"

// obsPrefix is the local-only keyspace of probe observations: they never
// enter a feed, so probes do not replicate or conflict.
const obsPrefix = "n/registry/obs/"

// StoreTable is the Table of the daemon: the crow_instances rows of the
// store, written through the store's durable, replicating write path.
type StoreTable struct {
	DB     *store.DB
	Writer *store.Writer
	// Name is the table ("" is crow_instances).
	Name string
}

func (t StoreTable) name() string {
	if t.Name == "" {
		return tableName
	}
	return t.Name
}

// Get implements Table.
func (t StoreTable) Get(_ context.Context, id string) (json.RawMessage, error) {
	row, err := t.DB.Get(t.name(), id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && row.Deleted) {
		return nil, fmt.Errorf("reading instance %s: %w", id, ErrNotFound)
	} else if err != nil {
		return nil, fmt.Errorf("reading instance %s: %w", id, err)
	}
	return row.Data, nil
}

// List implements Table.
func (t StoreTable) List(_ context.Context) ([]json.RawMessage, error) {
	var out []json.RawMessage
	err := t.DB.View(func(txn *store.Txn) error {
		return txn.ScanRows(t.name(), func(r *store.Row) error {
			if !r.Deleted {
				out = append(out, append(json.RawMessage(nil), r.Data...))
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("listing instances: %w", err)
	}
	return out, nil
}

// Put implements Table.
func (t StoreTable) Put(ctx context.Context, id string, insert bool, data json.RawMessage) error {
	op := store.OpUpdate
	if insert {
		op = store.OpInsert
	}
	_, err := t.Writer.Write(ctx, store.Mutation{Table: t.name(), RowID: id, Op: op, Data: data})
	switch {
	case errors.Is(err, store.ErrExists):
		return fmt.Errorf("writing instance %s: %w", id, ErrExists)
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("writing instance %s: %w", id, ErrNotFound)
	case err != nil:
		return fmt.Errorf("writing instance %s: %w", id, err)
	}
	return nil
}

// StoreObservations keeps probe observations in the store (raw keys), outside
// every synced table.
type StoreObservations struct{ DB *store.DB }

// Load implements Observations.
func (o StoreObservations) Load(context.Context) (map[string]Observation, error) {
	out := map[string]Observation{}
	err := o.DB.View(func(txn *store.Txn) error {
		return txn.Iterate([]byte(obsPrefix), nil, func(k, v []byte) error {
			var ob Observation
			if err := json.Unmarshal(v, &ob); err != nil {
				return err
			}
			out[string(k[len(obsPrefix):])] = ob
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("loading observations: %w", err)
	}
	return out, nil
}

// Store implements Observations.
func (o StoreObservations) Store(_ context.Context, obs map[string]Observation) error {
	wb := o.DB.NewWriteBatch()
	defer wb.Cancel()
	for id, ob := range obs {
		v, err := json.Marshal(ob)
		if err != nil {
			return err
		}
		if err := wb.Set([]byte(obsPrefix+id), v); err != nil {
			return fmt.Errorf("storing observations: %w", err)
		}
	}
	if err := wb.Flush(); err != nil {
		return fmt.Errorf("storing observations: %w", err)
	}
	return nil
}

// revocationsTable is the synced table of revocations (see RevocationRow).
const revocationsTable = "crow_revocations"

// StoreRevocations is the Revocations table of the daemon: the
// crow_revocations rows of the store.
func StoreRevocations(db *store.DB, w *store.Writer) Table {
	return StoreTable{DB: db, Writer: w, Name: revocationsTable}
}

// invitePrefix is the local-only keyspace of home's invites: they hold their
// secret and never enter a feed.
const invitePrefix = "n/registry/invite/"

// StoreInvites keeps invites in the store (raw keys), outside every synced
// table.
type StoreInvites struct{ DB *store.DB }

// Add implements InviteStore.
func (s StoreInvites) Add(ctx context.Context, rec InviteRecord) error {
	v, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return s.DB.Update(ctx, func(txn *store.Txn) error { return txn.Set([]byte(invitePrefix+rec.ID), v) })
}

// Get implements InviteStore.
func (s StoreInvites) Get(_ context.Context, id string) (InviteRecord, error) {
	var rec InviteRecord
	err := s.DB.View(func(txn *store.Txn) error {
		var err error
		rec, err = getInvite(txn, id)
		return err
	})
	return rec, err
}

func getInvite(txn *store.Txn, id string) (InviteRecord, error) {
	v, ok, err := txn.Get([]byte(invitePrefix + id))
	if err != nil {
		return InviteRecord{}, err
	}
	if !ok {
		return InviteRecord{}, ErrInviteUnknown
	}
	var rec InviteRecord
	if err := json.Unmarshal(v, &rec); err != nil {
		return InviteRecord{}, fmt.Errorf("decoding invite %s: %w", id, err)
	}
	return rec, nil
}

// Claim implements InviteStore: the check and the mark are one transaction.
func (s StoreInvites) Claim(ctx context.Context, id string, now time.Time, by string) error {
	return s.DB.Update(ctx, func(txn *store.Txn) error {
		rec, err := getInvite(txn, id)
		if err != nil {
			return err
		}
		if err := CheckClaim(rec, now); err != nil {
			return err
		}
		rec.UsedAt, rec.UsedBy = now.UTC().Truncate(time.Second), by
		v, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		return txn.Set([]byte(invitePrefix+id), v)
	})
}
