package store

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// ErrDiskFull is returned (wrapped, with how much is free, where, and the threshold) by
// Writer.Write and DB.CheckSpace when the filesystem holding the store has less free space
// than the guard's threshold (see Options.MinFree). Nothing is written; the same write
// succeeds once space returns. The apply loop meets it too and retries on its next pass.
var ErrDiskFull = errors.New("disk full")

// Statfs reports the bytes available to this process and the total size of the
// filesystem holding dir. StatfsDir is the default, over syscall.Statfs.
type Statfs func(dir string) (free, total uint64, err error)

// StatfsDir reads free and total space of dir's filesystem with syscall.Statfs.
func StatfsDir(dir string) (free, total uint64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return st.Bavail * uint64(st.Bsize), st.Blocks * uint64(st.Bsize), nil
}

// Guard defaults.
const (
	defaultMinFree        = 256 << 20
	defaultMinFreePercent = 1
	spaceCacheTTL         = time.Second
)

// spaceGuard refuses writes while the store's filesystem is short of space. Free space is
// read at most once per spaceCacheTTL (by the clock of DB.now) so the write path stays cheap.
type spaceGuard struct {
	dir     string
	statfs  Statfs
	now     func() time.Time
	minFree int64 // bytes; the threshold is max(minFree, pct% of the filesystem)
	pct     float64

	mu      sync.Mutex // guards checked, free, total, statErr
	checked time.Time
	free    uint64
	total   uint64
	statErr error

	refused atomic.Uint64
}

// threshold is the free space below which writes are refused, for a filesystem of total bytes.
func (g *spaceGuard) threshold(total uint64) uint64 {
	return max(uint64(g.minFree), uint64(float64(total)*g.pct/100))
}

// check returns ErrDiskFull (wrapped) if free space is below the threshold. A statfs failure
// does not refuse writes: the guard only protects against what it can measure.
func (g *spaceGuard) check() error {
	free, total, err := g.read()
	if err != nil {
		return nil
	}
	if th := g.threshold(total); free < th {
		g.refused.Add(1)
		return fmt.Errorf("%w: %s free on the filesystem of %s, below the threshold of %s; free space to resume writes",
			ErrDiskFull, fmtBytes(free), g.dir, fmtBytes(th))
	}
	return nil
}

// read returns the cached statfs result, refreshing it when older than spaceCacheTTL.
func (g *spaceGuard) read() (free, total uint64, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	if g.checked.IsZero() || now.Sub(g.checked) >= spaceCacheTTL || now.Before(g.checked) {
		g.free, g.total, g.statErr = g.statfs(g.dir)
		g.checked = now
	}
	return g.free, g.total, g.statErr
}

func fmtBytes(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// CheckSpace returns ErrDiskFull (wrapped) when the store's filesystem has less free space
// than the threshold, nil otherwise (also for an in-memory store or a disabled guard).
// Writer.Write calls it before taking a write; the apply loop before each batch.
func (db *DB) CheckSpace() error {
	if db.guard == nil {
		return nil
	}
	return db.guard.check()
}

// FreeSpace reports the free bytes of the store's filesystem as last measured (refreshed if
// stale) and ok false when there is no guard or statfs failed.
func (db *DB) FreeSpace() (free uint64, ok bool) {
	if db.guard == nil {
		return 0, false
	}
	f, _, err := db.guard.read()
	return f, err == nil
}

// SpaceStatus reports the free bytes of the store's filesystem (as FreeSpace) and the
// threshold below which writes are refused; ok is false when there is no guard or statfs
// failed. `crow doctor` compares the two.
func (db *DB) SpaceStatus() (free, threshold uint64, ok bool) {
	if db.guard == nil {
		return 0, 0, false
	}
	f, total, err := db.guard.read()
	if err != nil {
		return 0, 0, false
	}
	return f, db.guard.threshold(total), true
}

// RefusedWrites counts the calls CheckSpace refused since Open.
func (db *DB) RefusedWrites() uint64 {
	if db.guard == nil {
		return 0
	}
	return db.guard.refused.Load()
}

// newSpaceGuard returns the guard of Open's options for dir (opts.Now set).
func newSpaceGuard(dir string, opts Options) *spaceGuard {
	g := &spaceGuard{dir: dir, statfs: opts.Statfs, now: opts.Now, minFree: opts.MinFree, pct: opts.MinFreePercent}
	if g.statfs == nil {
		g.statfs = StatfsDir
	}
	if g.minFree == 0 {
		g.minFree = defaultMinFree
	}
	switch {
	case g.pct == 0:
		g.pct = defaultMinFreePercent
	case g.pct < 0:
		g.pct = 0
	}
	return g
}
