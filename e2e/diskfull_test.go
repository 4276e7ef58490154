package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/client"
	"github.com/crow-sync/crow/gateway"
)

// mountTmpfs mounts a tmpfs of size bytes on a new directory and unmounts it when the test
// ends (after the daemons on it stopped: their cleanups run first). The test needs root or
// CAP_SYS_ADMIN (CI has it): without, it fails, it does not skip.
func mountTmpfs(t *testing.T, size int64) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		t.Fatalf("mounting a %d MiB tmpfs on %s for the full-disk test (needs root or CAP_SYS_ADMIN): %v", size>>20, dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmounting the tmpfs %s: %v", dir, err)
		}
	})
	return dir
}

// freeBytes is the space available on dir's filesystem.
func freeBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * int64(st.Bsize)
}

// fill allocates a filler file in dir that leaves about leave bytes free and returns its
// path. tmpfs allocates what fallocate asks for at once.
func fill(t *testing.T, dir string, leave int64) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	n := freeBytes(t, dir) - leave
	if n <= 0 {
		return path
	}
	if err := syscall.Fallocate(int(f.Fd()), 0, fi.Size(), n); err != nil {
		t.Fatalf("filling %s with %d MiB: %v", dir, n>>20, err)
	}
	return path
}

// homeOn creates (crow init) a home whose $CROW_HOME is under dir.
func homeOn(t *testing.T, dir, name string) *Daemon {
	t.Helper()
	d := newDaemon(t, name)
	d.Home = filepath.Join(dir, name)
	d.MustCLI("init", "--name", name)
	d.readKey()
	return d
}

// pid is the process id of d's current run.
func (d *Daemon) pid() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cmd == nil {
		return 0
	}
	return d.cmd.Process.Pid
}

