package doctor

import "fmt"

// checkStore: the database answers a read, and its filesystem has room
// above the free-space guard's threshold (below it every write is refused
// with 507; near it, soon).
func checkStore(env Env) []Finding {
	if env.Store == nil {
		return nil
	}
	var out []Finding
	if err := env.Store.Read(); err != nil {
		out = append(out, Finding{Check: CheckStore, Status: Problem,
			Message: "the database does not answer a read: " + err.Error(),
			Fix:     "stop crow, back up $CROW_HOME, restart it; if it still fails restore from a backup (crow restore)"})
	} else {
		out = append(out, Finding{Check: CheckStore, Status: OK, Message: "the database opens and reads"})
	}
	free, floor, ok := env.Store.Space()
	switch {
	case !ok:
		out = append(out, Finding{Check: CheckDisk, Status: OK, Message: "free space not measured (in-memory store or guard off)"})
	case free < floor:
		out = append(out, Finding{Check: CheckDisk, Status: Problem,
			Message: fmt.Sprintf("%s free, below the guard's %s: every write is refused (507)", bytes(free), bytes(floor)),
			Fix:     "free disk space on the filesystem of $CROW_HOME (writes resume by themselves), or lower min_free_mb"})
	case free < 2*floor:
		out = append(out, Finding{Check: CheckDisk, Status: Warn,
			Message: fmt.Sprintf("%s free, near the guard's %s: writes will be refused below it", bytes(free), bytes(floor)),
			Fix:     "free disk space on the filesystem of $CROW_HOME"})
	default:
		out = append(out, Finding{Check: CheckDisk, Status: OK,
			Message: fmt.Sprintf("%s free (writes are refused below %s)", bytes(free), bytes(floor))})
	}
	return out
}

func bytes(n uint64) string {
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
