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

// touch stamps s/updated_at inside txn.
func (db *DB) touch(txn *badger.Txn) error {
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
