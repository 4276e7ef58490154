// Package hugeheap backs the Go heap of `crow serve` with transparent huge
// pages where Linux gives them only on request.
//
// A process touching memory for the first time takes one page fault per
// 4 KiB page. On the virtual machines crow is measured on a fault costs
// ~12 µs (16 MiB of fresh memory: ~50 ms; with huge pages ~1–5 ms), and a
// daemon's start, its catch-up and every badger memtable rotation touch tens
// of MiB of fresh heap. The Go runtime does not ask for huge pages for its
// heap (it did in Go 1.21.0 and stopped), so under THP "madvise" (the default
// of Debian and Ubuntu kernels) the heap never gets them.
//
// Importing the package (blank import, as cmd/crow does) runs Reserve at
// init, in the process `crow serve` only, unless CROW_HUGE_HEAP=0 or
// GODEBUG=disablethp=1 (the runtime's own switch for THP=always): before
// the heap has grown it allocates one large object, which makes the runtime
// map that much fresh address space for its heap, advises it
// (MADV_HUGEPAGE) and lets the collector free it. The reservation touches
// nothing; the heap then grows into the advised range and is faulted in 2 MiB
// at a time, so its resident size grows in 2 MiB steps (an idle daemon: ~5 MB
// more). The advice stays on the mapping when the runtime returns pages to
// the kernel and takes them again.
//
// It does nothing on other systems, under THP "always" (already huge) or
// "never" (refused), or once the collector has run (the runtime would have
// to zero the object page by page; see Reserve).
package hugeheap
