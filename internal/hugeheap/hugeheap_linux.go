package hugeheap

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"unsafe"

	"golang.org/x/sys/unix"
)

const hugePage = 2 << 20

// thpModeFile holds the system's THP mode, the selected one in brackets.
const thpModeFile = "/sys/kernel/mm/transparent_hugepage/enabled"

// Reserve makes the runtime map size bytes of fresh heap address space and
// advises it MADV_HUGEPAGE, without touching it (see the package doc). It
// advises nothing (Outcome.Skipped says why) unless the THP mode is
// "madvise", or once the collector has run: the runtime hands a large object
// fresh memory unzeroed only while no span has been freed below it, and
// zeroing size bytes 4 KiB at a time is the cost this package exists to
// avoid. Call it once, as early as possible; init does for `crow serve`.
func Reserve(size uintptr) (Outcome, error) {
	mode, err := os.ReadFile(thpModeFile)
	if err != nil {
		return Outcome{Skipped: "no THP mode: " + err.Error()}, ErrUnsupported
	}
	if !bytes.Contains(mode, []byte("[madvise]")) {
		return Outcome{Skipped: fmt.Sprintf("THP mode is %q, not madvise", bytes.TrimSpace(mode))}, nil
	}
	gc := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(gc)
	if gc[0].Value.Kind() == metrics.KindUint64 && gc[0].Value.Uint64() > 0 {
		return Outcome{Skipped: "the collector has run"}, nil
	}
	b := make([]byte, size)
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	start := (p + hugePage - 1) &^ (hugePage - 1)
	end := (p + size) &^ (hugePage - 1)
	if end <= start {
		return Outcome{Skipped: "size under one huge page"}, nil
	}
	err = unix.Madvise(b[start-p:end-p], unix.MADV_HUGEPAGE)
	runtime.KeepAlive(b)
	if err != nil {
		return Outcome{Skipped: "madvise: " + err.Error()}, fmt.Errorf("hugeheap: madvise: %w", err)
	}
	return Outcome{Start: start, End: end}, nil
}