// exited reports whether d's current run has ended.
func (d *Daemon) exited() bool {
	d.mu.Lock()
	done := d.done
	d.mu.Unlock()
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// allMemories lists every memory of d (pages of 1000), content by id.
func allMemories(t *testing.T, d *Daemon) (map[string]string, error) {
	t.Helper()
	out := map[string]string{}
	in := app.MemoryListIn{Limit: 1000}
	for {
		page, err := Call(d, app.MemoryList, in)
		if err != nil {
			return nil, err
		}
		for _, m := range page.Memories {
			out[m.ID] = m.Content
		}
		if page.NextCursor == "" {
			return out, nil
		}
		in.Cursor = page.NextCursor
	}
}

// holdsExactly reports whether d lists every acknowledged write (id → content) once, and
// nothing else with those contents.
func holdsExactly(t *testing.T, d *Daemon, acked map[string]string) (bool, string) {
	got, err := allMemories(t, d)
	if err != nil {
		return false, err.Error()
	}
	seen := map[string]int{}
	for _, c := range got {
		seen[c]++
	}
	for id, c := range acked {
		if got[id] != c {
			return false, fmt.Sprintf("%s lacks %s (%q)", d.Name, id, c)
		}
		if seen[c] != 1 {
			return false, fmt.Sprintf("%s holds %q %d times", d.Name, c, seen[c])
		}
	}
	return true, ""
}

// A home whose $CROW_HOME is on a small tmpfs, with a satellite on the normal disk that keeps
// writing: once a filler leaves less free than CROW_MIN_FREE_MB, every write on home is
// refused (REST 507 with a JSON error, the MCP tool error, the CLI exits 1 with one line)
// while reads, sync status and the UI answer; replication into home pauses; the daemon
// stays up. When the filler goes, writes succeed again, the satellite's writes made
// meanwhile arrive, and every acknowledged write is on both, once.
func TestDiskFullOnTmpfs(t *testing.T) {
	const (
		tmpfsSize = 192 << 20
		minFreeMB = 96 // the guard's threshold (1 % of the tmpfs is less)
		leave     = 72 << 20
	)
	mnt := mountTmpfs(t, tmpfsSize)
	home := homeOn(t, mnt, "home")
	home.Env = append(home.Env, fmt.Sprintf("CROW_MIN_FREE_MB=%d", minFreeMB))
	home.Start()
	sat := NewDaemon(t, "laptop", home)
	sat.Start()
	Enrolled(t, home, sat)

	var mu sync.Mutex
	acked := map[string]string{} // every write answered 2xx, on either instance
	refused := 0                 // client writes answered 507 or the tool error (home only)
	var homeAcked []string       // written on home itself: readable there whatever replication does
	write := func(d *Daemon, content string) error {
		m, err := Call(d, app.MemoryCreate, app.MemoryCreateIn{Content: content})
		mu.Lock()
		defer mu.Unlock()
		var ce *client.Error
		switch {
		case err == nil:
			acked[m.ID] = content
			if d == home {
				homeAcked = append(homeAcked, m.ID)
			}
		case errors.As(err, &ce) && ce.Status == 507:
			refused++
		}
		return err
	}
	for i := range 5 {
		for _, d := range []*Daemon{home, sat} {
			if err := write(d, fmt.Sprintf("%s before %d", d.Name, i)); err != nil {
				t.Fatalf("%s: %v", d.Name, err)
			}
		}
	}
	Eventually(t, syncTimeout, "the first writes to reach both", func() bool { return converged(home, sat) })
	pid := home.pid()

	// The satellite writes all along: its feed grows while home's disk is full.
	stop := make(chan struct{})
	var satWrites sync.WaitGroup
	satWrites.Add(1)
	satFailed := 0
	go func() {
		defer satWrites.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(40 * time.Millisecond):
			}
			if err := write(sat, fmt.Sprintf("laptop during %d", i)); err != nil {
				satFailed++
			}
		}
	}()
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		satWrites.Wait()
	}()

	filler := fill(t, mnt, leave)
	t.Logf("tmpfs filled: %d MiB free, threshold %d MiB", freeBytes(t, mnt)>>20, minFreeMB)

	// REST: 507 with a JSON error saying why. The guard rereads statfs at most once a
	// second, so a write just after the fill may still be taken (and must then be kept).
	filling := 0
	Eventually(t, 30*time.Second, "home to refuse a REST write with 507", func() bool {
		if err := write(home, fmt.Sprintf("home while filling %d", filling)); err == nil {
			filling++
			return false
		}
		st, e := home.RawJSON(home.Key, "POST", "/v1/memory", `{"content":"refused over REST"}`)
		if st != 507 {
			return false
		}
		mu.Lock()
		refused++
		mu.Unlock()
		if e == nil || !strings.Contains(e.Msg, "disk full") {
			t.Fatalf("507 without a JSON error naming the full disk: %+v", e)
		}
		return true
	})
	t.Logf("%d writes taken in the guard's cache second after the fill", filling)
	// MCP: the tool error of kind insufficient_storage.
	c := mcpClient(t, home, "/mcp")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	req := mcp.CallToolRequest{}
	req.Params.Name = "crow_store_memory"
	req.Params.Arguments = map[string]any{"content": "refused over MCP"}
	res, err := c.CallTool(ctx, req)
	cancel()
	if err != nil {
		t.Fatalf("MCP call on a full disk: %v", err)
	}
	if !res.IsError || res.Meta == nil || res.Meta.AdditionalFields[gateway.KindMetaKey] != "insufficient_storage" {
		t.Fatalf("MCP store on a full disk: IsError %v, meta %+v", res.IsError, res.Meta)
	}
	mu.Lock()
	refused++
	mu.Unlock()
	// CLI: non-zero exit, one line on stderr.
	out, errOut, err := home.CLI("memory", "add", "refused over the CLI")
	if err == nil {
		t.Fatalf("crow memory add on a full disk exited 0: %s", out)
	}
	if line := strings.TrimSpace(errOut); strings.Contains(line, "\n") || !strings.Contains(line, "disk full") {
		t.Fatalf("crow memory add on a full disk: stderr %q, want one line naming the full disk", errOut)
	}
	mu.Lock()
	refused++
	mu.Unlock()

	// Reads, sync status, search and the UI answer.
	// One of home's own writes (a satellite's may not have reached home: replication into a
	// full disk is held back).
	mu.Lock()
	someID := homeAcked[0]
	mu.Unlock()
	for _, path := range []string{"/v1/memory/" + someID, "/v1/memories/list", "/v1/memories/search?q=before",
		"/v1/sync/status", "/ui/", "/health"} {
		if st, body := home.DoRaw("GET", path); st != 200 {
			t.Errorf("GET %s on a full disk: %d %.200s", path, st, body)
		}
	}
	// Replication into home is held back too: while full, the satellite's newer writes do
	// not all reach home (it keeps writing through the whole period).
	satID := instanceID(sat)
	heldAt := feedLengths(home)[satID]
	Eventually(t, 30*time.Second, "the satellite to write past what home holds", func() bool {
		return feedLengths(sat)[satID] > heldAt+10
	})
	if got, want := feedLengths(home)[satID], feedLengths(sat)[satID]; got+5 > want {
		t.Errorf("home stored the satellite's feed up to %d of %d on a full disk", got, want)
	}
	if home.exited() || home.pid() != pid {
		t.Fatalf("home died on the full disk")
	}
	for _, bad := range []string{"panic", "SIGBUS", "fatal error", "unexpected fault"} {
		if strings.Contains(home.Log(), bad) {
			t.Fatalf("home's log holds %q while the disk is full", bad)
		}
	}

	// A restart on the full disk: the daemon comes up, serves reads and still refuses writes.
	guardRefused := refusedMetric(t, home)
	home.Stop()
	home.Start()
	pid = home.pid()
	if st, body := home.DoRaw("GET", "/v1/memory/"+someID); st != 200 {
		t.Fatalf("GET after a restart on the full disk: %d %.200s", st, body)
	}
	Eventually(t, 30*time.Second, "home restarted on the full disk to refuse a write with 507", func() bool {
		if err := write(home, "home restarted while full"); err == nil {
			return false
		}
		st, _ := home.RawJSON(home.Key, "POST", "/v1/memory", `{"content":"refused after the restart"}`)
		if st == 507 {
			mu.Lock()
			refused++
			mu.Unlock()
		}
		return st == 507
	})

	// Space returns: writes resume, replication catches up.
	guardRefused += refusedMetric(t, home)
	mu.Lock()
	refusedWhileFull := refused // the writes after the removal may still meet the guard's cached reading
	mu.Unlock()
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	Eventually(t, 30*time.Second, "home to take writes again", func() bool {
		return write(home, "home after the disk was freed") == nil
	})
	for i := range 5 {
		if err := write(home, fmt.Sprintf("home after %d", i)); err != nil {
			t.Fatalf("write after space returned: %v", err)
		}
	}
	close(stop)
	satWrites.Wait()
	if satFailed > 0 {
		t.Errorf("the satellite (normal disk) failed %d writes", satFailed)
	}
	mu.Lock()
	defer mu.Unlock()
	deadline := time.Now().Add(syncTimeout)
	for {
		why := ""
		for _, d := range []*Daemon{home, sat} {
			if ok, w := holdsExactly(t, d, acked); !ok {
				why = w
				break
			}
		}
		if why == "" && !converged(home, sat) {
			why = "feeds not converged"
		}
		if why == "" && !numbered(home) {
			why = "home has not numbered every memory"
		}
		if why == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after space returned, within %v: %s", syncTimeout, why)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, d := range []*Daemon{home, sat} {
		got, err := allMemories(t, d)
		if err != nil {
			t.Fatal(err)
		}
		for id, c := range got {
			if strings.HasPrefix(c, "refused") {
				t.Errorf("%s holds the refused write %s %q", d.Name, id, c)
			}
		}
		if len(got) != len(acked) {
			t.Errorf("%s lists %d memories, %d were acknowledged", d.Name, len(got), len(acked))
		}
	}
	if home.exited() || home.pid() != pid {
		t.Fatal("home restarted or died")
	}
	for _, bad := range []string{"panic", "SIGBUS", "fatal error", "unexpected fault"} {
		if strings.Contains(home.Log(), bad) {
			t.Errorf("home's log holds %q", bad)
		}
	}
	if guardRefused < refusedWhileFull {
		t.Errorf("the guard counted %d refusals, the clients saw %d", guardRefused, refusedWhileFull)
	}
	t.Logf("full-disk run: %d writes acknowledged (%d on the satellite while home was full), %d client writes refused (REST, MCP, CLI), "+
		"%d refusals by the guard (crow_store_refused_writes_total: client writes, replica appends, apply, indexing, bookkeeping), lost 0, duplicated 0",
		len(acked), countPrefix(acked, "laptop during"), refusedWhileFull, guardRefused)
}

