//go:build disksize

package daemon_test

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/crow-sync/crow/anchor"
	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/client"
	"github.com/crow-sync/crow/daemon"
	"github.com/crow-sync/crow/home"
	"github.com/crow-sync/crow/store"
	"github.com/crow-sync/crow/sync/transport"
)

// The on-disk size of a home holding N memories (docs/benchmarks/disk.md):
//
//	go test -tags disksize ./daemon -run TestDiskSize -count=1 -v -disksize.n=1000
//
// It runs a real daemon (badger and bleve in a temporary $CROW_HOME, in-memory
// replication), writes N memories through the REST API with 16 clients, waits
// until every one is numbered and searchable, and prints the size of the db and
// index directories (allocated blocks, as du, and apparent bytes) while running
// and after a clean stop.
var (
	diskSizeN     = flag.Int("disksize.n", 1000, "memories to write")
	diskSizeFiles = flag.Bool("disksize.files", false, "list the db's files at each step")
)

func TestDiskSize(t *testing.T) {
	h := newHome(t)
	settings := home.DefaultConfig()
	settings.Listen = "127.0.0.1:0"
	d, err := daemon.New(daemon.Config{Home: h, Settings: settings, Version: "test"}, daemon.Deps{
		Logger:    slog.New(slog.DiscardHandler),
		Transport: daemon.MemTransport(transport.NewMemNetwork()),
		Chain:     func(context.Context, *slog.Logger) (anchor.Chain, error) { return nil, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Serve(ctx) }()
	c := client.New(d.GatewayURL(), h.APIKey())
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := client.Do(ctx, c, app.MemoryList, app.MemoryListIn{Limit: 1}); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	report("empty, running", h)

	n := *diskSizeN
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 16 {
				imp := 1 + i%10
				_, err := client.Do(ctx, c, app.MemoryCreate, app.MemoryCreateIn{
					Content: fmt.Sprintf("Memory %d: decided to keep the %s service behind the gateway; the staging "+
						"database moves to the new host next week and the old backups stay for 30 days (ticket %d).",
						i, []string{"billing", "search", "auth", "sync"}[i%4], 1000+i),
					Project: fmt.Sprintf("project-%d", i%7), Category: []string{"decision", "fact", "preference"}[i%3],
					Importance: &imp, Tags: []string{"ops", fmt.Sprintf("t%d", i%13)},
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	took := time.Since(start)
	// Every memory numbered (the numberer's rows written) and searchable (the index caught up).
	deadline = time.Now().Add(10 * time.Minute)
	for {
		hits, err := client.Do(ctx, c, app.MemorySearch, app.MemorySearchIn{Query: fmt.Sprintf("\"Memory %d\"", n-1), Limit: 1})
		ver, verr := client.Do(ctx, c, app.MemoryGet, app.MemoryID{ID: fmt.Sprint(n)})
		if err == nil && len(hits.Results) > 0 && verr == nil && ver.ID != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not caught up: search %v, version %d: %v", err, n, verr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("%d memories written in %v (%.0f/s)", n, took, float64(n)/took.Seconds())
	report(fmt.Sprintf("%d memories, running", n), h)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	report(fmt.Sprintf("%d memories, stopped", n), h)
	// What a full compaction (store.DB.Compact: flatten, value log GC) leaves: the
	// live data, for comparison with what the daemon leaves on its own.
	db, err := store.Open(h.DBDir(), store.Options{MappedBudget: -1})
	if err != nil {
		t.Fatal(err)
	}
	st, err := db.Compact(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	report(fmt.Sprintf("%d memories, compacted", n), h)
	t.Logf("compaction took %v", st.Took)
}

func report(what string, h *home.Home) {
	db, dbApp := du(h.DBDir())
	ix, ixApp := du(h.IndexDir())
	all, allApp := du(h.Root)
	if *diskSizeFiles {
		entries, _ := os.ReadDir(h.DBDir())
		for _, e := range entries {
			fi, err := e.Info()
			if err != nil {
				continue
			}
			var blocks int64
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				blocks = st.Blocks * 512
			}
			fmt.Printf("disksize:   %-16s %9d KiB allocated %9d KiB apparent\n", e.Name(), blocks>>10, fi.Size()>>10)
		}
	}
	fmt.Printf("disksize: %-26s db %7.1f MiB (apparent %7.1f)  index %7.1f MiB (apparent %7.1f)  home %7.1f MiB (apparent %7.1f)\n",
		what, mib(db), mib(dbApp), mib(ix), mib(ixApp), mib(all), mib(allApp))
}

// du returns the allocated bytes (st_blocks, as du) and the apparent size of the files under dir.
func du(dir string) (alloc, apparent int64) {
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return nil
		}
		apparent += fi.Size()
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			alloc += st.Blocks * 512
		}
		return nil
	})
	return alloc, apparent
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }
