package cluster_test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/daemon/cluster"
)

// forgetBenchN is how many memories the three instances hold when one is
// forgotten (100k by default; smaller to try the benchmark out).
var (
	forgetBenchN     = flag.Int("forget.memories", 100_000, "memories held by each instance in BenchmarkForget100k")
	forgetBenchBound = flag.Duration("forget.bound", 10*time.Minute, "how long BenchmarkForget100k waits for a forget to be erased")
)

// BenchmarkForget100k: three in-process daemons (home, laptop, vps; in-memory
// replication, real badger and bleve in their $CROW_HOME) hold 100k memories
// written on home through its REST API (32 writers, the satellites cut off)
// and then replicated in bulk. Each
// iteration writes a probe memory with a unique string, waits until all three
// hold it, forgets it on home (POST /v1/memory/{id}/forget) and measures,
// from the 200, until every instance serves its number as forgotten
// (api-forgotten) and until no file of any $CROW_HOME holds the string
// (erased: a byte scan of every file, repeated; the scan's own time is
// reported as scan-s, the resolution).
//
//	go test ./daemon/cluster -run '^$' -bench Forget100k -benchtime 3x -timeout 2h
//
// The set-up (100k writes, replication, numbering, indexing on all three)
// is logged; it is not part of the measured time.
func BenchmarkForget100k(b *testing.B) {
	c := cluster.New(b, 3, cluster.Options{Names: []string{"home", "laptop", "vps"}, Timeout: 10 * time.Minute})
	hm := c.Node("home")
	began := time.Now()
	// Written on home alone, then replicated in bulk: the satellites apply
	// big batches instead of one memory at a time.
	c.Partition([]string{"home"})
	loadMemories(b, hm, *forgetBenchN)
	wrote := time.Since(began)
	c.Heal()
	waitConverged(b, c, 30*time.Minute)
	b.Logf("set-up: %d memories written on home in %v, replicated and numbered on all three after %v",
		*forgetBenchN, wrote.Round(time.Second), time.Since(began).Round(time.Second))
	for _, n := range c.Nodes {
		size, files := dirSize(b, n.Home.Root)
		b.Logf("%s: $CROW_HOME %d MiB in %d files", n.Name, size>>20, files)
	}

	var apiMax, erasedMax, scanMax time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		var raw [8]byte
		rand.Read(raw[:])
		probe := "zq-pin-" + hex.EncodeToString(raw[:])
		var m struct {
			ID     string  `json:"id"`
			Number *uint64 `json:"number"`
		}
		hm.MustDo(201, "POST", "/v1/memory", map[string]any{"content": "forget probe " + probe, "project": "bench"}, &m)
		var number uint64
		c.Eventually("the probe numbered and searchable everywhere", func() bool {
			for _, n := range c.Nodes {
				var got struct {
					Number *uint64 `json:"number"`
				}
				if st, err := n.Do("GET", "/v1/memory/"+m.ID, nil, &got); err != nil || st != 200 || got.Number == nil {
					return false
				}
				number = *got.Number
				var res struct {
					Results []struct{ ID string } `json:"results"`
				}
				if st, err := n.Do("GET", "/v1/memories/search?q="+probe, nil, &res); err != nil || st != 200 || len(res.Results) != 1 {
					return false
				}
			}
			return true
		})
		find := [][]byte{[]byte(probe), []byte(probe[len("zq-pin-"):])}
		b.StartTimer()

		start := time.Now()
		hm.MustDo(200, "POST", "/v1/memory/"+m.ID+"/forget", nil, nil)
		acked := time.Now()
		c.Eventually("every instance to serve the probe as forgotten", func() bool {
			for _, n := range c.Nodes {
				var got struct {
					Content     string `json:"content"`
					ForgottenAt string `json:"forgotten_at"`
				}
				if st, err := n.Do("GET", "/v1/memory/"+strconv.FormatUint(number, 10), nil, &got); err != nil || st != 200 ||
					got.ForgottenAt == "" || got.Content != "" {
					return false
				}
			}
			return true
		})
		api := time.Since(acked)
		b.Logf("forget %d: answered in %v; forgotten on all three after %v", i, acked.Sub(start).Round(time.Millisecond), api.Round(time.Millisecond))
		for {
			t0 := time.Now()
			var hits []string
			for _, n := range c.Nodes {
				for _, f := range holds(b, n.Home.Root, find) {
					hits = append(hits, n.Name+": "+f)
				}
			}
			scanMax = max(scanMax, time.Since(t0))
			if len(hits) == 0 {
				break
			}
			if time.Since(acked) > *forgetBenchBound {
				b.Fatalf("the probe is still in these files %v after the forget:\n  %s", *forgetBenchBound, strings.Join(hits, "\n  "))
			}
		}
		erased := time.Since(acked)
		b.Logf("forget %d: erased from every file after %v (scan %v)", i, erased.Round(time.Millisecond), scanMax.Round(time.Millisecond))
		apiMax, erasedMax = max(apiMax, api), max(erasedMax, erased)
	}
	b.StopTimer()
	b.ReportMetric(apiMax.Seconds(), "api-forgotten-max-s")
	b.ReportMetric(erasedMax.Seconds(), "erased-max-s")
	b.ReportMetric(scanMax.Seconds(), "scan-s")
}

