package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
	rpprof "runtime/pprof"
	"runtime/trace"
	"strconv"
	"sync"
)

// CROW_PPROF=127.0.0.1:PORT serves net/http/pprof on that address (loopback only) for
// local profiling runs, with mutex and block profiling on; unset (the default), nothing
// is served. docs/benchmarks/load.md shows its use with BenchmarkLoad64 (-load.pprof).
//
// Besides net/http/pprof's routes it serves a CPU profile with a start and an end chosen
// by the caller, for profiling one phase of a benchmark whose length is not known in
// advance (bench/pouchdb/crowbench -pprof): POST /debug/crow/cpu/start begins it, POST
// /debug/crow/cpu/stop ends it and answers with the profile (gzipped protobuf, as
// /debug/pprof/profile). With CROW_PPROF_CPU_AT_START=1 the profile begins when the
// process starts, so a start-up is profiled from its first instruction of main's package.
// CROW_PPROF_TRACE_AT_START=1 does the same for an execution trace (runtime/trace), ended
// by POST /debug/crow/trace/stop, which answers with the trace: the start-up's timeline,
// goroutine by goroutine. CROW_PPROF_CPU_HZ=N samples the CPU N times a second, not 100.
func init() {
	addr := os.Getenv("CROW_PPROF")
	if addr == "" {
		return
	}
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		fmt.Fprintf(os.Stderr, "crow: CROW_PPROF=%q: want a loopback HOST:PORT\n", addr)
		os.Exit(2)
	}
	runtime.SetMutexProfileFraction(5)
	runtime.SetBlockProfileRate(100_000) // one sample per 100 µs blocked
	cpu := &phase{what: "CPU profile", begin: rpprof.StartCPUProfile, end: rpprof.StopCPUProfile}
	if hz, err := strconv.Atoi(os.Getenv("CROW_PPROF_CPU_HZ")); err == nil && hz > 0 {
		// A finer rate than pprof's 100 Hz for short phases (a start-up lasts ~100
		// samples): set first, StartCPUProfile then keeps it (and says so on stderr).
		runtime.SetCPUProfileRate(hz)
	}
	if os.Getenv("CROW_PPROF_CPU_AT_START") == "1" {
		if err := cpu.start(); err != nil {
			fmt.Fprintln(os.Stderr, "crow: CROW_PPROF_CPU_AT_START:", err)
		}
	}
	tr := &phase{what: "execution trace", begin: trace.Start, end: trace.Stop}
	if os.Getenv("CROW_PPROF_TRACE_AT_START") == "1" {
		if err := tr.start(); err != nil {
			fmt.Fprintln(os.Stderr, "crow: CROW_PPROF_TRACE_AT_START:", err)
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("POST /debug/crow/cpu/start", func(w http.ResponseWriter, r *http.Request) {
		if err := cpu.start(); err != nil {
			http.Error(w, err.Error(), http.StatusConflict)
		}
	})
	mux.HandleFunc("POST /debug/crow/cpu/stop", serveStop(cpu))
	mux.HandleFunc("POST /debug/crow/trace/stop", serveStop(tr))
	go func() {
		if err := http.ListenAndServe(addr, mux); err != nil {
			fmt.Fprintln(os.Stderr, "crow: CROW_PPROF:", err)
		}
	}()
}

// phase is a CPU profile or an execution trace taken into memory between a start and a
// stop on request.
type phase struct {
	what  string
	begin func(io.Writer) error
	end   func()

	mu  sync.Mutex
	buf *bytes.Buffer // nil when not taking one
}

func (p *phase) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.buf != nil {
		return fmt.Errorf("a %s is already being taken", p.what)
	}
	buf := new(bytes.Buffer)
	if err := p.begin(buf); err != nil {
		return err
	}
	p.buf = buf
	return nil
}

func (p *phase) stop() ([]byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.buf == nil {
		return nil, fmt.Errorf("no %s is being taken", p.what)
	}
	p.end()
	b := p.buf.Bytes()
	p.buf = nil
	return b, nil
}

// serveStop answers POST .../stop: p's bytes, or 409 if none is being taken.
func serveStop(p *phase) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, err := p.stop()
		if err != nil {
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(b)
	}
}
