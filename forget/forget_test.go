package forget

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/crow-sync/crow/conflicts"
	"github.com/crow-sync/crow/feed"
	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/search"
	"github.com/crow-sync/crow/store"
)

type journal struct{ l *feed.Log }

func (j journal) Stage(txn *store.Txn, e [][]byte) (func(), error) { return j.l.Stage(txn, e) }

// instance is one home instance's storage with its services running: writer, indexer,
// numberer and (start) a Forgetter.
type instance struct {
	t       *testing.T
	dir     string
	db      *store.DB
	own     *feed.Log
	w       *store.Writer
	ix      *search.Index
	mem     *memory.Service
	f       *Forgetter
	shred   sync.Map
	cancel  func()
	wg      sync.WaitGroup
	fCancel func()
}

func newInstance(t *testing.T) *instance {
	t.Helper()
	in := &instance{t: t, dir: t.TempDir()}
	var err error
	if in.db, err = store.Open(filepath.Join(in.dir, "db"), store.Options{Logger: slog.New(slog.DiscardHandler)}); err != nil {
		t.Fatal(err)
	}
	_, key, _ := ed25519.GenerateKey(nil)
	if in.own, err = feed.OpenLog(feed.NewKVStorage(in.db), key); err != nil {
		t.Fatal(err)
	}
	if in.w, err = store.NewWriter(in.db, store.WriterOptions{InstanceID: "home", Journal: journal{in.own}}); err != nil {
		t.Fatal(err)
	}
	if in.ix, err = search.Open(filepath.Join(in.dir, "index"), slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	in.mem = memory.NewService(in.db, in.w, in.ix, memory.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	in.cancel = cancel
	for _, serve := range []func(context.Context) error{
		in.w.Serve, search.NewIndexer(in.db, in.ix).Serve,
		memory.NewNumberer(in.db, in.w, slog.New(slog.DiscardHandler)).Serve,
	} {
		in.wg.Go(func() { _ = serve(ctx) })
	}
	t.Cleanup(func() {
		in.stopForgetter()
		cancel()
		in.wg.Wait()
		in.ix.Close()
		in.db.Close()
	})
	return in
}

func (in *instance) startForgetter() {
	in.t.Helper()
	f, err := New(Options{DB: in.db, Writer: in.w, Own: in.own, Replicas: feed.OpenReplicas(feed.NewKVStorage(in.db), in.own.Key()),
		Conflicts: conflicts.NewStore(in.db, nil), Index: in.ix, Home: true, Debounce: 200 * time.Millisecond,
		Shred:  func(id string) error { in.shred.Store(id, true); return nil },
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		in.t.Fatal(err)
	}
	in.f = f
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = f.Serve(ctx) }()
	in.fCancel = func() { cancel(); <-done }
}

func (in *instance) stopForgetter() {
	if in.fCancel != nil {
		in.fCancel()
		in.fCancel = nil
	}
}

// filesHolding returns the files under dir that contain s.
func filesHolding(t testing.TB, dir, s string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if bytes.Contains(b, []byte(s)) {
			out = append(out, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// setup writes n memories, one holding secret in two numbered versions, and waits until
// all are numbered and indexed; it returns that memory's id.
func setup(t *testing.T, in *instance, n int, secret string) string {
	t.Helper()
	ctx := context.Background()
	m, err := in.mem.Add(ctx, memory.CreateInput{Content: "first " + secret, Project: "p"})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first version", func() bool { nums, _ := memory.VersionNumbers(in.db, m.ID); return len(nums) == 1 })
	if _, err := in.mem.Update(ctx, m.ID, memory.PatchInput{Content: ptr("second " + secret)}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := g; i < n; i += 8 {
				if _, err := in.mem.Add(ctx, memory.CreateInput{Content: fmt.Sprintf("memory %d of the store, about nothing much", i), Project: "p"}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	waitFor(t, "every memory numbered", func() bool { hi, _ := memory.HighestNumber(in.db); return hi == uint64(n+2) })
	head, _ := in.db.QueueHead()
	wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if err := in.ix.WaitFor(wctx, head); err != nil {
		t.Fatal(err)
	}
	return m.ID
}

func ptr[T any](v T) *T { return &v }

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Minute); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func checkErased(t *testing.T, in *instance, id, secret string) {
	t.Helper()
	for _, n := range []uint64{1, 2} {
		v, err := in.mem.GetVersion(context.Background(), n)
		if err != nil || v.Content != "" || v.ForgottenAt == "" || v.EventHash == nil || v.ContentHash == "" {
			t.Fatalf("version #%d after the forget: %+v %v", n, v, err)
		}
	}
	if _, ok := in.shred.Load(id); !ok {
		t.Fatal("the data key was not shredded")
	}
	data, cleared, err := in.own.ReadSparse(0, in.own.Head().Length)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range data {
		if bytes.Contains(e, []byte(secret)) {
			t.Fatalf("feed entry %d still holds the string", i)
		}
	}
	// memories insert and update; home's numbering batches of #1 (insert) and #2 (insert,
	// #1 superseded_by).
	if len(cleared) != 4 {
		t.Fatalf("%d entries cleared, want 4", len(cleared))
	}
	checkFeedHoldsVersions(t, in, data)
}

// checkFeedHoldsVersions checks that the entries not cleared still carry every
// numbering row as the store holds it: what shared a cleared batch entry with the
// forgotten content was re-published, so a peer that syncs now loses nothing.
func checkFeedHoldsVersions(t *testing.T, in *instance, data [][]byte) {
	t.Helper()
	latest := map[string]store.ChangeRecord{}
	for i, e := range data {
		if e == nil {
			continue
		}
		recs, err := store.ParseChanges(e)
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		for _, r := range recs {
			latest[r.Table+"/"+r.RowID] = r
		}
	}
	rows := 0
	err := in.db.View(func(txn *store.Txn) error {
		for _, table := range []string{store.TableMemoryVersions, store.TableMemoryNumbers} {
			err := txn.ScanRows(table, func(r *store.Row) error {
				rows++
				rec, ok := latest[table+"/"+r.RowID]
				switch {
				case !ok:
					return fmt.Errorf("%s/%s is in no feed entry left", table, r.RowID)
				case string(rec.Data) != string(r.Data) || rec.VV.Compare(r.VV) != store.Equal:
					return fmt.Errorf("%s/%s: the feed's last version %s %v is not the row's %s %v", table, r.RowID, rec.Data, rec.VV, r.Data, r.VV)
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if rows == 0 {
		t.Fatal("no numbering rows: the check proves nothing")
	}
}

// TestForgetterErasesEveryCopy: in a home store of N memories, one memory holding a unique
// string in two versions is forgotten; within a bounded time no file of the store or the
// index holds the string; its versions keep number, event hash and content hash, its data
// key is shredded and its five feed entries are cleared. N is 2000, or $CROW_FORGET_N.
func TestForgetterErasesEveryCopy(t *testing.T) {
	n := 2000
	if v, err := strconv.Atoi(os.Getenv("CROW_FORGET_N")); err == nil {
		n = v
	}
	in := newInstance(t)
	in.startForgetter()
	const secret = "zqxunique-forgetter-1"
	id := setup(t, in, n, secret)
	if len(filesHolding(t, in.dir, secret)) == 0 {
		t.Fatal("the string is in no file before the forget: the scan proves nothing")
	}
	start := time.Now()
	if _, err := in.mem.Forget(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "no copy on disk", func() bool { return len(filesHolding(t, in.dir, secret)) == 0 })
	took := time.Since(start)
	waitFor(t, "the compaction", func() bool { return in.f.Stats().Compactions > 0 })
	if files := filesHolding(t, in.dir, secret); len(files) != 0 {
		t.Fatalf("after the compaction the string is in %v", files)
	}
	st := in.f.Stats()
	t.Logf("%d memories (feed of %d entries): no copy on disk %v after the forget, compacted %v after it (debounce 200ms); "+
		"full feed scan %v, compaction %v; %+v", n, in.own.Head().Length, took.Round(time.Millisecond),
		time.Since(start).Round(time.Millisecond), st.LastScan.Round(time.Millisecond), st.LastCompact.Round(time.Millisecond), st)
	checkErased(t, in, id, secret)
}

// TestForgetterResumes: a forget written while no Forgetter runs (an instance down, or
// one that crashed) is carried out when one starts.
func TestForgetterResumes(t *testing.T) {
	in := newInstance(t)
	const secret = "zqxunique-forgetter-2"
	id := setup(t, in, 50, secret)
	in.startForgetter() // registers its position, then stop it
	waitFor(t, "the forgetter to register", func() bool { _, ok, _ := in.db.ConsumerPos(Consumer); return ok })
	in.stopForgetter()
	if _, err := in.mem.Forget(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if len(filesHolding(t, in.dir, secret)) == 0 {
		t.Fatal("erased with no Forgetter running")
	}
	in.startForgetter()
	waitFor(t, "no copy on disk", func() bool { return len(filesHolding(t, in.dir, secret)) == 0 })
	checkErased(t, in, id, secret)
	if _, err := in.mem.Forget(context.Background(), id); err != nil { // idempotent: nothing new to erase
		t.Fatal(err)
	}
}

// TestForgetterCatchesUpWithoutNewChanges: a Forgetter restarted behind more
// than one step of queue (queueScan entries) reads on to the forget without
// waiting for another change. (It used to read one step per queue change:
// after a bulk catch-up, a satellite's Forgetter stopped far behind and
// never erased.)
func TestForgetterCatchesUpWithoutNewChanges(t *testing.T) {
	in := newInstance(t)
	const secret = "zqxunique-forgetter-3"
	in.startForgetter()
	waitFor(t, "the forgetter to register", func() bool { _, ok, _ := in.db.ConsumerPos(Consumer); return ok })
	in.stopForgetter()
	// Every memory below is two queue entries at least (row, then home's
	// version and number): 2*queueScan memories are several steps.
	id := setup(t, in, 2*queueScan, secret)
	if _, err := in.mem.Forget(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	head, _ := in.db.QueueHead()
	in.startForgetter()
	waitFor(t, "no copy on disk", func() bool { return len(filesHolding(t, in.dir, secret)) == 0 })
	checkErased(t, in, id, secret)
	if pos, _, _ := in.db.ConsumerPos(Consumer); pos < head {
		t.Errorf("the Forgetter stopped at %d, before the head %d", pos, head)
	}
}
