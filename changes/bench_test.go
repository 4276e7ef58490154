package changes

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/crow-sync/crow/feed"
	"github.com/crow-sync/crow/store"
)

// benchFeeds returns a badger store holding one other instance's feed of n
// memory inserts (10 projects), and the replicas view of it.
func benchFeeds(b *testing.B, n int) (*store.DB, *feed.Replicas) {
	b.Helper()
	db, err := store.Open(filepath.Join(b.TempDir(), "db"), store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	_, other, _ := ed25519.GenerateKey(nil)
	log, err := feed.OpenLog(feed.NewKVStorage(db), other)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < n; i += 1000 {
		var batch [][]byte
		for j := i; j < min(i+1000, n); j++ {
			data, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("m%08d", j), "project": fmt.Sprintf("p%d", j%10),
				"content": fmt.Sprintf("memory number %d, a sentence or two of what was decided and why", j)})
			rec, _ := json.Marshal(store.ChangeRecord{Schema: store.ChangeSchema, Type: "memory_insert", Table: store.TableMemories,
				RowID: fmt.Sprintf("m%08d", j), Op: store.OpInsert, Data: data, Lamport: uint64(j + 1), InstanceID: "other",
				Timestamp: 1_800_000_000 + int64(j), VV: store.VV{"other": uint64(j + 1)}})
			batch = append(batch, rec)
		}
		if _, err := log.Append(batch); err != nil {
			b.Fatal(err)
		}
	}
	_, self, _ := ed25519.GenerateKey(nil)
	var selfKey feed.PublicKey
	copy(selfKey[:], self.Public().(ed25519.PublicKey))
	return db, feed.OpenReplicas(feed.NewKVStorage(db), selfKey)
}

// BenchmarkSince: a changes call from the start over another instance's feed
// of N memory inserts in badger (N = $CROW_CHANGES_N, default 10000): read,
// parse and fold every entry, list the newest 50.
func BenchmarkSince(b *testing.B) {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("CROW_CHANGES_N")); err == nil && v > 0 {
		n = v
	}
	db, reps := benchFeeds(b, n)
	svc := New(Options{DB: db, Feeds: reps, Self: "self"})
	b.ResetTimer()
	for b.Loop() {
		rep, _, err := svc.Since(context.Background(), Cursor{}, 50)
		if err != nil || rep.Total != n || len(rep.Projects) != 10 {
			b.Fatalf("Since: total %d projects %d err %v", rep.Total, len(rep.Projects), err)
		}
	}
	b.ReportMetric(float64(n), "entries")
}
