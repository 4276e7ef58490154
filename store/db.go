package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"

	"github.com/crow-sync/crow/clock"
)

// defaultMemTableSize is Options.MemTableSize's default.
const defaultMemTableSize = 16 << 20

// schemaVersion is the store's on-disk layout version, kept at m/schema. A build refuses a
// store of a newer version, and raises an older one to its own when it opens it.
//
//	1  the first layout
//	2  q/ values end with a NUL and a flags byte (queue.go); a build of version 1 would read
//	   the flags as part of the row id, so it must not open such a store
//	3  rows are written in the packed envelope (rowpack.go), and feed records with
//	   their data's hashes packed (feed's packedRecord), beside the JSON envelopes and
//	   plain records written before; a build of version 2 would misread both
//	4  feed records with data are stored without their leaf node, recomputed from the
//	   data on reads (feed's leaflessRecord), and rows and records pack long base64
//	   strings too (internal/hashpack's formBase64); a build of version 3 would misread
//	   both
const schemaVersion = 4

// Options configures Open. The zero value is usable.
type Options struct {
	// Logger receives badger's warnings and errors (default slog.Default()).
	Logger *slog.Logger
	// Clock stamps updated_at and s/updated_at (default clock.System). The
	// trimmer (see Open) paces itself on real time: it watches the process's
	// memory, not the data.
	Clock clock.Clock
	// Now, if set, is used instead of Clock.Now (kept for older callers).
	Now func() time.Time
	// MemTableSize in bytes (default 16 MiB). It also bounds the size of one transaction
	// (badger allows about 15% of it).
	MemTableSize int64
	// InMemory runs badger without disk, for tests that do not need durability.
	InMemory bool
	// NoSyncWrites commits without fsync, for benchmarks that measure without it; the
	// daemon never sets it.
	NoSyncWrites bool
	// MappedBudget bounds how far this process's resident file-backed memory may grow
	// (default 8 MiB) before Open's trimmer reclaims the pages of badger's memory-mapped
	// files (see trimMapped). Negative disables the trimmer.
	MappedBudget int64
	// MinFree is the free-space guard's floor in bytes (default 256 MiB): writes are
	// refused with ErrDiskFull while the store's filesystem has less free than
	// max(MinFree, MinFreePercent % of its size). Negative disables the guard.
	MinFree int64
	// MinFreePercent is the guard's share of the filesystem (default 1, as Syncthing's minDiskFree; negative: 0).
	MinFreePercent float64
	// Statfs replaces StatfsDir (tests).
	Statfs Statfs
}

// DB is the badger database of one instance. It is safe for concurrent use.
type DB struct {
	bdb *badger.DB
	now func() time.Time
	log *slog.Logger

	mu sync.Mutex // guards queueHead and queueCh
	// queueHead is the highest q/ seq known committed.
	queueHead uint64
	// queueCh is closed (and replaced) when queueHead advances.
	queueCh chan struct{}

	dir       string     // the database's directory ("" in memory)
	compactMu sync.Mutex // serialises Compact
	// gate holds commits back while Compact flushes the memtables (badger would fail
	// them): commits and write batches hold it shared, Compact exclusively.
	gate sync.RWMutex

	guard *spaceGuard // nil: no free-space guard (in memory, or disabled)

	trimStop chan struct{} // closed by Close to stop trimMapped
	trimDone chan struct{} // closed when trimMapped returned (nil: not running)
}

