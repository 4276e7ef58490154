package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/search"
	"github.com/crow-sync/crow/store"
	"github.com/crow-sync/crow/store/storetest"
)

const benchMemories = 100_000

// benchCacheDir holds the benchmark corpus between runs (delete it to rebuild).
// A corpus is used only once its "complete" marker exists.
var benchCacheDir = filepath.Join(os.TempDir(), "crow-gateway-bench-100k-v1")

// benchVocab is the corpus vocabulary: 5,000 words, drawn with a Zipf law.
var benchVocab = func() []string {
	v := make([]string, 5000)
	for i := range v {
		v[i] = fmt.Sprintf("w%x%s", i, strings.Repeat("q", i%3))
	}
	return v
}()

// benchRow is the memories row as memory.Service stores it (see memory's package doc).
type benchRow struct {
	ID          string    `json:"id"`
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
}

// ulid returns a 26-character Crockford ULID for (ms, seq), sortable like memory ids.
func ulid(ms, seq uint64) string {
	const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
	hi, lo := ms>>16, ms<<48|seq&(1<<48-1)
	var out [26]byte
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(out[:])
}

// benchService opens (building it on first use) a store and search index
// holding 100k synthetic memories and returns a memory.Service over them:
// 20-40 words each from the Zipf vocabulary, 20 projects, 8 categories,
// importance 1-10, 0-3 tags of 50. Rows go straight through store.Writer in
// calls of 500 mutations (one durable transaction each, feed-like fake
// journal), and the real indexer indexes them from the store's queue.
func benchService(b *testing.B) *memory.Service {
	b.Helper()
	complete := filepath.Join(benchCacheDir, "complete")
	_, err := os.Stat(complete)
	cached := err == nil
	if !cached {
		if err := os.RemoveAll(benchCacheDir); err != nil {
			b.Fatal(err)
		}
	}
	env := storetest.Start(b, filepath.Join(benchCacheDir, "db"))
	ix, err := search.Open(filepath.Join(benchCacheDir, "index"), slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- search.NewIndexer(env.DB, ix).Serve(ctx) }()
	b.Cleanup(func() {
		cancel()
		<-done
		ix.Close()
	})
	if !cached {
		start := time.Now()
		buildCorpus(b, env.Writer)
		head, _ := env.DB.QueueHead()
		wctx, wcancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer wcancel()
		if err := ix.WaitFor(wctx, head); err != nil {
			b.Fatalf("waiting for the index: %v", err)
		}
		if err := os.WriteFile(complete, nil, 0o644); err != nil {
			b.Fatal(err)
		}
		fmt.Fprintf(os.Stderr, "built %d-memory corpus (store + index) in %v in %s\n",
			benchMemories, time.Since(start).Round(time.Second), benchCacheDir)
	}
	return memory.NewService(env.DB, env.Writer, ix, memory.Options{SearchWait: time.Minute})
}

func buildCorpus(b *testing.B, w *store.Writer) {
	const perCall, writers = 500, 4
	r := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(r, 1.1, 1, uint64(len(benchVocab)-1))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	calls := make(chan []store.Mutation, writers)
	var wg sync.WaitGroup
	var failed atomic.Value
	for range writers {
		wg.Go(func() {
			for muts := range calls {
				if _, err := w.Write(context.Background(), muts...); err != nil {
					failed.Store(err)
				}
			}
		})
	}
	var muts []store.Mutation
	for i := range benchMemories {
		words := make([]string, 20+r.IntN(20))
		for j := range words {
			words[j] = benchVocab[zipf.Uint64()]
		}
		tags := []string{}
		for range r.IntN(4) {
			if t := fmt.Sprint("tag", r.IntN(50)); !slices.Contains(tags, t) {
				tags = append(tags, t)
			}
		}
		at := t0.Add(time.Duration(i) * time.Minute)
		content := strings.Join(words, " ")
		row := benchRow{ID: ulid(uint64(at.UnixMilli()), uint64(i)), Project: fmt.Sprint("p", r.IntN(20)), Content: content,
			ContentHash: memory.ContentHash(content), Category: fmt.Sprint("c", r.IntN(8)), Importance: 1 + r.IntN(10),
			Tags: tags, Source: memory.SourceAPI, Origin: w.InstanceID(), CreatedAt: at, UpdatedAt: at}
		data, err := json.Marshal(row)
		if err != nil {
			b.Fatal(err)
		}
		muts = append(muts, store.Mutation{Table: store.TableMemories, RowID: row.ID, Op: store.OpInsert, Data: data})
		if len(muts) == perCall {
			calls <- muts
			muts = nil
		}
	}
	if len(muts) > 0 {
		calls <- muts
	}
	close(calls)
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatalf("building corpus: %v", err)
	}
}

