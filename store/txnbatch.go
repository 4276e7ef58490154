package store

import "fmt"

// TxnBatch stages many row writes and Lamport observations in one transaction while keeping
// s/seq and s/lamport in memory: they are read once by BeginBatch and written once by Flush.
// Within one transaction only the last value of a key is committed, so this is equivalent to
// Txn.PutRow and Txn.ObserveLamport per row, with one read and one write of each
// counter instead of one per row. Reading both counters at the start makes the transaction
// conflict with any other that writes rows or bumps the clock (DB.Update re-runs it), exactly
// as Txn.PutRow does.
//
// A TxnBatch belongs to its transaction and its goroutine; it is not safe for concurrent use.
// Forgetting Flush before commit loses the counter updates, so the caller must Flush last.
type TxnBatch struct {
	txn     *Txn
	seq     uint64 // last allocated q/ seq
	lamport uint64
	dirty   bool
	buf     []byte // scratch for envelope encoding
}

// BeginBatch reads s/seq and s/lamport inside t and returns a batch over it.
func (t *Txn) BeginBatch() (*TxnBatch, error) {
	seq, err := getUint(t.txn, keySeq)
	if err != nil {
		return nil, err
	}
	l, err := getUint(t.txn, keyLamport)
	if err != nil {
		return nil, err
	}
	return &TxnBatch{txn: t, seq: seq, lamport: l}, nil
}

// ObserveLamport advances the in-memory Lamport counter on receipt of a remote change stamped
// remote to max(local, remote)+1, which it returns (see Txn.ObserveLamport).
func (b *TxnBatch) ObserveLamport(remote uint64) uint64 {
	b.lamport = max(b.lamport, remote) + 1
	b.dirty = true
	return b.lamport
}

// PutRow writes row as Txn.PutRow does (envelope and q/ record, seq allocated in memory, the
// previous version's counts read or taken from a GetRow of it in the transaction) and returns
// its seq. The envelope bytes are the same as Txn.PutRow's.
func (b *TxnBatch) PutRow(row *Row) (uint64, error) {
	if !ValidTable(row.Table) {
		return 0, fmt.Errorf("%w: %q", ErrInvalidTable, row.Table)
	}
	if !validRowID(row.RowID) {
		return 0, fmt.Errorf("%w: bad row id %q", ErrInvalidMutation, row.RowID)
	}
	enc, err := encodeRow(b.buf[:0], row)
	if err != nil {
		return 0, fmt.Errorf("encoding row %s/%s: %w", row.Table, row.RowID, err)
	}
	// badger keeps the value slice until commit: give it its own copy and keep the scratch.
	val := make([]byte, len(enc))
	copy(val, enc)
	b.buf = enc
	old, err := b.txn.prevTally(row.Table, row.RowID)
	if err != nil {
		return 0, err
	}
	seq := b.seq + 1
	if err := b.txn.txn.Set(rowKey(row.Table, row.RowID), val); err != nil {
		return 0, fmt.Errorf("writing row %s/%s: %w", row.Table, row.RowID, txnErr(err))
	}
	if err := b.txn.txn.Set(queueKey(seq), queueValue(row)); err != nil {
		return 0, fmt.Errorf("queueing row %s/%s: %w", row.Table, row.RowID, txnErr(err))
	}
	b.txn.countTallies(old, row)
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
	if err := setUint(b.txn.txn, keySeq, b.seq); err != nil {
		return err
	}
	if err := setUint(b.txn.txn, keyLamport, b.lamport); err != nil {
		return err
	}
	if err := b.txn.db.touch(b.txn.txn); err != nil {
		return err
	}
	b.txn.seq = max(b.txn.seq, b.seq)
	b.dirty = false
	return nil
}
