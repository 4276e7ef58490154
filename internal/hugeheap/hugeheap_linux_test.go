package hugeheap

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The child process (see TestReserveGivesTheHeapHugePages) reserves before
// anything else can run a collection, then reports on its own mappings.
func TestMain(m *testing.M) {
	if os.Getenv("HUGEHEAP_TEST_CHILD") == "1" {
		child()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func child() {
	o, err := Reserve(64 << 20)
	if o.Skipped != "" {
		fmt.Printf("skipped %s (err %v)\n", o.Skipped, err)
		return
	}
	fmt.Printf("advised %d MiB, hg %v\n", (o.End-o.Start)>>20, vmFlag(o.Start, "hg"))
	runtime.GC() // the reserved object is garbage: its pages are the heap's to reuse
	x := make([]byte, 32<<20)
	p := uintptr(unsafe.Pointer(unsafe.SliceData(x)))
	for i := 0; i < len(x); i += 4096 {
		x[i] = 1
	}
	// The object began up to a huge page below Start (Reserve advises whole huge pages).
	fmt.Printf("reused %v, huge %d KiB\n", p+hugePage > o.Start && p+uintptr(len(x)) <= o.End, anonHugeKiB(p, p+uintptr(len(x))))
	runtime.KeepAlive(x)
}

// TestReserveGivesTheHeapHugePages runs a process that reserves 64 MiB, frees
// it, allocates 32 MiB and writes to it: under THP "madvise" the allocation
// reuses the advised range and is backed by huge pages; in any other mode
// nothing is advised and Reserve says why.
func TestReserveGivesTheHeapHugePages(t *testing.T) {
	mode, _ := os.ReadFile(thpModeFile) // none: a kernel without THP, nothing to advise
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), "HUGEHEAP_TEST_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	t.Logf("THP mode %s; child: %s", bytes.TrimSpace(mode), out)
	if !bytes.Contains(mode, []byte("[madvise]")) {
		if !bytes.HasPrefix(out, []byte("skipped ")) {
			t.Fatalf("THP mode %s: want nothing advised, got %s", mode, out)
		}
		return
	}
	var mib, hugeKiB int
	var hg, reused bool
	if _, err := fmt.Sscanf(string(out), "advised %d MiB, hg %t\nreused %t, huge %d KiB", &mib, &hg, &reused, &hugeKiB); err != nil {
		t.Fatalf("child's report %q: %v", out, err)
	}
	if mib < 60 || !hg {
		t.Fatalf("advised %d MiB, VmFlags hg %v: want ~64 MiB advised", mib, hg)
	}
	if !reused {
		t.Fatal("the next large allocation did not reuse the advised range")
	}
	if hugeKiB < 16<<10 {
		t.Fatalf("32 MiB written in the advised range: %d KiB in huge pages, want most of it", hugeKiB)
	}
}

// Once a collection has run, Reserve advises nothing: the runtime could have
// to zero the object page by page.
func TestReserveAfterACollection(t *testing.T) {
	runtime.GC()
	o, _ := Reserve(8 << 20)
	if o.Start != 0 || o.Skipped == "" {
		t.Fatalf("after a collection: %+v, want nothing advised", o)
	}
}

// init reserves in `crow serve` only.
func TestInitOnlyInServe(t *testing.T) {
	if AtInit != (Outcome{}) {
		t.Fatalf("init reserved in a test binary: %+v", AtInit)
	}
}

// smapsOf calls f with each mapping of this process (start, end) and its
// smaps lines.
func smapsOf(f func(start, end uintptr, lines []string)) {
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		panic(err)
	}
	var start, end uintptr
	var lines []string
	flush := func() {
		if end > 0 {
			f(start, end, lines)
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		l := sc.Text()
		if fields := strings.Fields(l); len(fields) > 0 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			if a, z, ok := strings.Cut(fields[0], "-"); ok {
				s, err1 := strconv.ParseUint(a, 16, 64)
				e, err2 := strconv.ParseUint(z, 16, 64)
				if err1 == nil && err2 == nil {
					flush()
					start, end, lines = uintptr(s), uintptr(e), nil
					continue
				}
			}
		}
		lines = append(lines, l)
	}
	flush()
}

func vmFlag(addr uintptr, flag string) bool {
	found := false
	smapsOf(func(start, end uintptr, lines []string) {
		if addr < start || addr >= end {
			return
		}
		for _, l := range lines {
			if rest, ok := strings.CutPrefix(l, "VmFlags:"); ok {
				found = strings.Contains(" "+rest+" ", " "+flag+" ")
			}
		}
	})
	return found
}

// anonHugeKiB sums AnonHugePages over the mappings overlapping [lo, hi).
func anonHugeKiB(lo, hi uintptr) int {
	total := 0
	smapsOf(func(start, end uintptr, lines []string) {
		if end <= lo || start >= hi {
			return
		}
		for _, l := range lines {
			if rest, ok := strings.CutPrefix(l, "AnonHugePages:"); ok {
				n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
				total += n
			}
		}
	})
	return total
}

// BenchmarkFirstTouch writes one byte per 4 KiB page of 16 MiB of fresh
// anonymous memory, as the heap's first use of new pages does, with and
// without MADV_HUGEPAGE (what Reserve asks for): the cost of a page fault
// on this machine.
func BenchmarkFirstTouch(b *testing.B) {
	const size = 16 << 20
	for _, c := range []struct {
		name   string
		advise bool
	}{{"4KiB", false}, {"huge", true}} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				m, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
				if err != nil {
					b.Fatal(err)
				}
				if c.advise {
					if err := unix.Madvise(m, unix.MADV_HUGEPAGE); err != nil {
						b.Fatal(err)
					}
				}
				for i := 0; i < size; i += 4096 {
					m[i] = 1
				}
				if err := unix.Munmap(m); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*size/4096), "µs/page")
		})
	}
}
