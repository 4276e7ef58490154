package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

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
}

// Get implements Table.
func (t StoreTable) Get(_ context.Context, id string) (json.RawMessage, error) {
	row, err := t.DB.Get(tableName, id)
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
		return txn.ScanRows(tableName, func(r *store.Row) error {
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
	_, err := t.Writer.Write(ctx, store.Mutation{Table: tableName, RowID: id, Op: op, Data: data})
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
