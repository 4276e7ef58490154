package hugeheap

import (
	"errors"
	"os"
	"strings"
)

// Size is how much heap address space Reserve advises at init: the heap a
// daemon grows to under its default soft memory limit (400 MiB), with the
// room the collector's headroom and fragmentation take. 256 MiB left the
// top of a 100k sync's heap on 4 KiB pages: its zeroing was the satellite's
// largest cost (docs/BENCHMARKS.md, session 22). Only address space: nothing
// is touched until the heap grows into it.
const Size = 768 << 20

// Outcome is what Reserve did.
type Outcome struct {
	// Start and End bound the advised range (both zero: none).
	Start, End uintptr
	// Skipped says why nothing was advised ("" when a range was).
	Skipped string
}

// ErrUnsupported: the system has no transparent huge pages to ask for.
var ErrUnsupported = errors.New("hugeheap: no transparent huge pages on this system")

// AtInit is what the package's init did (zero when it did not run Reserve:
// not `crow serve`, or CROW_HUGE_HEAP=0).
var AtInit Outcome

func init() {
	if command(os.Args[1:]) != "serve" || os.Getenv("CROW_HUGE_HEAP") == "0" {
		return
	}
	if disablesTHP(os.Getenv("GODEBUG")) {
		AtInit = Outcome{Skipped: "GODEBUG disablethp=1"}
		return
	}
	AtInit, _ = Reserve(Size)
}

// disablesTHP reports whether godebug (GODEBUG's value) turns the runtime's
// huge pages off (disablethp=1, the last setting winning): the operator asked
// the runtime to advise its heap MADV_NOHUGEPAGE, which this would undo.
func disablesTHP(godebug string) bool {
	off := false
	for _, kv := range strings.Split(godebug, ",") {
		if k, v, ok := strings.Cut(strings.TrimSpace(kv), "="); ok && k == "disablethp" {
			off = v == "1"
		}
	}
	return off
}

// command is the crow command args name: the first argument that is not a
// flag, where --home (cmd/crow's one global flag with a separate value) takes
// the argument after it.
func command(args []string) string {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--":
			if i+1 < len(args) {
				return args[i+1]
			}
			return ""
		case a == "-home" || a == "--home":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return a
		}
	}
	return ""
}
