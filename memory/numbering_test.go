package memory

import (
	"bytes"
	"context"
	"crypto/sha3"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crow-sync/crow/clock"
	"github.com/crow-sync/crow/store"
	"github.com/crow-sync/crow/store/storetest"
)

var quiet = slog.New(slog.DiscardHandler)

// TestEventHashGolden pins the event record bytes and the event hash (SPEC §10). These
// values are frozen: anchors commit to them. The hashes were checked against an independent
// implementation (Python's hashlib.sha3_256 over "CM_MEMORY_EVENT_V1" + the record bytes).
func TestEventHashGolden(t *testing.T) {
	created := time.Date(2026, 11, 29, 21, 0, 0, 123456789, time.UTC) // ms are truncated
	cases := []struct {
		name        string
		number      uint64
		project     string
		contentHash string
		createdAt   time.Time
		origin      string
		record      string // the exact bytes hashed after the domain
		hash        string
	}{
		{
			name:   "plain",
			number: 42, project: "crow", contentHash: ContentHash("remember the milk"),
			createdAt: created, origin: "inst-home",
			record: `{"content_hash":"0057061a4f16934b96f73f579167f795c4d4c20d8c501fc495197c550af51110",` +
				`"created_at":"2026-11-29T21:00:00.123Z","number":42,"origin":"inst-home","project":"crow"}`,
			hash: "0x625bacb9d4ff50497860892a9553810df1227900ffe5137dc147404bded46633",
		},
		{
			// Escapes: only ", \ and controls; <, &, é and U+2028 stay UTF-8; the time is
			// converted to UTC; invalid UTF-8 becomes U+FFFD. The project's bytes in the
			// record are: 61 5c 22 62 5c 5c 63 5c 6e 5c 74 5c 75 30 30 30 31 3c 26 c3 a9
			// e2 80 a8 ef bf bd (a\"b\\c\n\t\u0001<&é U+2028 U+FFFD).
			name:   "escapes",
			number: 1, project: "a\"b\\c\n\t\x01<&é\u2028\xff", contentHash: "",
			createdAt: time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.FixedZone("CET", 3600)),
			origin:    "sat/1",
			record: "{\"content_hash\":\"\",\"created_at\":\"2026-01-02T02:04:05.006Z\",\"number\":1," +
				"\"origin\":\"sat/1\",\"project\":\"a\\\"b\\\\c\\n\\t\\u0001<&é\u2028\ufffd\"}",
			hash: "0x73c96d945337374e75962e6774b9afbc5103a2446536992c0cf684c9695d69de",
		},
	}
	for _, c := range cases {
		rec := eventRecord(c.number, c.project, c.contentHash, c.createdAt, c.origin)
		if string(rec) != c.record {
			t.Errorf("%s: record\n got %s\nwant %s", c.name, rec, c.record)
		}
		got := EventHash(c.number, c.project, c.contentHash, c.createdAt, c.origin)
		if got != c.hash {
			t.Errorf("%s: hash %s, want %s", c.name, got, c.hash)
		}
		// The definition, spelled out: SHA3-256 over the domain then the record.
		sum := sha3.Sum256(append([]byte("CM_MEMORY_EVENT_V1"), c.record...))
		if want := "0x" + hex.EncodeToString(sum[:]); got != want {
			t.Errorf("%s: hash %s, SHA3-256(domain ‖ record) %s", c.name, got, want)
		}
	}
}

// TestEventRecordMatchesSortedJSON checks the canonical record against an independent
// encoder (encoding/json sorts map keys) on inputs where the two agree.
func TestEventRecordMatchesSortedJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		project := fmt.Sprintf("p%d-é<%c>", r.Uint32(), rune(0x20+r.IntN(0x5f)))
		hash := ContentHash(project)
		at := time.UnixMilli(r.Int64N(4e12)).UTC()
		origin := fmt.Sprint("inst-", r.Uint64())
		num := r.Uint64N(1 << 53)
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(map[string]any{"number": num, "project": project, "content_hash": hash,
			"created_at": at.Format("2006-01-02T15:04:05.000Z"), "origin": origin}); err != nil {
			t.Fatal(err)
		}
		want := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		if got := eventRecord(num, project, hash, at, origin); !bytes.Equal(got, want) {
			t.Fatalf("record\n got %s\nwant %s", got, want)
		}
	}
}

// numbererRun is a Numberer serving in the background.
type numbererRun struct {
	n      *Numberer
	cancel context.CancelFunc
	done   chan struct{}
	err    error // Serve's result, set when done is closed
}

// startNumberer runs a new Numberer on env (with hook, which may be nil) until stop.
func startNumberer(t testing.TB, env *storetest.Env, hook func(string) error) *numbererRun {
	t.Helper()
	n := NewNumberer(env.DB, env.Writer, quiet)
	n.hook = hook
	return runNumberer(t, n)
}

// runNumberer serves n in the background until stop.
func runNumberer(t testing.TB, n *Numberer) *numbererRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &numbererRun{n: n, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.err = n.Serve(ctx)
	}()
	t.Cleanup(func() { r.stop() })
	return r
}

// stop cancels Serve and returns its result.
func (r *numbererRun) stop() error {
	r.cancel()
	<-r.done
	return r.err
}

