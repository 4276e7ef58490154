package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/dgraph-io/badger/v4"
)

// Queue consumers.
//
// Besides the search indexer, which prunes the q/ queue (PruneQueue) once entries are in its
// index, other parts follow the queue (home's memory numberer). Each of them registers a
// durable position under a name:
//
//	s/queue-consumers/<name>   seq, uint64 big-endian: every q/ entry ≤ seq is consumed
//	s/queue-consumers-gen      uint64 big-endian, bumped when a consumer is registered or
//	                           moved back (see PruneQueue)
//
// PruneQueue never deletes an entry above the lowest registered position, so a consumer that
// lags (or is stopped) keeps its entries until it has consumed them. A consumer that is no
// longer run must be dropped (DropConsumer), or the queue grows without bound.
var (
	prefixConsumers = []byte("s/queue-consumers/")
	keyConsumersGen = []byte("s/queue-consumers-gen")
)

func consumerKey(name string) []byte {
	return append(append([]byte(nil), prefixConsumers...), name...)
}

func validConsumer(name string) error {
	if name == "" || len(name) > 128 || strings.ContainsAny(name, "\x00") {
		return fmt.Errorf("invalid queue consumer name %q", name)
	}
	return nil
}

// ConsumerPos returns the durable position of the named queue consumer (every q/ entry with
// seq ≤ pos is consumed); ok is false if no consumer of that name is registered.
func (db *DB) ConsumerPos(name string) (pos uint64, ok bool, err error) {
	if err := validConsumer(name); err != nil {
		return 0, false, err
	}
	err = db.bdb.View(func(txn *badger.Txn) error {
		pos, ok, err = getUintOK(txn, consumerKey(name))
		return err
	})
	if err != nil {
		return 0, false, fmt.Errorf("reading queue consumer %s: %w", name, err)
	}
	return pos, ok, nil
}

// SetConsumerPos registers the named queue consumer (first call) or moves its position to
// seq, durably. From the moment it returns, PruneQueue keeps every q/ entry above seq until
// the position moves past it; entries pruned before it returned are not brought back, so a
// consumer registering for the first time must check the queue for a gap (the first entry
// after its position missing while the head is past it) and recover from the tables.
//
// Moving a position back is allowed (a consumer that re-reads); it is serialised against
// PruneQueue like a registration.
func (db *DB) SetConsumerPos(name string, seq uint64) error {
	if err := validConsumer(name); err != nil {
		return err
	}
	_, err := db.update(context.Background(), func(t *Txn) error {
		txn := t.txn
		old, ok, err := getUintOK(txn, consumerKey(name))
		if err != nil {
			return err
		}
		if !ok || seq < old {
			// A concurrent PruneQueue read the generation: it now conflicts and re-reads
			// the positions, so it cannot prune past seq with a floor computed without it.
			gen, err := getUint(txn, keyConsumersGen)
			if err != nil {
				return err
			}
			if err := setUint(txn, keyConsumersGen, gen+1); err != nil {
				return err
			}
		}
		return setUint(txn, consumerKey(name), seq)
	})
	if err != nil {
		return fmt.Errorf("setting queue consumer %s to %d: %w", name, seq, err)
	}
	return nil
}

// DropConsumer unregisters the named queue consumer, so it no longer holds back PruneQueue.
// Dropping a consumer that is not registered does nothing.
func (db *DB) DropConsumer(name string) error {
	if err := validConsumer(name); err != nil {
		return err
	}
	_, err := db.update(context.Background(), func(t *Txn) error {
		if err := t.txn.Delete(consumerKey(name)); err != nil {
			return fmt.Errorf("deleting %s: %w", consumerKey(name), txnErr(err))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("dropping queue consumer %s: %w", name, err)
	}
	return nil
}

// consumersFloorTxn returns the lowest registered consumer position (ok false: none). It
// reads s/queue-consumers-gen inside txn, so a read-write txn that calls it conflicts with
// any registration committed after it started.
func consumersFloorTxn(txn *badger.Txn) (floor uint64, ok bool, err error) {
	if _, err := getUint(txn, keyConsumersGen); err != nil {
		return 0, false, err
	}
	io := badger.DefaultIteratorOptions
	io.Prefix = prefixConsumers
	it := txn.NewIterator(io)
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		var pos uint64
		err := it.Item().Value(func(b []byte) error {
			if len(b) != 8 {
				return fmt.Errorf("bad length %d", len(b))
			}
			pos = binary.BigEndian.Uint64(b)
			return nil
		})
		if err != nil {
			return 0, false, fmt.Errorf("reading %s: %w", it.Item().Key(), err)
		}
		if !ok || pos < floor {
			floor, ok = pos, true
		}
	}
	return floor, ok, nil
}

// getUintOK is getUint that also reports whether the key exists.
func getUintOK(txn *badger.Txn, key []byte) (uint64, bool, error) {
	if _, err := txn.Get(key); errors.Is(err, badger.ErrKeyNotFound) {
		return 0, false, nil
	} else if err != nil {
		return 0, false, fmt.Errorf("reading %s: %w", key, err)
	}
	v, err := getUint(txn, key)
	return v, err == nil, err
}