// Open opens (creating if needed) the badger database in dir, tuned for a small footprint:
// 16 MiB memtables, small caches, two compactors, values up to 64 KiB in the LSM tree
// (Snappy, whose literals byte scans still see), larger ones in 4 MiB value log files, and SyncWrites so every commit
// is fsynced. See docs/benchmarks/disk.md for the sizes this gives.
//
// Why those sizes: values replaced or deleted (a cleared feed entry's key, the change queue,
// counters, sync positions) go at the next compaction in the LSM tree; in the value log they
// would stay until a value log GC rewrote the file (badger runs none by itself). When the feed
// still rewrote its last chunk of 16 entries at every append, a 4 KiB threshold made 100k
// memories take 381 MiB, 64 KiB 114 MiB.
// The value log and memtable log files are created sparse at twice their size (4+4 and
// 16+16 MiB apparent); only what is written takes space.
//
// Badger reads and writes its tables, value log and memtable logs through mmap, so
// every page it touched stays in the process's RSS (as file-backed pages) while the file
// lives: a bulk sync of 1M feed entries would otherwise leave ~350 MB resident. On
// Linux, Open starts a trimmer that reclaims those pages whenever RssFile has grown by
// opts.MappedBudget since the last trim (checked every 100 ms); they are read back from
// disk if needed again. Durability is unaffected: writes and fsyncs are badger's own.
func Open(dir string, opts Options) (*DB, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = clock.Or(opts.Clock).Now
	}
	if opts.MemTableSize == 0 {
		opts.MemTableSize = defaultMemTableSize
	}
	if opts.MappedBudget == 0 {
		// 8 MiB, not 32: a satellite's peak RSS in a 100k first sync fell from
		// 264–266 MB to 245 (4 MiB: 230–237) with the sync, the writes and issue
		// 13's load within their spread (docs/BENCHMARKS.md, session 29). What
		// is paged out is read back from disk if needed again.
		opts.MappedBudget = 8 << 20
	}
	start := time.Now() // real time: it is only logged
	if !opts.InMemory {
		prefetchFiles(dir)
	}
	bdb, err := badger.Open(badgerOptions(dir, opts))
	if err != nil {
		return nil, fmt.Errorf("opening badger in %s: %w", dir, err)
	}
	opened := time.Since(start)
	db := &DB{bdb: bdb, now: opts.Now, log: opts.Logger, queueCh: make(chan struct{})}
	if !opts.InMemory {
		db.dir = dir
		if opts.MinFree >= 0 {
			db.guard = newSpaceGuard(dir, opts)
		}
	}
	if err := db.init(); err != nil {
		bdb.Close()
		return nil, err
	}
	initialized := time.Since(start)
	if err := db.checkCounts(); err != nil {
		bdb.Close()
		return nil, err
	}
	opts.Logger.Debug("store opened", "badger", opened, "init", initialized-opened, "counts", time.Since(start)-initialized)
	if !opts.InMemory && opts.MappedBudget > 0 && mappedTrimSupported {
		abs, err := filepath.Abs(dir)
		if err != nil {
			bdb.Close()
			return nil, fmt.Errorf("opening badger in %s: %w", dir, err)
		}
		db.trimStop, db.trimDone = make(chan struct{}), make(chan struct{})
		go db.trimMapped(abs, opts.MappedBudget>>10)
	}
	return db, nil
}

