package store

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// SyncState is the persisted sync_state (SPEC §3).
type SyncState struct {
	// LocalCounter is the Lamport clock.
	LocalCounter uint64
	// Applied maps a feed key (hex) to the next index to apply from it.
	Applied map[string]uint64
	// UpdatedAt is when sync_state last changed (zero if never).
	UpdatedAt time.Time
}

// LamportTxn reads the Lamport counter inside txn.
func (db *DB) LamportTxn(txn *badger.Txn) (uint64, error) { return getUint(txn, keyLamport) }

// ObserveLamportTxn advances the Lamport counter on receipt of a remote change stamped
// remote: the counter becomes max(local, remote)+1, which it returns.
func (db *DB) ObserveLamportTxn(txn *badger.Txn, remote uint64) (uint64, error) {
	local, err := getUint(txn, keyLamport)
	if err != nil {
		return 0, err
	}
	next := max(local, remote) + 1
	if err := setUint(txn, keyLamport, next); err != nil {
		return 0, err
	}
	return next, db.touchTxn(txn)
}

// AppliedTxn returns the next index to apply from the feed with key feedKey (0 if none yet).
func (db *DB) AppliedTxn(txn *badger.Txn, feedKey []byte) (uint64, error) {
	return getUint(txn, appliedKey(feedKey))
}

// SetAppliedTxn records next as the next index to apply from feedKey, inside txn, so the
// checkpoint commits with the rows it covers.
func (db *DB) SetAppliedTxn(txn *badger.Txn, feedKey []byte, next uint64) error {
	if err := setUint(txn, appliedKey(feedKey), next); err != nil {
		return err
	}
	return db.touchTxn(txn)
}

func (db *DB) touchTxn(txn *badger.Txn) error {
	return setUint(txn, keyUpdatedAt, uint64(db.now().UnixNano()))
}

// SyncState reads the whole sync_state.
func (db *DB) SyncState() (SyncState, error) {
	st := SyncState{Applied: map[string]uint64{}}
	err := db.bdb.View(func(txn *badger.Txn) error {
		var err error
		if st.LocalCounter, err = getUint(txn, keyLamport); err != nil {
			return err
		}
		ns, err := getUint(txn, keyUpdatedAt)
		if err != nil {
			return err
		}
		if ns != 0 {
			st.UpdatedAt = time.Unix(0, int64(ns)).UTC()
		}
		io := badger.DefaultIteratorOptions
		io.Prefix = prefixApplied
		it := txn.NewIterator(io)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			err := it.Item().Value(func(b []byte) error {
				if len(b) != 8 {
					return fmt.Errorf("bad applied value length %d", len(b))
				}
				st.Applied[string(it.Item().Key()[len(prefixApplied):])] = binary.BigEndian.Uint64(b)
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return SyncState{}, fmt.Errorf("reading sync_state: %w", err)
	}
	return st, nil
}

func appliedKey(feedKey []byte) []byte {
	return append(append([]byte(nil), prefixApplied...), hex.EncodeToString(feedKey)...)
}
