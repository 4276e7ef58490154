package main

// The ceiling: what HTTP and JSON alone allow. The same write loop as a full
// run (64 connections, one memory per POST /v1/memory, the response decoded)
// against a stand-in server in a process of its own that decodes each request,
// checks its bearer token, and answers 201 with a memory's JSON, storing
// nothing: no transaction, no fsync, no feed, no index. A crow write rate is
// read against this figure, measured on the same machine in the same session.

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"
)

var (
	ceiling      = flag.Bool("ceiling", false, "only the ceiling: the write loop of a full run (-n memories, -c connections) against a stand-in server that decodes each memory and answers 201, storing nothing (its own process); what HTTP and JSON alone allow here")
	ceilingServe = flag.String("ceiling-serve", "", "(internal) serve the ceiling's stand-in on this address")
)

type ceilingIn struct {
	Content    string   `json:"content"`
	Project    string   `json:"project"`
	Tags       []string `json:"tags"`
	Importance int      `json:"importance"`
}

// ceilingOut has the fields of crow's memory response.
type ceilingOut struct {
	ID          string    `json:"id"`
	Number      *uint64   `json:"number"`
	Project     string    `json:"project"`
	Content     string    `json:"content"`
	ContentHash string    `json:"content_hash"`
	Category    string    `json:"category"`
	Importance  int       `json:"importance"`
	Tags        []string  `json:"tags"`
	Source      string    `json:"source"`
	Origin      string    `json:"origin"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	EventHash   *string   `json:"event_hash"`
}

// serveCeiling runs the stand-in server until killed.
func serveCeiling(addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/memory", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer ceiling" {
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		var m ceilingIn
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&m); err != nil || m.Content == "" {
			http.Error(w, `{"error":"bad memory"}`, http.StatusBadRequest)
			return
		}
		var id [16]byte
		rand.Read(id[:])
		sum := sha256.Sum256([]byte(m.Content))
		now := time.Now().UTC()
		o := ceilingOut{ID: strings.ToUpper(hex.EncodeToString(id[:13])), Project: m.Project, Content: m.Content,
			ContentHash: hex.EncodeToString(sum[:]), Category: "general", Importance: m.Importance, Tags: m.Tags,
			Source: "api", Origin: "00000000-0000-0000-0000-000000000000", CreatedAt: now, UpdatedAt: now}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(o)
	})
	http.Serve(ln, mux)
}

// ceilingRun starts the stand-in, writes -n memories with -c connections and
// records the rate.
func ceilingRun() {
	addr := fmt.Sprintf("127.0.0.1:%d", *basePort)
	self, err := os.Executable()
	if err != nil {
		fatalf("ceiling: %v", err)
	}
	cmd := exec.Command(self, "-ceiling-serve", addr)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		fatalf("ceiling: %v", err)
	}
	defer cmd.Process.Kill()
	d := &daemon{name: "ceiling", addr: addr, key: "ceiling"}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			fatalf("ceiling: the stand-in did not listen on %s", addr)
		}
	}
	res["system"], res["run"], res["n"], res["started"] = "ceiling", *runID, *n, time.Now().UTC().Format(time.RFC3339)
	res["c"] = *workers
	t0 := time.Now()
	d.writeMany(0, *n, *workers)
	el := time.Since(t0)
	res["write_per_s"], res["write_s"] = float64(*n)/el.Seconds(), secs(el)
	logf("ceiling: %d writes in %.2f s = %.0f /s", *n, el.Seconds(), float64(*n)/el.Seconds())
	cmd.Process.Kill()
	cmd.Wait()
	finish(0)
}