// badgerOptions returns the badger options Open uses for dir.
func badgerOptions(dir string, opts Options) badger.Options {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MemTableSize == 0 {
		opts.MemTableSize = defaultMemTableSize
	}
	bo := badger.DefaultOptions(dir).
		WithInMemory(opts.InMemory).
		WithSyncWrites(!opts.NoSyncWrites).
		WithMemTableSize(opts.MemTableSize).
		WithNumMemtables(3).
		// Level 0 takes 8 flushed memtables before badger compacts it into
		// level 1, and writes stall only at 16. With 3 / 8 a 100k sync kept
		// an L0→L1 compaction running after every third flush, into the live
		// writes that followed: their fsyncs waited behind it (live p99
		// 85–116 ms against 16–34 ms, docs/BENCHMARKS.md, session 14). Fewer,
		// larger L0 merges rewrite level 1 less often; a read checks the bloom
		// filters of up to 8 level-0 tables (16 while stalled), not 3 (8).
		WithNumLevelZeroTables(8).
		WithNumLevelZeroTablesStall(16).
		// Level 0 is compacted into a base level of at least 64 MiB (badger:
		// 10), so a store of 100–640 MiB is two levels under level 0, not
		// three: in a 200k first sync the satellite wrote 1.48–1.50 GB to
		// disk instead of 1.76–1.82, with less of its CPU (docs/BENCHMARKS.md,
		// session 29).
		WithBaseLevelSize(64 << 20).
		WithBaseTableSize(2 << 20).
		WithValueThreshold(64 << 10).
		// Snappy (badger's default), not ZSTD: what a forget erased is
		// checked by scanning the files' bytes (forget's tests, e2e, an
		// operator's grep). Snappy keeps literals as they are; ZSTD's
		// entropy coding hid a copy from the scan.
		WithCompression(options.Snappy).
		WithValueLogFileSize(valueLogFileSize).
		WithBlockCacheSize(8 << 20).
		WithIndexCacheSize(4 << 20).
		WithNumCompactors(2).
		// A compaction builds at most as many key ranges in parallel as
		// there are cores (badger: 5), and finishes at most as many tables
		// at once beside them (badger: 8): each holds a table's blocks in
		// memory, and on a 2-core machine the extra builders only waited.
		// In a 200k first sync the satellite collected about half as often
		// and used ~8 % less CPU (docs/BENCHMARKS.md, session 30).
		WithCompactionWidth(compactionWidth(runtime.GOMAXPROCS(0))).
		WithNumGoroutines(2).
		// badger's expvar counters (bloom hits, gets, bytes per level): one
		// map update per level a read checks, ~2 % of a satellite's CPU in a
		// 100k sync; nothing in crow reads them.
		WithMetricsEnabled(false).
		// 32 KiB blocks, not 4: Snappy finds the repeats across more rows
		// (field names, ids, vectors), so a satellite holding 100k memories
		// takes 162 MB instead of 191 and a home writes ~10 % faster (fewer
		// blocks to index and compress, docs/BENCHMARKS.md, session 26). A
		// point read decompresses up to 32 KiB when its block is not cached;
		// issue 13's search and write p99 did not move.
		WithBlockSize(32 << 10).
		WithLogger(slogBadger{opts.Logger.With("component", "badger")}).
		WithLoggingLevel(badger.WARNING)
	// Every table 2 MiB, at every level (badger doubles it per level by
	// default): a table is built whole in memory (its compressed blocks only,
	// third_party/badger/CROW.md), and up to 8+ build at once in a compaction.
	// With one size every builder fits the allocator pool's bound
	// (third_party/ristretto/CROW.md) and is reused; 8 MiB tables' builders
	// were not. Smaller files are more files: ~60 for 100k memories.
	bo.TableSizeMultiplier = 1
	if opts.InMemory {
		bo = bo.WithDir("").WithValueDir("")
	}
	return bo
}

// compactionWidth returns the key ranges a compaction builds in parallel and the tables
// it finishes at once beside them, for procs cores: procs of each, at least 2, at most
// badger's own 5 and 8.
func compactionWidth(procs int) (splits, builders int) {
	return min(max(procs, 2), 5), min(max(procs, 2), 8)
}

// valueLogFileSize is the size of a value log file. Compact closes the newest one by
// writing up to this much (badger's GC never rewrites the newest file); with values up
// to 64 KiB in the LSM tree the value log holds only large memories, so small files.
const valueLogFileSize = 4 << 20

// trimInterval is how often trimMapped checks the resident file-backed memory.
const trimInterval = 100 * time.Millisecond