// numbered reports whether every memory d lists has its number from home.
func numbered(d *Daemon) bool {
	page, err := Call(d, app.MemoryList, app.MemoryListIn{Limit: 1000})
	if err != nil {
		return false
	}
	for _, m := range page.Memories {
		if m.Number == nil {
			return false
		}
	}
	return true
}

// refusedMetric reads crow_store_refused_writes_total from d's /metrics.
func refusedMetric(t *testing.T, d *Daemon) int {
	t.Helper()
	return int(metricValue(t, d, "crow_store_refused_writes_total"))
}

// metricValue reads the unlabelled metric name from d's /metrics.
func metricValue(t *testing.T, d *Daemon, name string) float64 {
	t.Helper()
	st, body := d.DoRaw("GET", "/metrics")
	if st != 200 {
		t.Fatalf("/metrics: %d", st)
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no %s in /metrics", name)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func countPrefix(m map[string]string, p string) int {
	n := 0
	for _, c := range m {
		if strings.HasPrefix(c, p) {
			n++
		}
	}
	return n
}

// With the guard off (CROW_MIN_FREE_MB=-1) a tmpfs filled to the last page: what badger and
// bleve do when the disk really is full. The daemon may die (badger writes its memtable log
// through a memory-mapped file: a page the filesystem cannot back is a SIGBUS, which no Go
// code can catch); what must hold is that no acknowledged write is lost or duplicated once
// space returns and the daemon is started again. The test logs whether it survived.
func TestDiskFullWithoutGuard(t *testing.T) {
	mnt := mountTmpfs(t, 128<<20)
	home := homeOn(t, mnt, "home")
	home.Env = append(home.Env, "CROW_MIN_FREE_MB=-1")
	home.Start()
	acked := map[string]string{}
	write := func(content string) error {
		m, err := Call(home, app.MemoryCreate, app.MemoryCreateIn{Content: content})
		if err == nil {
			acked[m.ID] = content
		}
		return err
	}
	for i := range 5 {
		if err := write(fmt.Sprintf("before %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	pid := home.pid()
	filler := fill(t, mnt, 256<<10)
	pad := strings.Repeat("x", 2000)
	failed, lastErr := 0, error(nil)
	for i := 0; i < 3000 && failed < 20 && !home.exited(); i++ {
		if err := write(fmt.Sprintf("full %d %s", i, pad)); err != nil {
			failed++
			lastErr = err
		}
	}
	time.Sleep(2 * time.Second) // let a background flush or compaction meet the full disk too
	died := home.exited()
	t.Logf("guard off, tmpfs full: %d writes acknowledged, %d failed (last: %v); daemon died: %v", len(acked), failed, lastErr, died)
	if died {
		home.Kill() // reap the dead run
		if strings.Contains(home.Log(), "SIGBUS") {
			t.Logf("the daemon died of SIGBUS (badger's memory-mapped log on a full filesystem)")
		}
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if died {
		home.Start()
	} else if home.pid() != pid {
		t.Fatal("home restarted by itself")
	}
	Eventually(t, 30*time.Second, "home to take writes after the disk was freed", func() bool {
		return write("after the disk was freed") == nil
	})
	if ok, why := holdsExactly(t, home, acked); !ok {
		t.Fatalf("after a really full disk: %s", why)
	}
	got, err := allMemories(t, home)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after restart: %d memories listed, %d acknowledged, lost 0, duplicated 0", len(got), len(acked))
}