// loadMemories writes n memories on node through its REST API, 32 at a time.
func loadMemories(b *testing.B, node *cluster.Node, n int) {
	words := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
		"kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango"}
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	for w := range 32 {
		wg.Go(func() {
			r := mrand.New(mrand.NewPCG(uint64(w), 7))
			for {
				i := int(next.Add(1)) - 1
				if i >= n || failed.Load() != nil {
					return
				}
				var text bytes.Buffer
				fmt.Fprintf(&text, "bench memory %d:", i)
				for range 20 + r.IntN(20) {
					text.WriteString(" " + words[r.IntN(len(words))])
				}
				st, err := node.Do("POST", "/v1/memory", map[string]any{"content": text.String(), "project": fmt.Sprint("p", i%20)}, nil)
				if err != nil || st != 201 {
					failed.Store(fmt.Errorf("write %d: status %d: %v", i, st, err))
					return
				}
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
}

// waitConverged waits until every node holds every feed at its author's
// length and that length has stopped growing (home's numbering is done).
func waitConverged(b *testing.B, c *cluster.Cluster, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	var last string
	stable := 0
	for stable < 3 {
		if time.Now().After(deadline) {
			b.Fatalf("no convergence within %v", timeout)
		}
		time.Sleep(2 * time.Second)
		lengths := map[string]map[string]uint64{}
		own := map[string]uint64{}
		for _, n := range c.Nodes {
			var st app.SyncStatus
			n.MustDo(200, "GET", "/v1/sync/status", nil, &st)
			lengths[n.Name] = map[string]uint64{}
			for _, f := range st.Feeds {
				lengths[n.Name][f.InstanceID] = f.Length
				if f.InstanceID == st.InstanceID {
					own[f.InstanceID] = f.Length
				}
			}
		}
		ok := true
		for _, l := range lengths {
			for id, want := range own {
				ok = ok && l[id] == want
			}
		}
		now := fmt.Sprint(own)
		if ok && now == last {
			stable++
		} else {
			stable = 0
		}
		last = now
	}
}

// holds returns the regular files under dir (relative) that contain one of
// find.
func holds(b *testing.B, dir string, find [][]byte) []string {
	var hits []string
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil || e.IsDir() || !e.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, f := range find {
			if bytes.Contains(data, f) {
				rel, _ := filepath.Rel(dir, path)
				hits = append(hits, rel)
				break
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return hits
}

// dirSize sums the sizes of the regular files under dir.
func dirSize(b *testing.B, dir string) (size int64, files int) {
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			size += info.Size()
			files++
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return size, files
}