// addReplicated writes a memory created on instance origin at created the way the apply
// loop does (a TxnBatch in the caller's transaction) and returns its id.
func addReplicated(t testing.TB, db *store.DB, origin string, created time.Time, content string) string {
	t.Helper()
	created = created.UTC().Truncate(time.Millisecond)
	d := rowData{ID: newID(created), Project: "sat", Content: content, ContentHash: ContentHash(content),
		Category: DefaultCategory, Importance: 5, Tags: []string{}, Source: SourceMCP, Origin: origin,
		CreatedAt: created, UpdatedAt: created}
	data, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	put := func(txn *store.Txn) error {
		b, err := txn.BeginBatch()
		if err != nil {
			return err
		}
		lam := b.ObserveLamport(7)
		if _, err := b.PutRow(&store.Row{RowID: d.ID, Table: store.TableMemories, Data: data, LamportTS: lam,
			InstanceID: origin, VV: store.VV{origin: 1}, UpdatedAt: created.Truncate(time.Second)}); err != nil {
			return err
		}
		return b.Flush()
	}
	// As the apply loop does: Update re-runs put when it conflicts with the Writer.
	if err := db.Update(context.Background(), put); err != nil {
		t.Fatal(err)
	}
	return d.ID
}

// numbersIn returns every memory_numbers row by memory id.
func numbersIn(t testing.TB, db *store.DB) map[string]numberRow {
	t.Helper()
	out := map[string]numberRow{}
	err := db.View(func(txn *store.Txn) error {
		return txn.ScanRows(store.TableMemoryNumbers, func(r *store.Row) error {
			var nr numberRow
			if err := json.Unmarshal(r.Data, &nr); err != nil {
				return err
			}
			out[r.RowID] = nr
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// memoriesIn returns every memory row's data (live or not) by id, and the live ids in id order.
func memoriesIn(t testing.TB, db *store.DB) (map[string]rowData, []string) {
	t.Helper()
	all := map[string]rowData{}
	var live []string
	err := db.View(func(txn *store.Txn) error {
		return txn.ScanRows(store.TableMemories, func(r *store.Row) error {
			var d rowData
			if err := json.Unmarshal(r.Data, &d); err != nil {
				return err
			}
			all[r.RowID] = d
			if !r.Deleted {
				live = append(live, r.RowID)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return all, live
}

// versionsIn returns every memory_versions row by number, checking the row ids.
func versionsIn(t testing.TB, db *store.DB) map[uint64]Version {
	t.Helper()
	out := map[uint64]Version{}
	err := db.View(func(txn *store.Txn) error {
		return txn.ScanRows(store.TableMemoryVersions, func(r *store.Row) error {
			var v Version
			if err := json.Unmarshal(r.Data, &v); err != nil {
				return err
			}
			if r.RowID != VersionRowID(v.Number) || r.Deleted {
				return fmt.Errorf("version row %s (deleted %v) holds #%d", r.RowID, r.Deleted, v.Number)
			}
			out[v.Number] = v
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkNumbers checks that the numbers assigned are exactly 1..N, each once, each a version
// of an existing memory with its own content hash and event hash, linked both ways to the
// memory's previous and next versions, the first one with the memory's created_at; that
// memory_numbers names each numbered memory's newest version; and returns memory_numbers.
func checkNumbers(t testing.TB, db *store.DB) map[string]numberRow {
	t.Helper()
	nums := numbersIn(t, db)
	vers := versionsIn(t, db)
	mems, _ := memoriesIn(t, db)
	newest := 0
	for num := uint64(1); num <= uint64(len(vers)); num++ {
		v, ok := vers[num]
		if !ok {
			t.Fatalf("%d versions, but no #%d: numbers are not exactly 1..%d", len(vers), num, len(vers))
		}
		d, ok := mems[v.MemoryID]
		if !ok {
			t.Fatalf("#%d given to missing memory %s", num, v.MemoryID)
		}
		if v.Origin != d.Origin {
			t.Fatalf("#%d: origin %s, the memory's %s", num, v.Origin, d.Origin)
		}
		if v.ContentHash == "" && v.SupersededBy == 0 {
			t.Fatalf("#%d, the newest version of %s, has no content", num, v.MemoryID)
		}
		if v.ContentHash == "" { // a legacy number edited since: no content held
		} else if v.ContentHash != ContentHash(v.Content) {
			t.Fatalf("#%d: content hash %s of %q", num, v.ContentHash, v.Content)
		} else if want := EventHash(num, v.Project, v.ContentHash, v.CreatedAt, v.Origin); v.EventHash != want {
			t.Fatalf("#%d: event hash %s, want %s", num, v.EventHash, want)
		} else if v.Supersedes == 0 && !v.CreatedAt.Equal(d.CreatedAt) {
			t.Fatalf("#%d, a first version, created %v; the memory %v", num, v.CreatedAt, d.CreatedAt)
		}
		if p := v.Supersedes; p != 0 && (p >= num || vers[p].SupersededBy != num || vers[p].MemoryID != v.MemoryID) {
			t.Fatalf("#%d supersedes #%d, which is %+v", num, p, vers[p])
		}
		if nx := v.SupersededBy; nx != 0 && (vers[nx].Supersedes != num || vers[nx].MemoryID != v.MemoryID) {
			t.Fatalf("#%d superseded by #%d, which is %+v", num, nx, vers[nx])
		}
		if v.SupersededBy == 0 {
			newest++
			if nr := nums[v.MemoryID]; nr.Number != num || nr.EventHash != v.EventHash {
				t.Fatalf("newest version #%d of %s, but memory_numbers has %+v", num, v.MemoryID, nr)
			}
		}
	}
	if newest != len(nums) {
		t.Fatalf("%d newest versions, %d memory_numbers rows", newest, len(nums))
	}
	return nums
}

// waitCaughtUp waits until every live memory's content and project are its newest
// version's, and checks the numbers.
func waitCaughtUp(t testing.TB, db *store.DB) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		nums, vers := numbersIn(t, db), versionsIn(t, db)
		mems, live := memoriesIn(t, db)
		behind := ""
		for _, id := range live {
			v, ok := vers[nums[id].Number]
			if !ok || v.ContentHash != mems[id].ContentHash || v.Project != mems[id].Project {
				behind = id
				break
			}
		}
		if behind == "" {
			checkNumbers(t, db)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("memory %s: its content is not numbered", behind)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitNumbered waits until want memories are numbered.
func waitNumbered(t testing.TB, db *store.DB, want int) map[string]numberRow {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		nums := numbersIn(t, db)
		if len(nums) >= want {
			if len(nums) > want {
				t.Fatalf("%d memories numbered, want %d", len(nums), want)
			}
			return nums
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d memories numbered", len(nums), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// edit patches a memory through the service.
func edit(t testing.TB, s *Service, id string, p PatchInput) Memory {
	t.Helper()
	m, err := s.Update(context.Background(), id, p)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// add adds a memory through the service.
func add(t testing.TB, s *Service, content string) Memory {
	t.Helper()
	m, err := s.Add(context.Background(), CreateInput{Content: content, Project: "p"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestNumbersLocalWritesInOrder(t *testing.T) {
	s, env := newService(t)
	startNumberer(t, env, nil)
	var ids []string
	for i := range 60 {
		ids = append(ids, add(t, s, fmt.Sprint("memory ", i)).ID)
	}
	nums := waitNumbered(t, env.DB, 60)
	checkNumbers(t, env.DB)
	for i, id := range ids {
		if nums[id].Number != uint64(i+1) {
			t.Fatalf("memory %d (%s) got #%d", i, id, nums[id].Number)
		}
	}
	m, err := s.Get(context.Background(), ids[6])
	if err != nil {
		t.Fatal(err)
	}
	want := EventHash(7, m.Project, m.ContentHash, m.CreatedAt, "inst-test")
	if m.Number == nil || *m.Number != 7 || m.EventHash == nil || *m.EventHash != want {
		t.Fatalf("Get: number %v event hash %v, want 7 %s", m.Number, m.EventHash, want)
	}
	page, err := s.List(context.Background(), ListOptions{Oldest: true, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range page.Memories {
		if m.Number == nil || m.EventHash == nil {
			t.Fatalf("List: %s without number", m.ID)
		}
	}
}

// TestNumbersReplicatedRowsInArrivalOrder: memories the apply loop writes are numbered with
// the local ones, in the order they reach home, not by creation time.
func TestNumbersReplicatedRowsInArrivalOrder(t *testing.T) {
	s, env := newService(t)
	startNumberer(t, env, nil)
	old := time.Now().Add(-time.Hour)
	var order []string
	for i := range 20 {
		order = append(order, add(t, s, fmt.Sprint("local ", i)).ID)
		// Created an hour ago on a satellite: its id sorts before every local one.
		order = append(order, addReplicated(t, env.DB, "sat-1", old.Add(time.Duration(i)*time.Second), fmt.Sprint("remote ", i)))
	}
	nums := waitNumbered(t, env.DB, len(order))
	checkNumbers(t, env.DB)
	for i, id := range order {
		if nums[id].Number != uint64(i+1) {
			t.Fatalf("arrival %d (%s) got #%d", i, id, nums[id].Number)
		}
	}
	m, err := s.Get(context.Background(), order[1])
	if err != nil || m.Origin != "sat-1" || m.Number == nil || *m.Number != 2 ||
		*m.EventHash != EventHash(2, "sat", m.ContentHash, m.CreatedAt, "sat-1") {
		t.Fatalf("replicated memory %+v %v", m, err)
	}
}

// TestNoPositionFollowsUnprunedQueue: on a database whose queue was never pruned, the first
// start numbers by arrival too (no backfill is needed).
func TestNoPositionFollowsUnprunedQueue(t *testing.T) {
	env := storetest.Start(t, t.TempDir())
	s := NewService(env.DB, env.Writer, nil, Options{})
	a := add(t, s, "first to arrive").ID
	b := addReplicated(t, env.DB, "sat-1", time.Now().Add(-time.Hour), "older, arrived second")
	startNumberer(t, env, nil)
	nums := waitNumbered(t, env.DB, 2)
	if nums[a].Number != 1 || nums[b].Number != 2 {
		t.Fatalf("numbers %+v", nums)
	}
}

func TestRestartNoGapNoDuplicate(t *testing.T) {
	s, env := newService(t)
	r := startNumberer(t, env, nil)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 40 {
				add(t, s, fmt.Sprint("g", g, " memory ", i))
			}
		})
	}
	for len(numbersIn(t, env.DB)) < 50 {
		time.Sleep(time.Millisecond)
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	checkNumbers(t, env.DB)
	for i := range 100 { // while no numberer runs
		add(t, s, fmt.Sprint("offline ", i))
	}
	startNumberer(t, env, nil)
	for i := range 100 {
		add(t, s, fmt.Sprint("after ", i))
	}
	waitNumbered(t, env.DB, 8*40+200)
	checkNumbers(t, env.DB)
}

var errCrash = errors.New("simulated crash")

// TestCrashAtRandomPoints stops the numberer 20 times at random points (a hook failing at a
// random step, assign, after-write or backfill point, or a cancel at a random time) while
// local and replicated memories arrive, some are edited (content twice or once, then
// importance), and the search indexer prunes the queue; some rounds start from a pruned
// queue without a position (backfill). After every stop the numbers are exactly 1..M, each
// a consistent version (checkNumbers), and at the end every live memory's content is its
// newest version's.
func TestCrashAtRandomPoints(t *testing.T) {
	s, env := newService(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	total := 0
	points := map[string]int{}
	for round := range 20 {
		backfill := round > 0 && r.IntN(4) == 0
		if backfill {
			// Lose the position and let the queue be pruned: this start backfills.
			if err := env.DB.DropConsumer(NumbererConsumer); err != nil {
				t.Fatal(err)
			}
			head, _ := env.DB.QueueHead()
			if err := env.DB.PruneQueue(head); err != nil {
				t.Fatal(err)
			}
		}
		// Crash at the k-th call of one hook point, or cancel at a random time.
		crashPoints := []string{"step", "assign", "written"}
		crashPoint, crashAt := crashPoints[r.IntN(len(crashPoints))], int64(1+r.IntN(3))
		if backfill && r.IntN(2) == 0 {
			crashPoint, crashAt = "backfilled", 1 // once per start
		}
		byHook := r.IntN(4) > 0
		var calls atomic.Int64
		var crashedAt atomic.Value
		hook := func(point string) error {
			if byHook && point == crashPoint && calls.Add(1) == crashAt {
				crashedAt.Store(point)
				return errCrash
			}
			return nil
		}
		run := startNumberer(t, env, hook)
		n := 20 + r.IntN(60)
		total += n
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for i := g; i < n; i += 4 {
					switch {
					case i%3 == 0:
						addReplicated(t, env.DB, "sat-1", time.Now().Add(-time.Minute), fmt.Sprint("r", round, "-", i))
					case i%3 == 1:
						add(t, s, fmt.Sprint("r", round, "-", i))
					default: // edited: a new version (or two), then not a version
						id := add(t, s, fmt.Sprint("r", round, "-", i)).ID
						edit(t, s, id, PatchInput{Content: ptr(fmt.Sprint("r", round, "-", i, " edited"))})
						if i%2 == 0 {
							edit(t, s, id, PatchInput{Content: ptr(fmt.Sprint("r", round, "-", i, " edited again"))})
						}
						edit(t, s, id, PatchInput{Importance: ptr(9)})
					}
				}
			})
		}
		if !byHook {
			time.Sleep(time.Duration(r.IntN(20_000)) * time.Microsecond)
			if err := run.stop(); err != nil {
				t.Fatal(err)
			}
		}
		wg.Wait()
		if byHook {
			select {
			case <-run.done:
			case <-time.After(200 * time.Millisecond): // caught up before crashAt
			}
			if err := run.stop(); err != nil && !errors.Is(err, errCrash) {
				t.Fatal(err)
			}
		}
		switch p, ok := crashedAt.Load().(string); {
		case ok:
			points[p]++
		case byHook:
			points["caught up first"]++
		default:
			points["cancel"]++
		}
		checkNumbers(t, env.DB)
	}
	t.Logf("stops by point: %v", points)
	startNumberer(t, env, nil)
	waitNumbered(t, env.DB, total)
	waitCaughtUp(t, env.DB)
	nums := checkNumbers(t, env.DB)
	if vers := versionsIn(t, env.DB); len(vers) <= total {
		t.Fatalf("%d versions of %d memories, some edited", len(vers), total)
	}
	_, live := memoriesIn(t, env.DB)
	if len(live) != total || len(nums) != total {
		t.Fatalf("%d live memories, %d numbers, want %d", len(live), len(nums), total)
	}
}

// waitPruned waits until the search indexer has pruned the queue up to seq.
func waitPruned(t testing.TB, db *store.DB, seq uint64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var first uint64
		err := db.View(func(txn *store.Txn) error {
			return txn.ScanQueue(0, 1, func(e store.QueueEntry) error { first = e.Seq; return nil })
		})
		if err != nil {
			t.Fatal(err)
		}
		if first == 0 || first > seq {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue still starts at %d, want it pruned up to %d", first, seq)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestPreExistingDatabase: the numberer's first start on a database whose queue the indexer
// has already pruned numbers the live memories in creation (row id) order, skipping the
// deleted ones, then follows the queue.
func TestPreExistingDatabase(t *testing.T) {
	s, env := newService(t)
	ctx := context.Background()
	var deleted []string
	for i := range 30 {
		id := add(t, s, fmt.Sprint("local ", i)).ID
		addReplicated(t, env.DB, "sat-1", time.Now().Add(-time.Duration(i)*time.Minute), fmt.Sprint("remote ", i))
		if i%6 == 0 {
			if err := s.Delete(ctx, id); err != nil {
				t.Fatal(err)
			}
			deleted = append(deleted, id)
		}
	}
	if _, err := s.Search(ctx, SearchOptions{}); err != nil { // waits for the indexer
		t.Fatal(err)
	}
	head, _ := env.DB.QueueHead()
	waitPruned(t, env.DB, head)
	if _, ok, _ := env.DB.ConsumerPos(NumbererConsumer); ok {
		t.Fatal("numberer registered before it ran")
	}

	startNumberer(t, env, nil)
	nums := waitNumbered(t, env.DB, 60-len(deleted))
	checkNumbers(t, env.DB)
	_, live := memoriesIn(t, env.DB)
	for i, id := range live {
		if nums[id].Number != uint64(i+1) {
			t.Fatalf("live memory %d in id order (%s) got #%d", i, id, nums[id].Number)
		}
	}
	for _, id := range deleted {
		if _, ok := nums[id]; ok {
			t.Fatalf("deleted memory %s numbered", id)
		}
	}
	// The numberer saves its position after the numbers, once it is idle.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		pos, ok, err := env.DB.ConsumerPos(NumbererConsumer)
		if ok && err == nil && pos >= head {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("position %d %v %v, want ≥ %d", pos, ok, err, head)
		}
	}
	next := add(t, s, "after the backfill").ID
	nums = waitNumbered(t, env.DB, 61-len(deleted))
	if nums[next].Number != uint64(61-len(deleted)) {
		t.Fatalf("new memory got #%d", nums[next].Number)
	}
}

// TestIndexerPruneWhileNumbererLags: while the numberer is held up, the indexer indexes and
// prunes, but not past the numberer's position; released, the numberer numbers everything.
func TestIndexerPruneWhileNumbererLags(t *testing.T) {
	s, env := newService(t)
	var held atomic.Bool
	gate := make(chan struct{})
	startNumberer(t, env, func(point string) error {
		if point == "step" && held.Load() {
			<-gate
		}
		return nil
	})
	for i := range 100 {
		add(t, s, fmt.Sprint("early ", i))
	}
	waitNumbered(t, env.DB, 100)
	// Wait until the numberer is idle with its position stored.
	head, _ := env.DB.QueueHead()
	for {
		pos, _, err := env.DB.ConsumerPos(NumbererConsumer)
		if err != nil {
			t.Fatal(err)
		}
		if pos == head {
			break
		}
		time.Sleep(time.Millisecond)
		head, _ = env.DB.QueueHead()
	}
	held.Store(true)
	pos := head
	for i := range 500 {
		if i%4 == 0 {
			addReplicated(t, env.DB, "sat-2", time.Now(), fmt.Sprint("late remote ", i))
		} else {
			add(t, s, fmt.Sprint("late ", i))
		}
	}
	if _, err := s.Search(context.Background(), SearchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPruned(t, env.DB, pos) // the indexer pruned what both have consumed …
	head, _ = env.DB.QueueHead()
	var left []uint64
	err := env.DB.View(func(txn *store.Txn) error {
		return txn.ScanQueue(0, 0, func(e store.QueueEntry) error { left = append(left, e.Seq); return nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	// … and nothing the numberer has not.
	if uint64(len(left)) != head-pos || left[0] != pos+1 {
		t.Fatalf("queue holds %d entries from %v, want %d from %d", len(left), left[:1], head-pos, pos+1)
	}
	if got := len(numbersIn(t, env.DB)); got != 100 {
		t.Fatalf("%d numbered while held", got)
	}
	held.Store(false)
	close(gate)
	waitNumbered(t, env.DB, 600)
	checkNumbers(t, env.DB)
}

// TestDeletedMemories: a memory deleted before home numbered it gets no number; a numbered
// memory that is deleted keeps its number, which is never reused.
func TestDeletedMemories(t *testing.T) {
	s, env := newService(t)
	ctx := context.Background()
	a := add(t, s, "deleted before numbering").ID
	b := add(t, s, "numbered, then deleted").ID
	if err := s.Delete(ctx, a); err != nil {
		t.Fatal(err)
	}
	c := add(t, s, "numbered").ID
	startNumberer(t, env, nil)
	nums := waitNumbered(t, env.DB, 2)
	if _, ok := nums[a]; ok || nums[b].Number != 1 || nums[c].Number != 2 {
		t.Fatalf("numbers %+v", nums)
	}
	if err := s.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	d := add(t, s, "after the delete").ID
	nums = waitNumbered(t, env.DB, 3)
	if nums[b].Number != 1 || nums[d].Number != 3 {
		t.Fatalf("numbers after delete %+v", nums)
	}
	checkNumbers(t, env.DB)
}

// TestAlreadyNumberedUnderneath: a memory_numbers row that appears between the numberer's
// read and its write (ErrExists) is kept; the numberer re-reads, skips that memory and goes
// on after the highest number, without a duplicate.
func TestAlreadyNumberedUnderneath(t *testing.T) {
	env := storetest.Start(t, t.TempDir())
	s := NewService(env.DB, env.Writer, nil, Options{})
	x := add(t, s, "numbered underneath").ID
	y := add(t, s, "numbered by the numberer").ID
	var once sync.Once
	startNumberer(t, env, func(point string) error {
		if point != "assign" {
			return nil
		}
		var err error
		once.Do(func() {
			// As another numberer would: the version and the memory's latest number.
			m, err1 := s.Get(context.Background(), x)
			if err1 != nil {
				err = err1
				return
			}
			eh := EventHash(1000, m.Project, m.ContentHash, m.CreatedAt, m.Origin)
			v, _ := json.Marshal(Version{Number: 1000, MemoryID: x, Project: m.Project, Content: m.Content,
				ContentHash: m.ContentHash, CreatedAt: m.CreatedAt, Origin: m.Origin, EventHash: eh})
			nr, _ := json.Marshal(numberRow{Number: 1000, EventHash: eh})
			_, err = env.Writer.Write(context.Background(),
				store.Mutation{Table: store.TableMemoryVersions, RowID: VersionRowID(1000), Op: store.OpInsert, Data: v},
				store.Mutation{Table: store.TableMemoryNumbers, RowID: x, Op: store.OpInsert, Data: nr})
		})
		return err
	})
	nums := waitNumbered(t, env.DB, 2)
	if nums[x].Number != 1000 || nums[y].Number != 1001 {
		t.Fatalf("numbers %+v", nums)
	}
}

func TestOneNumbererPerDB(t *testing.T) {
	env := storetest.Start(t, t.TempDir())
	serving := make(chan struct{})
	var once sync.Once
	startNumberer(t, env, func(string) error { once.Do(func() { close(serving) }); return nil })
	<-serving
	err := NewNumberer(env.DB, env.Writer, quiet).Serve(context.Background())
	if !errors.Is(err, ErrNumbererRunning) {
		t.Fatalf("second numberer: %v", err)
	}
}

// BenchmarkNumberer100k measures how fast home numbers 100k memories that are already
// stored: following the change queue, and backfilling when the queue was pruned.
func BenchmarkNumberer100k(b *testing.B) {
	const count = 100_000
	for _, mode := range []string{"queue", "backfill"} {
		b.Run(mode, func(b *testing.B) {
			var total time.Duration
			for range b.N {
				b.StopTimer()
				env := storetest.Start(b, b.TempDir())
				now := time.Now().UTC().Truncate(time.Millisecond)
				muts := make([]store.Mutation, 0, 256)
				for i := range count {
					d := rowData{ID: newID(now), Project: "bench", Content: fmt.Sprint("memory ", i),
						Category: DefaultCategory, Importance: 5, Tags: []string{}, Source: SourceAPI,
						Origin: "inst-test", CreatedAt: now, UpdatedAt: now}
					d.ContentHash = ContentHash(d.Content)
					data, _ := json.Marshal(d)
					muts = append(muts, store.Mutation{Table: store.TableMemories, RowID: d.ID, Op: store.OpInsert, Data: data})
					if len(muts) == cap(muts) || i == count-1 {
						if _, err := env.Writer.Write(context.Background(), muts...); err != nil {
							b.Fatal(err)
						}
						muts = muts[:0]
					}
				}
				if mode == "backfill" {
					head, _ := env.DB.QueueHead()
					if err := env.DB.PruneQueue(head); err != nil {
						b.Fatal(err)
					}
				}
				time.Sleep(3 * time.Second) // let badger's compactions of the load settle
				done := make(chan struct{})
				n := NewNumberer(env.DB, env.Writer, quiet)
				var once sync.Once
				n.hook = func(string) error { // runs in Serve's goroutine
					if n.next > count {
						once.Do(func() { close(done) })
					}
					return nil
				}
				b.StartTimer()
				start := time.Now()
				run := runNumberer(b, n)
				<-done
				total += time.Since(start)
				b.StopTimer()
				if err := run.stop(); err != nil {
					b.Fatal(err)
				}
				if got := len(numbersIn(b, env.DB)); got != count {
					b.Fatalf("%d numbered", got)
				}
				env.Close()
			}
			b.ReportMetric(float64(count*b.N)/total.Seconds(), "memories/s")
		})
	}
}

// TestNumbererLingersOnItsClock: after a change the Numberer waits
// numberLinger on its clock, then numbers the burst in one pass.
// signalIdle sets n's hook to signal on the returned channel (capacity 1) each
// time n, caught up, waits for a change.
func signalIdle(n *Numberer) <-chan struct{} {
	idle := make(chan struct{}, 1)
	n.hook = func(point string) error {
		if point == "idle" {
			select {
			case idle <- struct{}{}:
			default:
			}
		}
		return nil
	}
	return idle
}

func TestNumbererLingersOnItsClock(t *testing.T) {
	s, env := newService(t)
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	n := NewNumberer(env.DB, env.Writer, quiet)
	n.Clock = clk
	idle := signalIdle(n)
	runNumberer(t, n)
	<-idle // caught up, waiting for a change

	ids := []string{add(t, s, "one").ID}
	clk.BlockUntil(1) // the first write started the linger
	ids = append(ids, add(t, s, "two").ID, add(t, s, "three").ID)
	clk.Advance(numberLinger - time.Nanosecond)
	if nums := numbersIn(t, env.DB); len(nums) != 0 {
		t.Fatalf("numbered %v before the linger ended", nums)
	}
	clk.Advance(time.Nanosecond)
	nums := waitNumbered(t, env.DB, 3)
	for i, id := range ids {
		if nums[id].Number != uint64(i+1) {
			t.Errorf("memory %d got #%d", i, nums[id].Number)
		}
	}
}

// TestEditIsANewVersion: an edit of the content of #1 is numbered #3 (after another memory's
// #2) with supersedes 1; #1 keeps its content, content hash and event hash and gets
// superseded_by 3; memory_numbers and the live memory name #3; both versions read by number.
func TestEditIsANewVersion(t *testing.T) {
	s, env := newService(t)
	ctx := context.Background()
	startNumberer(t, env, nil)
	m := add(t, s, "the deploy target is staging")
	add(t, s, "another memory")
	waitNumbered(t, env.DB, 2)
	v1, err := s.GetVersion(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	edit(t, s, m.ID, PatchInput{Content: ptr("the deploy target is production")})
	waitCaughtUp(t, env.DB)

	old, err := s.GetVersion(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if old.Content != "the deploy target is staging" || old.ContentHash != m.ContentHash ||
		*old.EventHash != *v1.EventHash || *old.EventHash != EventHash(1, "p", m.ContentHash, m.CreatedAt, m.Origin) ||
		old.SupersededBy == nil || *old.SupersededBy != 3 || old.Supersedes != nil || old.ID != m.ID {
		t.Fatalf("#1 after the edit: %+v", old)
	}
	cur, err := s.GetVersion(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	live, _ := s.Get(ctx, m.ID)
	if cur.Content != "the deploy target is production" || cur.Supersedes == nil || *cur.Supersedes != 1 ||
		cur.SupersededBy != nil || cur.ID != m.ID || !cur.CreatedAt.Equal(live.UpdatedAt) ||
		*cur.EventHash != EventHash(3, "p", live.ContentHash, live.UpdatedAt, m.Origin) {
		t.Fatalf("#3: %+v (live %+v)", cur, live)
	}
	if live.Number == nil || *live.Number != 3 || *live.EventHash != *cur.EventHash || live.Supersedes != nil {
		t.Fatalf("live memory after the edit: %+v", live)
	}
	if _, err := s.GetVersion(ctx, 4); !errors.Is(err, ErrNotFound) {
		t.Fatalf("#4: %v", err)
	}
	if hi, err := s.HighestNumber(); err != nil || hi != 3 {
		t.Fatalf("highest %d %v", hi, err)
	}
	err = env.DB.View(func(txn *store.Txn) error {
		n, err := NewestVersion(txn, 1)
		if err == nil && n != 3 {
			err = fmt.Errorf("newest version of #1: #%d", n)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestWhatIsAVersion: editing category, importance or tags is not a version (no new number;
// the version keeps what it had); moving the memory to another project is (the event record
// holds the project); a delete is not; the versions stay readable after it.
func TestWhatIsAVersion(t *testing.T) {
	s, env := newService(t)
	ctx := context.Background()
	startNumberer(t, env, nil)
	m := add(t, s, "use badger")
	waitNumbered(t, env.DB, 1)
	edit(t, s, m.ID, PatchInput{Category: ptr("decision"), Importance: ptr(9), Tags: &[]string{"db"}})
	marker := add(t, s, "written after the non-content edit") // numbered after it: #2
	waitNumbered(t, env.DB, 2)
	waitCaughtUp(t, env.DB)
	if n := numbersIn(t, env.DB); n[m.ID].Number != 1 || n[marker.ID].Number != 2 || len(versionsIn(t, env.DB)) != 2 {
		t.Fatalf("after a non-content edit: %+v", n)
	}
	if v, _ := s.GetVersion(ctx, 1); v.Category != DefaultCategory || v.Importance != 5 || len(v.Tags) != 0 {
		t.Fatalf("#1 changed by a non-content edit: %+v", v)
	}
	edit(t, s, m.ID, PatchInput{Project: ptr("other")})
	waitCaughtUp(t, env.DB)
	v3, err := s.GetVersion(ctx, 3)
	if err != nil || v3.Project != "other" || *v3.Supersedes != 1 || v3.Category != "decision" || v3.Importance != 9 {
		t.Fatalf("project move: %+v %v", v3, err)
	}
	if err := s.Delete(ctx, m.ID); err != nil {
		t.Fatal(err)
	}
	add(t, s, "after the delete")
	waitNumbered(t, env.DB, 3)
	waitCaughtUp(t, env.DB)
	if len(versionsIn(t, env.DB)) != 4 {
		t.Fatalf("a delete was numbered: %d versions", len(versionsIn(t, env.DB)))
	}
	for _, n := range []uint64{1, 3} {
		if v, err := s.GetVersion(ctx, n); err != nil || v.ID != m.ID || v.Content != "use badger" {
			t.Fatalf("#%d after the delete: %+v %v", n, v, err)
		}
	}
}

// TestLegacyNumbers: memory_numbers rows written before memory_versions existed. A memory
// whose content still recomputes its event hash gets its version under the same number; one
// edited since is numbered anew, superseding a content-less version of the old number.
func TestLegacyNumbers(t *testing.T) {
	s, env := newService(t)
	ctx := context.Background()
	same := add(t, s, "unchanged since numbered")
	edited := add(t, s, "edited since numbered")
	for i, m := range []Memory{same, edited} {
		num := uint64(i + 1)
		nr, _ := json.Marshal(numberRow{Number: num, EventHash: EventHash(num, m.Project, m.ContentHash, m.CreatedAt, m.Origin)})
		if _, err := env.Writer.Write(ctx, store.Mutation{Table: store.TableMemoryNumbers, RowID: m.ID, Op: store.OpInsert, Data: nr}); err != nil {
			t.Fatal(err)
		}
	}
	edit(t, s, edited.ID, PatchInput{Content: ptr("the new text")})
	startNumberer(t, env, nil)
	waitCaughtUp(t, env.DB)
	vers := versionsIn(t, env.DB)
	if len(vers) != 3 || vers[1].Content != same.Content || vers[1].SupersededBy != 0 ||
		vers[2].Content != "" || vers[2].ContentHash != "" || vers[2].SupersededBy != 3 || vers[2].MemoryID != edited.ID ||
		vers[3].Content != "the new text" || vers[3].Supersedes != 2 {
		t.Fatalf("versions %+v", vers)
	}
	if n := numbersIn(t, env.DB); n[same.ID].Number != 1 || n[edited.ID].Number != 3 {
		t.Fatalf("numbers %+v", n)
	}
}

// TestForgottenVersion: a version whose content a forget erased reads by number with its
// number, event hash and forgotten_at, without content.
func TestForgottenVersion(t *testing.T) {
	s, env := newService(t)
	ctx := context.Background()
	v, _ := json.Marshal(map[string]any{"number": 1, "memory_id": "01M8SJB9PAW34PHA39FQ3K4EN9", "project": "p",
		"content": "left by an older forget", "event_hash": "0xab", "forgotten_at": "2026-12-01T10:00:00Z"})
	if _, err := env.Writer.Write(ctx, store.Mutation{Table: store.TableMemoryVersions, RowID: VersionRowID(1), Op: store.OpInsert, Data: v}); err != nil {
		t.Fatal(err)
	}
	m, err := s.GetVersion(ctx, 1)
	if err != nil || m.Content != "" || *m.Number != 1 || *m.EventHash != "0xab" || m.ForgottenAt != "2026-12-01T10:00:00Z" {
		t.Fatalf("forgotten version %+v %v", m, err)
	}
	b, _ := json.Marshal(m)
	if !bytes.Contains(b, []byte(`"forgotten_at":"2026-12-01T10:00:00Z"`)) || bytes.Contains(b, []byte("older forget")) {
		t.Fatalf("forgotten version JSON %s", b)
	}
}

// TestNumbererBatchesAStream: under a steady stream of writes the Numberer lingers after
// each small pass, so it writes at most one pass per numberLinger of the stream (plus the
// passes large enough not to linger); when it went straight back to the queue it wrote 63
// passes for these 600 memories in ~230 ms (11 now).
func TestNumbererBatchesAStream(t *testing.T) {
	s, env := newService(t)
	var writes atomic.Int64
	startNumberer(t, env, func(point string) error {
		if point == "written" {
			writes.Add(1)
		}
		return nil
	})
	const writers, each = 8, 75
	start := time.Now()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if _, err := s.Add(context.Background(), CreateInput{Content: fmt.Sprintf("stream %d/%d", w, i), Project: "p"}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	waitNumbered(t, env.DB, writers*each)
	elapsed := time.Since(start)
	bound := int64(elapsed/numberLinger) + writers*each/smallPass + 2
	t.Logf("%d memories numbered in %d writes over %v (bound %d)", writers*each, writes.Load(), elapsed.Round(time.Millisecond), bound)
	if n := writes.Load(); n > bound {
		t.Fatalf("%d numbering writes for %d memories in %v: more than one per linger (%d)", n, writers*each, elapsed, bound)
	}
}

// TestNumbererPassOverManyChanges: one pass reads more memories than GetRows
// reads one by one (new ones, content edits of numbered ones, edits that are
// not versions, deletes) and numbers each new version once.
func TestNumbererPassOverManyChanges(t *testing.T) {
	s, env := newService(t)
	ctx := context.Background()
	r := startNumberer(t, env, nil)
	var first []Memory
	for i := range 40 {
		first = append(first, add(t, s, fmt.Sprintf("first batch %d", i)))
	}
	before := waitNumbered(t, env.DB, 40)
	// Stopped once its position is saved at the head: the next pass reads only
	// what follows, whose queue order is not id order.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		head, _ := env.DB.QueueHead()
		if pos, _, err := env.DB.ConsumerPos(NumbererConsumer); err == nil && pos == head {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the numberer did not save its position at the queue head")
		}
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	// With the numberer stopped: in this order, new memories, content edits
	// (new versions), category edits (none) and deletes.
	var wantOrder []string // memory ids with a new version
	for i := range 40 {
		m := add(t, s, fmt.Sprintf("second batch %d", i))
		wantOrder = append(wantOrder, m.ID)
		switch j := i % 4; {
		case i < 20 && j == 0:
			edit(t, s, first[i].ID, PatchInput{Content: ptr(fmt.Sprintf("first batch %d, edited", i))})
			wantOrder = append(wantOrder, first[i].ID)
		case i < 20 && j == 1:
			edit(t, s, first[i].ID, PatchInput{Category: ptr("decision")})
		case i < 20 && j == 2:
			if err := s.Delete(ctx, first[i].ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	startNumberer(t, env, nil)
	waitCaughtUp(t, env.DB)
	if hi, err := s.HighestNumber(); err != nil || hi != uint64(40+len(wantOrder)) {
		t.Fatalf("highest number %d (%v), want %d", hi, err, 40+len(wantOrder))
	}
	nums := numbersIn(t, env.DB)
	given := map[uint64]string{}
	for _, id := range wantOrder {
		n := nums[id].Number
		if n < 41 || n > uint64(40+len(wantOrder)) || given[n] != "" {
			t.Errorf("memory %s: #%d (also %q), want one of #41–#%d, once", id, n, given[n], 40+len(wantOrder))
		}
		given[n] = id
	}
	for i := 0; i < 20; i += 4 {
		v, err := s.GetVersion(ctx, nums[first[i].ID].Number)
		if err != nil || v.Supersedes == nil || *v.Supersedes != before[first[i].ID].Number {
			t.Errorf("the edit of %s: %+v %v, want it to supersede #%d", first[i].ID, v, err, before[first[i].ID].Number)
		}
		if old, err := s.GetVersion(ctx, before[first[i].ID].Number); err != nil || old.SupersededBy == nil ||
			*old.SupersededBy != nums[first[i].ID].Number || old.Content != fmt.Sprintf("first batch %d", i) {
			t.Errorf("#%d after the edit: %+v %v", before[first[i].ID].Number, old, err)
		}
		if n := nums[first[i+1].ID].Number; n != before[first[i+1].ID].Number {
			t.Errorf("a category edit renumbered %s: #%d, was #%d", first[i+1].ID, n, before[first[i+1].ID].Number)
		}
	}
}

// TestNumbererYieldsToForeground: after its share of memories the numberer waits
// for a pause in the foreground (numberYieldPause), numberYieldMax at most
// under constant touches, on its clock.
func TestNumbererYieldsToForeground(t *testing.T) {
	s, env := newService(t)
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	fg := clock.NewQuiet(clk, time.Hour, time.Hour) // only Idle is used
	n := NewNumberer(env.DB, env.Writer, quiet)
	n.Clock, n.Foreground = clk, fg
	n.yieldEvery, n.sinceYield = 1, 1 // a wait before every pass
	idle := signalIdle(n)
	// A pause: the pass waits numberYieldPause after the last touch.
	fg.Touch()
	runNumberer(t, n)
	waitTimer := func(what string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if clk.BlockUntilContext(ctx, 1) != nil {
			t.Fatalf("the numberer is not waiting on its clock (%s)", what)
		}
	}
	waitTimer("the yield before the first pass")
	add(t, s, "one")
	clk.Advance(numberYieldPause - time.Millisecond)
	waitTimer("the rest of the yield")
	if nums := numbersIn(t, env.DB); len(nums) != 0 {
		t.Fatalf("numbered %v before the foreground paused", nums)
	}
	clk.Advance(time.Millisecond)
	waitNumbered(t, env.DB, 1)
	for {
		select {
		case <-idle:
		default:
			if len(clk.Pending()) > 0 {
				clk.Advance(numberYieldPause) // lingers and yields after the pass
			}
			time.Sleep(time.Millisecond)
			continue
		}
		break
	}

	// No pause: under constant touches (every 50 ms of the fake clock) "two" is
	// numbered at once (the first pass after an idle numberer does not wait);
	// the numberer then yields before its next pass, and "three", written as soon
	// as "two" is numbered, waits numberYieldMax.
	fg.Touch()
	add(t, s, "two")
	var twoAt time.Time
	deadline := time.Now().Add(20 * time.Second)
	for {
		nums := len(numbersIn(t, env.DB))
		if nums >= 2 && twoAt.IsZero() {
			twoAt = clk.Now()
			add(t, s, "three")
		}
		if nums >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d numbered after %v of the fake clock", nums, clk.Since(twoAt))
		}
		if len(clk.Pending()) == 0 { // between timers, or numbering
			time.Sleep(time.Millisecond)
			continue
		}
		clk.Advance(50 * time.Millisecond)
		fg.Touch()
	}
	if took := clk.Since(twoAt); took < numberYieldMax-150*time.Millisecond || took > numberYieldMax+200*time.Millisecond {
		t.Fatalf("\"three\" numbered %v after \"two\" under constant touches, want about numberYieldMax (%v)", took, numberYieldMax)
	}
}
