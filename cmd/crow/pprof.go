package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
)

// CROW_PPROF=127.0.0.1:PORT serves net/http/pprof on that address (loopback only) for
// local profiling runs, with mutex and block profiling on; unset (the default), nothing
// is served. docs/benchmarks/load.md shows its use with BenchmarkLoad64 (-load.pprof).
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
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	go func() {
		if err := http.ListenAndServe(addr, mux); err != nil {
			fmt.Fprintln(os.Stderr, "crow: CROW_PPROF:", err)
		}
	}()
}
