package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// Compaction after a forget (SPEC §10): overwritten and deleted values stay in badger's files
// (the memtable's write-ahead log, older tables, the value log) until badger compacts them
// away. Compact makes that happen now.

// CompactStats says what Compact did.
type CompactStats struct {
	// Padded is the bytes written to close the newest value log file (0: nothing to close).
	Padded int64
	// ValueLogRewrites is the number of value log files rewritten by the value log GC.
	ValueLogRewrites int
	// Took is how long it took.
	Took time.Duration
}

var (
	prefixCompact  = []byte("m/compact/")
	keyCompactPad  = []byte("m/compact/pad")
	keyCompactMark = []byte("m/compact/flush")
)

// padSize is the size of one value written to close the newest value log file.
const padSize = 1 << 20

// Compact rewrites the database's files so that no overwritten or deleted value stays on
// disk, in four steps:
//
//  1. The newest value log file is never rewritten by badger's GC, so Compact closes it:
//     it writes throwaway 1 MiB values (under m/compact/) until badger starts a new file
//     (at most the value log file size, 16 MiB).
//  2. It flushes the memtables to tables (a DropPrefix of m/compact/, which also drops the
//     throwaway values): their write-ahead log files, which hold every recent write, are
//     deleted. Writes wait meanwhile (commits are held back, never failed).
//  3. Flatten compacts every level into one, which keeps only each key's newest version.
//  4. The value log GC rewrites every value log file that holds any discarded value, until
//     it reports nothing left to rewrite.
//
// Files badger deletes are unlinked, not overwritten: their blocks may remain on the
// device until reused (an OS-level copy). A transaction open since before Compact keeps
// the versions it may read until it ends. Compact of an in-memory database does nothing.
// Calls are serialised; the database stays usable throughout.
func (db *DB) Compact(ctx context.Context) (CompactStats, error) {
	db.compactMu.Lock()
	defer db.compactMu.Unlock()
	start := time.Now()
	var st CompactStats
	if db.dir == "" {
		return st, nil
	}
	// Compacting first writes (the padding, flattened tables, rewritten value log files)
	// before it frees anything: on a full disk it waits for space like every other writer.
	if err := db.CheckSpace(); err != nil {
		return st, fmt.Errorf("compacting: %w", err)
	}
	var err error
	if st.Padded, err = db.closeValueLog(ctx); err != nil {
		return st, fmt.Errorf("compacting: closing the value log file: %w", err)
	}
	if err := db.flushMemtables(ctx); err != nil {
		return st, fmt.Errorf("compacting: flushing memtables: %w", err)
	}
	if err := db.bdb.Flatten(2); err != nil {
		return st, fmt.Errorf("compacting: flattening: %w", err)
	}
	for st.ValueLogRewrites < 1000 {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		err := db.bdb.RunValueLogGC(1e-9) // any discarded byte: rewrite the file
		if errors.Is(err, badger.ErrNoRewrite) || errors.Is(err, badger.ErrRejected) {
			break
		}
		if err != nil {
			return st, fmt.Errorf("compacting: value log GC: %w", err)
		}
		st.ValueLogRewrites++
	}
	st.Took = time.Since(start)
	return st, nil
}

// maxValueLog returns the highest value log file id in the database's directory.
func (db *DB) maxValueLog() (int, error) {
	names, err := filepath.Glob(filepath.Join(db.dir, "*.vlog"))
	if err != nil {
		return 0, err
	}
	hi := 0
	for _, n := range names {
		if id, err := strconv.Atoi(strings.TrimSuffix(filepath.Base(n), ".vlog")); err == nil {
			hi = max(hi, id)
		}
	}
	return hi, nil
}

// closeValueLog writes padSize values until badger opens a new value log file.
func (db *DB) closeValueLog(ctx context.Context) (int64, error) {
	before, err := db.maxValueLog()
	if err != nil {
		return 0, err
	}
	pad := make([]byte, padSize)
	var written int64
	for written <= valueLogFileSize+padSize {
		if err := ctx.Err(); err != nil {
			return written, err
		}
		now, err := db.maxValueLog()
		if err != nil {
			return written, err
		}
		if now > before {
			break
		}
		if _, err := db.update(ctx, func(t *Txn) error { return setRaw(t, keyCompactPad, pad) }); err != nil {
			return written, err
		}
		written += padSize
	}
	return written, nil
}

// flushMemtables flushes every memtable to tables: DropPrefix flushes only when its prefix
// holds a key, so one is written first.
func (db *DB) flushMemtables(ctx context.Context) error {
	if _, err := db.update(ctx, func(t *Txn) error { return setRaw(t, keyCompactMark, []byte{1}) }); err != nil {
		return err
	}
	// DropPrefix blocks badger's writes while it flushes, failing any commit meanwhile
	// (ErrBlockedWrites): hold the commits back instead.
	for !db.gate.TryLock() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
	defer db.gate.Unlock()
	return db.bdb.DropPrefix(prefixCompact)
}

func setRaw(t *Txn, key, val []byte) error {
	if err := t.txn.Set(key, val); err != nil {
		return fmt.Errorf("writing %s: %w", key, txnErr(err))
	}
	return nil
}
