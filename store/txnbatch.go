package store

import (
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// TxnBatch stages many row writes and Lamport observations in one badger transaction while
// keeping s/seq and s/lamport in memory: they are read once by BeginBatch and written once by
// Flush. Within one transaction only the last value of a key is committed, so this is
// equivalent to PutRowTxn and ObserveLamportTxn per row, with one read and one write of each
// counter instead of one per row. Reading both counters at the start makes the transaction
// conflict (badger.ErrConflict) with any other that writes rows or bumps the clock, exactly as
// PutRowTxn does.
//
// A TxnBatch belongs to its transaction and its goroutine; it is not safe for concurrent use.
// Forgetting Flush before commit loses the counter updates, so the caller must Flush last.
type TxnBatch struct {
	db      *DB
	txn     *badger.Txn
	seq     uint64 // last allocated q/ seq
	lamport uint64
	dirty   bool
	buf     []byte // scratch for envelope encoding
}

// BeginBatch reads s/seq and s/lamport inside txn and returns a batch over it.
func (db *DB) BeginBatch(txn *badger.Txn) (*TxnBatch, error) {
	seq, err := getUint(txn, keySeq)
	if err != nil {
		return nil, err
	}
	l, err := getUint(txn, keyLamport)
	if err != nil {
		return nil, err
	}
	return &TxnBatch{db: db, txn: txn, seq: seq, lamport: l}, nil
}

// ObserveLamport advances the in-memory Lamport counter on receipt of a remote change stamped
// remote to max(local, remote)+1, which it returns (see ObserveLamportTxn).
func (b *TxnBatch) ObserveLamport(remote uint64) uint64 {
	b.lamport = max(b.lamport, remote) + 1
	b.dirty = true
	return b.lamport
}

// PutRow writes row as PutRowTxn does (envelope and q/ record, seq allocated in memory) and
// returns its seq. The envelope bytes are the same as PutRowTxn's.
func (b *TxnBatch) PutRow(row *Row) (uint64, error) {
	if !ValidTable(row.Table) {
		return 0, fmt.Errorf("%w: %q", ErrInvalidTable, row.Table)
	}
	if !validRowID(row.RowID) {
		return 0, fmt.Errorf("%w: bad row id %q", ErrInvalidMutation, row.RowID)
	}
	enc, err := appendRow(b.buf[:0], row)
	if err != nil {
		return 0, fmt.Errorf("encoding row %s/%s: %w", row.Table, row.RowID, err)
	}
	// badger keeps the value slice until commit: give it its own copy and keep the scratch.
	val := make([]byte, len(enc))
	copy(val, enc)
	b.buf = enc
	seq := b.seq + 1
	if err := b.txn.Set(rowKey(row.Table, row.RowID), val); err != nil {
		return 0, fmt.Errorf("writing row %s/%s: %w", row.Table, row.RowID, err)
	}
	if err := b.txn.Set(queueKey(seq), []byte(row.Table+"/"+row.RowID)); err != nil {
		return 0, fmt.Errorf("queueing row %s/%s: %w", row.Table, row.RowID, err)
	}
	b.seq = seq
	b.dirty = true
	row.Seq = seq
	return seq, nil
}

// Flush writes s/seq, s/lamport and s/updated_at into the transaction if anything changed.
// Call it after the last PutRow or ObserveLamport and before committing.
func (b *TxnBatch) Flush() error {
	if !b.dirty {
		return nil
	}
	if err := setUint(b.txn, keySeq, b.seq); err != nil {
		return err
	}
	if err := setUint(b.txn, keyLamport, b.lamport); err != nil {
		return err
	}
	if err := b.db.touchTxn(b.txn); err != nil {
		return err
	}
	b.dirty = false
	return nil
}