// trimMapped runs until Close: every trimInterval it reads RssFile and, once it has
// grown by budgetKB since the last trim, reclaims the resident pages of badger's mapped
// files in dir (pageOutMapped). It stops for good if the kernel cannot do it; after
// another error it waits for the next budget's worth of growth.
func (db *DB) trimMapped(dir string, budgetKB int64) {
	defer close(db.trimDone)
	t := time.NewTicker(trimInterval) // real time: see Options.Clock
	defer t.Stop()
	base := residentFileKB()
	for {
		select {
		case <-db.trimStop:
			return
		case <-t.C:
		}
		rss := residentFileKB()
		if rss-base < budgetKB {
			base = min(base, rss)
			continue
		}
		if err := pageOutMapped(dir); errors.Is(err, errPageoutUnsupported) {
			db.log.Warn("store: not trimming badger's mapped files", "err", err)
			return
		} else if err != nil {
			db.log.Warn("store: trimming badger's mapped files", "err", err)
		}
		base = residentFileKB()
	}
}

func (db *DB) init() error {
	return db.bdb.Update(func(txn *badger.Txn) error {
		v, err := getUint(txn, keySchema)
		if err != nil {
			return err
		}
		if v > schemaVersion {
			return fmt.Errorf("store schema %d is newer than this build (%d)", v, schemaVersion)
		}
		if v < schemaVersion {
			if err := setUint(txn, keySchema, schemaVersion); err != nil {
				return err
			}
		}
		seq, err := getUint(txn, keySeq)
		if err != nil {
			return err
		}
		db.queueHead = seq
		return nil
	})
}

// Close closes the database. Callers stop the Writer and other users first.
func (db *DB) Close() error {
	if db.trimDone != nil {
		close(db.trimStop)
		<-db.trimDone
		db.trimDone = nil
	}
	if err := db.bdb.Close(); err != nil {
		return fmt.Errorf("closing badger: %w", err)
	}
	return nil
}

// Now returns the DB clock's current time.
func (db *DB) Now() time.Time { return db.now() }

func (db *DB) publishQueue(seq uint64) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if seq > db.queueHead {
		db.queueHead = seq
		close(db.queueCh)
		db.queueCh = make(chan struct{})
	}
}

// QueueHead returns the highest q/ seq known to be committed, and a channel closed when it
// next advances. Waiting until an index has caught up with QueueHead gives read-your-writes.
func (db *DB) QueueHead() (uint64, <-chan struct{}) {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.queueHead, db.queueCh
}

// slogBadger adapts slog to badger.Logger.
type slogBadger struct{ l *slog.Logger }

func (s slogBadger) Errorf(f string, a ...any)   { s.l.Error(fmt.Sprintf(f, a...)) }
func (s slogBadger) Warningf(f string, a ...any) { s.l.Warn(fmt.Sprintf(f, a...)) }
func (s slogBadger) Infof(f string, a ...any)    { s.l.Info(fmt.Sprintf(f, a...)) }
func (s slogBadger) Debugf(f string, a ...any)   { s.l.Debug(fmt.Sprintf(f, a...)) }

// Keys.
var (
	keySchema     = []byte("m/schema")
	keyLamport    = []byte("s/lamport")
	keySeq        = []byte("s/seq")
	keyUpdatedAt  = []byte("s/updated_at")
	prefixApplied = []byte("s/applied/")
	prefixQueue   = []byte("q/")
)

func rowKey(table, rowID string) []byte {
	return []byte("t/" + table + "/" + rowID)
}

func tablePrefix(table string) []byte { return []byte("t/" + table + "/") }

func queueKey(seq uint64) []byte {
	k := make([]byte, 2, 10)
	copy(k, prefixQueue)
	return binary.BigEndian.AppendUint64(k, seq)
}

func getUint(txn *badger.Txn, key []byte) (uint64, error) {
	item, err := txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", key, err)
	}
	var v uint64
	err = item.Value(func(b []byte) error {
		if len(b) != 8 {
			return fmt.Errorf("bad length %d", len(b))
		}
		v = binary.BigEndian.Uint64(b)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", key, err)
	}
	return v, nil
}

func setUint(txn *badger.Txn, key []byte, v uint64) error {
	if err := txn.Set(key, binary.BigEndian.AppendUint64(nil, v)); err != nil {
		return fmt.Errorf("writing %s: %w", key, txnErr(err))
	}
	return nil
}
