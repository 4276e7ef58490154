package store

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/dgraph-io/badger/v4"
)

// The snapshot format (version 1, frozen: backups made today must load
// tomorrow). Integers are unsigned varints unless said otherwise:
//
//	"crow-store-snapshot 1\n"
//	then for each key, in key order:  len(key) ‖ key ‖ len(value) ‖ value
//	then the end:                     0 ‖ uint64 BE count of keys
//
// A key is never empty, so a zero length is the end. Nothing follows it.
// The format carries no checksum: the backup archive that holds it is
// authenticated (package backup); the end record catches a truncation.
const snapshotMagic = "crow-store-snapshot 1\n"

// maxSnapshotKey and maxSnapshotValue bound what LoadSnapshot accepts (badger's own limits:
// keys under 64 KiB, values under the value log file size).
const (
	maxSnapshotKey   = 1 << 16
	maxSnapshotValue = valueLogFileSize
)

// ErrBadSnapshot is returned (wrapped) by LoadSnapshot for a stream that is not a
// complete snapshot: another format, a truncation, a record out of bounds.
var ErrBadSnapshot = errors.New("store: not a complete store snapshot")

// SnapshotStats counts what a snapshot held.
type SnapshotStats struct {
	Keys  uint64 // keys written (or loaded)
	Bytes uint64 // bytes of keys and values
}

// Snapshot writes every key of the database to w as one consistent view: a single read
// transaction, so the snapshot is the database as of one commit while writers go on. Keys
// for which skip returns true (skip may be nil) are left out, and so are store's own
// throwaway keys (m/compact/). Errors are w's or badger's; a failed snapshot is
// incomplete (LoadSnapshot refuses it).
func (db *DB) Snapshot(w io.Writer, skip func(key []byte) bool) (SnapshotStats, error) {
	var st SnapshotStats
	bw := bufio.NewWriterSize(w, 256<<10)
	if _, err := bw.WriteString(snapshotMagic); err != nil {
		return st, fmt.Errorf("writing the snapshot: %w", err)
	}
	var lenBuf [binary.MaxVarintLen64]byte
	err := db.bdb.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.PrefetchValues = false
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			item := it.Item()
			key := item.Key()
			if bytes.HasPrefix(key, prefixCompact) || (skip != nil && skip(key)) {
				continue
			}
			err := item.Value(func(val []byte) error {
				for _, b := range [][]byte{key, val} {
					n := binary.PutUvarint(lenBuf[:], uint64(len(b)))
					if _, err := bw.Write(lenBuf[:n]); err != nil {
						return err
					}
					if _, err := bw.Write(b); err != nil {
						return err
					}
				}
				st.Keys++
				st.Bytes += uint64(len(key) + len(val))
				return nil
			})
			if err != nil {
				return fmt.Errorf("writing the snapshot at key %q: %w", key, err)
			}
		}
		return nil
	})
	if err != nil {
		return st, err
	}
	end := binary.BigEndian.AppendUint64([]byte{0}, st.Keys)
	if _, err := bw.Write(end); err != nil {
		return st, fmt.Errorf("writing the snapshot: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return st, fmt.Errorf("writing the snapshot: %w", err)
	}
	return st, nil
}

// LoadSnapshot writes the keys of a snapshot (see Snapshot) into db, which should be a
// new, empty database that nothing else writes to. It reads r up to the snapshot's end
// record and fails with ErrBadSnapshot (wrapped) if r holds anything else or ends before
// it; the keys loaded until then stay in db, so the caller discards a db whose load failed.
// Once loaded, the maintained row counts are rebuilt from the rows (one scan).
func (db *DB) LoadSnapshot(r io.Reader) (SnapshotStats, error) {
	var st SnapshotStats
	br := bufio.NewReaderSize(r, 256<<10)
	magic := make([]byte, len(snapshotMagic))
	if _, err := io.ReadFull(br, magic); err != nil || string(magic) != snapshotMagic {
		return st, fmt.Errorf("%w: no snapshot header", ErrBadSnapshot)
	}
	wb := db.bdb.NewWriteBatch()
	defer wb.Cancel()
	truncated := func(err error) error {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("%w: it ends after %d keys, before its end record", ErrBadSnapshot, st.Keys)
		}
		return fmt.Errorf("reading the snapshot: %w", err)
	}
	readField := func(limit uint64) ([]byte, error) {
		n, err := binary.ReadUvarint(br)
		if err != nil {
			return nil, truncated(err)
		}
		if n > limit {
			return nil, fmt.Errorf("%w: a record of %d bytes (at most %d)", ErrBadSnapshot, n, limit)
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(br, b); err != nil {
			return nil, truncated(err)
		}
		return b, nil
	}
	for {
		key, err := readField(maxSnapshotKey)
		if err != nil {
			return st, err
		}
		if len(key) == 0 {
			break
		}
		val, err := readField(maxSnapshotValue)
		if err != nil {
			return st, err
		}
		if err := wb.Set(key, val); err != nil {
			return st, fmt.Errorf("loading key %q: %w", key, err)
		}
		st.Keys++
		st.Bytes += uint64(len(key) + len(val))
	}
	var count [8]byte
	if _, err := io.ReadFull(br, count[:]); err != nil {
		return st, truncated(err)
	}
	if n := binary.BigEndian.Uint64(count[:]); n != st.Keys {
		return st, fmt.Errorf("%w: its end record counts %d keys, it held %d", ErrBadSnapshot, n, st.Keys)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		return st, fmt.Errorf("%w: bytes after its end record", ErrBadSnapshot)
	}
	if err := wb.Flush(); err != nil {
		return st, fmt.Errorf("loading the snapshot: %w", err)
	}
	if err := db.bdb.Sync(); err != nil {
		return st, fmt.Errorf("syncing the loaded snapshot: %w", err)
	}
	// The snapshot's s/seq is the queue head from now on.
	var seq uint64
	if err := db.bdb.View(func(txn *badger.Txn) error {
		var err error
		seq, err = getUint(txn, keySeq)
		return err
	}); err != nil {
		return st, err
	}
	db.publishQueue(seq)
	// The snapshot's counts (if it has any) are its source's; a rebuild makes them this
	// database's whatever the snapshot held.
	if err := db.rebuildCounts("loaded a snapshot"); err != nil {
		return st, err
	}
	return st, nil
}
