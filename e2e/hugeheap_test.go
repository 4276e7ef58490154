package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestServeHeapHugePages: where the system's THP mode is "madvise", a
// running `crow serve` says so in its log and has advised its heap (a mapping
// with VmFlags "hg"); with CROW_HUGE_HEAP=0, or in any other mode, it
// advises nothing.
func TestServeHeapHugePages(t *testing.T) {
	mode, _ := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled") // none: no THP, nothing advised
	madvise := bytes.Contains(mode, []byte("[madvise]"))
	const line = "heap: transparent huge pages advised"

	d := NewDaemon(t, "home", nil)
	d.Start()
	advised, hugeKiB := hugeMappings(t, d.cmd.Process.Pid)
	t.Logf("THP mode %s: %d advised mappings, %d KiB in huge pages", bytes.TrimSpace(mode), advised, hugeKiB)
	// How much of the heap is in huge pages by now is logged, not asserted:
	// in about one start in ten the heap had not grown into the advised range
	// yet when /health answered (internal/hugeheap's test asserts that an
	// allocation there gets huge pages).
	if madvise {
		if !strings.Contains(d.Log(), line) || advised == 0 {
			t.Fatalf("THP mode madvise: log line %v, %d advised mappings; want both", strings.Contains(d.Log(), line), advised)
		}
	} else if strings.Contains(d.Log(), line) {
		t.Fatalf("THP mode %s: the daemon advised huge pages", mode)
	}
	d.Stop()

	d.Env = append(d.Env, "CROW_HUGE_HEAP=0")
	d.Start()
	if advised, _ := hugeMappings(t, d.cmd.Process.Pid); advised != 0 {
		t.Fatalf("CROW_HUGE_HEAP=0: %d advised mappings", advised)
	}
	d.Stop()
}

// hugeMappings counts pid's mappings advised MADV_HUGEPAGE (VmFlags "hg")
// and the KiB of huge pages they hold.
func hugeMappings(t *testing.T, pid int) (advised, hugeKiB int) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		t.Fatalf("reading smaps: %v", err)
	}
	huge := 0 // AnonHugePages of the mapping being read
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		l := sc.Text()
		if rest, ok := strings.CutPrefix(l, "AnonHugePages:"); ok {
			huge, _ = strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
		}
		if rest, ok := strings.CutPrefix(l, "VmFlags:"); ok && strings.Contains(" "+rest+" ", " hg ") {
			advised++
			hugeKiB += huge
		}
	}
	return advised, hugeKiB
}
