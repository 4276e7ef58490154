package daemon

import (
	"log/slog"

	"github.com/crow-sync/crow/home"
)

// memoryLimit is the soft memory limit Run gives the Go runtime of an instance of role:
// memory_limit_mb (home.Config.MemoryLimitBytes: by default 400 MiB on the home, 192 on a
// satellite), unless GOMEMLIMIT is set, read with getenv: the runtime has applied it
// already and the operator's choice wins. ok is false for no change.
//
// Why a limit: the store's memory comes and goes in bursts (badger builds each
// table in memory while it flushes and compacts, a few MiB to tens of MiB per builder,
// several at once), and with GOGC alone the collector lets the heap grow to twice what
// was live at the previous collection before it runs again; the process's RSS followed
// those peaks. Under the limit the collector runs earlier instead. It is soft: a heap
// that needs more gets more, collected more often. It was off by default while badger's
// pooled builders kept ~800 MiB live (384 MiB then doubled a 100k full sync,
// docs/BENCHMARKS.md, session 9); with that fixed, 400 MiB is the default (session 13).
func memoryLimit(s home.Config, role string, getenv func(string) string) (limit int64, ok bool) {
	if getenv("GOMEMLIMIT") != "" {
		return 0, false
	}
	return s.MemoryLimitBytes(role)
}

// applyMemoryLimit sets memoryLimit's limit with debug.SetMemoryLimit (through set, for
// tests) and logs it.
func applyMemoryLimit(s home.Config, role string, getenv func(string) string, set func(int64) int64, log *slog.Logger) {
	limit, ok := memoryLimit(s, role, getenv)
	if !ok {
		return
	}
	set(limit)
	if log != nil {
		log.Info("daemon: soft memory limit", "mib", limit>>20, "role", role, "setting", "memory_limit_mb")
	}
}
