package reenroll

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"reflect"
	"testing"

	"github.com/crow-sync/crow/feed"
	"github.com/crow-sync/crow/store"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// journal is the own feed log as the store's write path takes it.
type journal struct{ l *feed.Log }

func (j journal) Stage(txn *store.Txn, entries [][]byte) (func(), error) {
	return j.l.Stage(txn, entries)
}

func newKey(t *testing.T) ed25519.PrivateKey {
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func startWriter(t *testing.T, db *store.DB, id string, l *feed.Log) *store.Writer {
	t.Helper()
	w, err := store.NewWriter(db, store.WriterOptions{InstanceID: id, Journal: journal{l}, Logger: quiet,
		Gate: func() error { return Refusal(id, l) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Serve(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return w
}

func put(t *testing.T, w *store.Writer, table, id, content string) {
	t.Helper()
	data, _ := json.Marshal(map[string]string{"id": id, "content": content})
	if _, err := w.Write(context.Background(), store.Mutation{Table: table, RowID: id, Op: store.OpPut, Data: data}); err != nil {
		t.Fatalf("writing %s/%s: %v", table, id, err)
	}
}

func record(t *testing.T, table, id string) []byte {
	t.Helper()
	b, err := store.ChangeRecord{Schema: store.ChangeSchema, Type: "x", Table: table, RowID: id, Op: store.OpInsert,
		Data: json.RawMessage(`{}`), Lamport: 1, InstanceID: "old", VV: store.VV{"old": 1}}.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSelection(t *testing.T) {
	rows, skipped := Selection([][]byte{
		record(t, store.TableMemories, "m1"), record(t, store.TableMemories, "m2"), {}, // a cleared entry
		record(t, store.TableMemories, "m1"), record(t, store.TableCrowInstances, "old"), []byte("not a record"),
		record(t, store.TableNotes, "n1"),
	})
	want := []RowRef{{store.TableMemories, "m1"}, {store.TableMemories, "m2"}, {store.TableNotes, "n1"}}
	if len(rows) != len(want) || skipped != 1 {
		t.Fatalf("selection %v skipped %d", rows, skipped)
	}
	for i := range want {
		if rows[i] != want[i] {
			t.Fatalf("selection %v, want %v", rows, want)
		}
	}
	if !SameEntry(nil, []byte("x")) || !SameEntry([]byte("x"), nil) || SameEntry([]byte("x"), []byte("y")) || !SameEntry([]byte("x"), []byte("x")) {
		t.Fatal("SameEntry")
	}
}

// The whole recovery on a badger store: a copy writes on its own branch
// and meets the genuine head (writes refused); after a restart under a new
// identity the old feed is archived and deleted; once the genuine branch
// arrives, exactly the rows of the fork branch are written again by the new
// identity, not those of the common prefix.
func TestArchiveAndReplay(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := store.Open(dir, store.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fs := feed.NewKVStorage(db)
	oldKey := newKey(t)
	own, err := feed.OpenLog(fs, oldKey)
	if err != nil {
		t.Fatal(err)
	}
	w := startWriter(t, db, "old", own)
	put(t, w, store.TableMemories, "c1", "common 1")
	put(t, w, store.TableMemories, "c2", "common 2")
	// The genuine branch: the same first two entries, then its own two.
	genuine, err := feed.OpenLog(feed.NewMemStorage(), oldKey)
	if err != nil {
		t.Fatal(err)
	}
	prefix, err := own.Read(0, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := genuine.Append(prefix); err != nil {
		t.Fatal(err)
	}
	gh, err := genuine.Append([][]byte{record(t, store.TableMemories, "g1"), record(t, store.TableMemories, "g2")})
	if err != nil {
		t.Fatal(err)
	}
	// The fork branch: two new rows and an edit of a common one.
	put(t, w, store.TableMemories, "f1", "fork 1")
	put(t, w, store.TableMemories, "f2", "fork 2")
	put(t, w, store.TableMemories, "c1", "common 1, edited on the fork")
	if _, err := own.MarkForked(gh); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(map[string]string{"id": "x", "content": "x"})
	_, err = w.Write(ctx, store.Mutation{Table: store.TableMemories, RowID: "x", Op: store.OpPut, Data: data})
	var fe *ForkedError
	if !errors.Is(err, feed.ErrOwnForked) || !errors.As(err, &fe) || fe.InstanceID != "old" || fe.PeerLength != 4 || fe.Length != 5 {
		t.Fatalf("write on the forked copy: %v", err)
	}
	ev, _ := own.Forked().MarshalBinary()
	k := own.Key()
	job := Job{Phase: PhaseEnrolled, OldInstanceID: "old", OldKey: hex.EncodeToString(k[:]), NewInstanceID: "new",
		Evidence: hex.EncodeToString(ev), ForkLength: 5, PeerLength: gh.Length}
	if err := db.Update(ctx, func(txn *store.Txn) error { return saveJob(txn, job) }); err != nil {
		t.Fatal(err)
	}

	// The restart under the new identity.
	newLog, err := feed.OpenLog(fs, newKey(t))
	if err != nil {
		t.Fatal(err)
	}
	reps := feed.OpenReplicas(fs, newLog.Key())
	nw := startWriter(t, db, "new", newLog)
	m := New(Config{Self: "new", DB: db, Own: newLog, Reps: reps, Writer: nw, Logger: quiet})
	if m.Forked() != nil {
		t.Fatal("the new identity is forked")
	}
	if err := m.Archive(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := reps.State(k); !errors.Is(err, feed.ErrNotFound) {
		t.Fatalf("the old feed's fork branch is still held: %v", err)
	}
	job, _, _ = m.Job()
	if job.Phase != PhaseReplaying || job.ForkLength != 5 {
		t.Fatalf("job after archive %+v", job)
	}
	sameJobStored(t, db, job)
	// Nothing is known before the genuine branch arrives.
	if done, err := m.step(ctx, job); done || err != nil {
		t.Fatalf("replayed without the genuine branch: %v %v", done, err)
	}
	// A part of the genuine branch that ends inside the common prefix is
	// not enough either.
	p, err := genuine.Proof(0, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	ges, _ := genuine.Read(0, 4)
	if _, err := reps.Apply(p, ges[:1]); err != nil {
		t.Fatal(err)
	}
	if done, err := m.step(ctx, job); done || err != nil {
		t.Fatalf("replayed with a part of the common prefix: %v %v", done, err)
	}
	p, err = genuine.Proof(1, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reps.Apply(p, ges[1:]); err != nil {
		t.Fatal(err)
	}
	if done, err := m.step(ctx, job); !done || err != nil {
		t.Fatalf("replay: %v %v", done, err)
	}
	job, _, _ = m.Job()
	if job.Phase != PhaseDone || job.CommonPrefix == nil || *job.CommonPrefix != 2 || job.Replayed != 3 || job.ForkEntries != 3 {
		t.Fatalf("job after replay %+v", job)
	}
	sameJobStored(t, db, job)
	for id, want := range map[string]bool{"f1": true, "f2": true, "c1": true, "c2": false} {
		row, err := db.Get(store.TableMemories, id)
		if err != nil {
			t.Fatal(err)
		}
		if got := row.VV["new"] > 0; got != want {
			t.Fatalf("row %s written by the new identity: %v, want %v (vv %v)", id, got, want, row.VV)
		}
	}
	if c1, _ := db.Get(store.TableMemories, "c1"); !json.Valid(c1.Data) || string(c1.Data) == "" ||
		!containsContent(c1.Data, "common 1, edited on the fork") {
		t.Fatalf("c1 replayed as %s", c1.Data)
	}
	if n := newLog.Head().Length; n != 3 {
		t.Fatalf("the new feed holds %d entries, want the 3 replayed", n)
	}
	// Done is done: a restart replays nothing again.
	if err := m.Archive(ctx); err != nil {
		t.Fatal(err)
	}
	if n := newLog.Head().Length; n != 3 {
		t.Fatalf("replayed again: %d", n)
	}
}

func containsContent(data []byte, content string) bool {
	var v struct {
		Content string `json:"content"`
	}
	return json.Unmarshal(data, &v) == nil && v.Content == content
}

// ForkVersions gives each row's last fork-branch version and the vector it
// had at the common prefix: the old instance's counter less the branch's
// writes of the row (removed when the row was made on the branch), the
// other instances' counters kept.
func TestForkVersions(t *testing.T) {
	rec := func(row string, op store.Op, vv store.VV, data string) []byte {
		b, err := json.Marshal(store.ChangeRecord{Schema: store.ChangeSchema, Type: store.ChangeType(store.TableMemories, op),
			Table: store.TableMemories, RowID: row, Op: op, Data: json.RawMessage(data), Lamport: 9, InstanceID: "old", VV: vv})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	got := ForkVersions([][]byte{
		rec("m1", store.OpUpdate, store.VV{"old": 4, "b": 2}, `{"content":"x"}`),
		{}, // cleared
		rec("m1", store.OpUpdate, store.VV{"old": 5, "b": 2}, `{"content":"y"}`),
		rec("m2", store.OpInsert, store.VV{"old": 1}, `{"content":"new"}`),
		rec("m3", store.OpDelete, store.VV{"old": 3}, `{"content":"gone"}`),
	}, "old")
	m1, m2, m3 := got[RowRef{store.TableMemories, "m1"}], got[RowRef{store.TableMemories, "m2"}], got[RowRef{store.TableMemories, "m3"}]
	if string(m1.Data) != `{"content":"y"}` || m1.Base.Compare(store.VV{"old": 3, "b": 2}) != store.Equal || m1.Deleted {
		t.Fatalf("m1: %+v", m1)
	}
	if len(m2.Base) != 0 || m2.VV.Compare(store.VV{"old": 1}) != store.Equal {
		t.Fatalf("m2: %+v", m2)
	}
	if !m3.Deleted || m3.Base.Compare(store.VV{"old": 2}) != store.Equal {
		t.Fatalf("m3: %+v", m3)
	}
	if len(got) != 3 {
		t.Fatalf("%d rows", len(got))
	}
}

// sameJobStored fails unless the store holds job (Job answers from memory).
func sameJobStored(t *testing.T, db *store.DB, job Job) {
	t.Helper()
	stored, ok, err := loadJob(db)
	if err != nil || !ok || !reflect.DeepEqual(stored, job) {
		t.Fatalf("Job answered %+v; the store holds %+v (%v, %v)", job, stored, ok, err)
	}
}