// benchTransport is shared by every benchmark client so connections are
// reused at 32 concurrent clients (the default keeps only 2 idle per host).
var benchTransport = &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute}

// searcher runs one search; each benchmark client has its own.
type searcher func(query string) error

// BenchmarkGatewaySearch100k compares one full-text search over 100k memories
// (a one-word query from the 500 most frequent words, limit 20) through:
//
//   - direct: a plain net/http handler calling memory.Service.Search and
//     writing the JSON (no auth, metrics, logging): the in-process ceiling;
//   - rest: GET /v1/memories/search on the gateway;
//   - mcp: crow_search_memories on the gateway's /mcp through an mcp-go
//     streamable-HTTP client (one client, so one session, per concurrent caller),
//
// with 1 and 32 concurrent callers, reporting p50/p99 latency and requests/s.
// It never asserts on time.
func BenchmarkGatewaySearch100k(b *testing.B) {
	mem := benchService(b)
	gw := startGateway(b, mem, nil, nil)
	direct := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res, err := mem.Search(r.Context(), memory.SearchOptions{Query: r.URL.Query().Get("q")})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"query": r.URL.Query().Get("q"), "results": res})
	}))
	b.Cleanup(direct.Close)

	hc := &http.Client{Transport: benchTransport}
	httpSearcher := func(base string) func(testing.TB) searcher {
		return func(testing.TB) searcher {
			return func(q string) error {
				req, _ := http.NewRequest(http.MethodGet, base+url.QueryEscape(q), nil)
				req.Header.Set("Authorization", "Bearer "+testKey)
				resp, err := hc.Do(req)
				if err != nil {
					return err
				}
				defer resp.Body.Close()
				var out struct {
					Results []json.RawMessage `json:"results"`
				}
				if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
					return err
				}
				if resp.StatusCode != http.StatusOK || len(out.Results) == 0 {
					return fmt.Errorf("status %d, %d results", resp.StatusCode, len(out.Results))
				}
				return nil
			}
		}
	}
	mcpSearcher := func(tb testing.TB) searcher {
		c, err := client.NewStreamableHttpClient(gw.url+"/mcp", transport.WithHTTPBasicClient(hc),
			transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + testKey}))
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { c.Close() })
		ctx := context.Background()
		if err := c.Start(ctx); err != nil {
			tb.Fatal(err)
		}
		init := mcp.InitializeRequest{}
		init.Params.ClientInfo = mcp.Implementation{Name: "bench", Version: "1"}
		if _, err := c.Initialize(ctx, init); err != nil {
			tb.Fatal(err)
		}
		return func(q string) error {
			req := mcp.CallToolRequest{}
			req.Params.Name = "crow_search_memories"
			req.Params.Arguments = map[string]any{"query": q}
			res, err := c.CallTool(ctx, req)
			if err != nil {
				return err
			}
			if res.IsError {
				return fmt.Errorf("tool error: %s", text(res))
			}
			if m, _ := res.StructuredContent.(map[string]any); m == nil || len(m["results"].([]any)) == 0 {
				return fmt.Errorf("no results")
			}
			return nil
		}
	}
	paths := []struct {
		name string
		make func(testing.TB) searcher
	}{
		{"direct", httpSearcher(direct.URL + "/?q=")},
		{"rest", httpSearcher(gw.url + "/v1/memories/search?q=")},
		{"mcp", mcpSearcher},
	}
	for _, clients := range []int{1, 32} {
		for _, p := range paths {
			b.Run(fmt.Sprintf("%s/clients=%d", p.name, clients), func(b *testing.B) {
				searchers := make([]searcher, clients)
				for i := range searchers {
					searchers[i] = p.make(b)
				}
				lat := make([][]time.Duration, clients)
				var next atomic.Int64
				var wg sync.WaitGroup
				b.ResetTimer()
				start := time.Now()
				for i := range clients {
					wg.Go(func() {
						r := rand.New(rand.NewPCG(uint64(i), 9))
						for next.Add(1) <= int64(b.N) {
							t := time.Now()
							if err := searchers[i](benchVocab[r.IntN(500)]); err != nil {
								b.Error(err)
								return
							}
							lat[i] = append(lat[i], time.Since(t))
						}
					})
				}
				wg.Wait()
				el := time.Since(start)
				b.StopTimer()
				all := slices.Concat(lat...)
				if len(all) == 0 {
					return
				}
				slices.Sort(all)
				b.ReportMetric(float64(all[len(all)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
				b.ReportMetric(float64(len(all))/el.Seconds(), "req/s")
			})
		}
	}
}
