package backup

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/crow-sync/crow/home"
	"github.com/crow-sync/crow/registry"
	"github.com/crow-sync/crow/store"
)

// BenchmarkBackupRestore measures a backup (snapshot of an open store,
// sealed with the production scrypt work factor) and its restore, for a store
// of CROW_BACKUP_N notes of ~500 bytes (default 1000), each written with its
// feed entry:
//
//	CROW_BACKUP_N=10000 go test ./backup -run '^$' -bench BackupRestore -benchtime 3x
func BenchmarkBackupRestore(b *testing.B) {
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("CROW_BACKUP_N")); err == nil && v > 0 {
		n = v
	}
	s := newSource(b, n)
	c := s.contents(b)
	db, err := store.Open(filepath.Join(s.dir, home.DBName), noGuard)
	if err != nil {
		b.Fatal(err)
	}
	var archive bytes.Buffer
	var backupT, restoreT time.Duration
	b.ResetTimer()
	for range b.N {
		archive.Reset()
		start := time.Now()
		enc, err := Seal(&archive, []byte(pass), DefaultWorkFactor)
		if err != nil {
			b.Fatal(err)
		}
		pr, pw := io.Pipe()
		go func() {
			_, err := db.Snapshot(pw, registry.LocalOnlyKey)
			pw.CloseWithError(err)
		}()
		if _, err := Write(enc, c, pr); err != nil {
			b.Fatal(err)
		}
		if err := enc.Close(); err != nil {
			b.Fatal(err)
		}
		backupT += time.Since(start)

		start = time.Now()
		plain, err := Open(bytes.NewReader(archive.Bytes()), []byte(pass))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Restore(context.Background(), plain, filepath.Join(b.TempDir(), "r"), Options{Store: noGuard}); err != nil {
			b.Fatal(err)
		}
		restoreT += time.Since(start)
	}
	b.StopTimer()
	db.Close()
	b.ReportMetric(float64(n), "notes")
	b.ReportMetric(float64(archive.Len()), "archive-bytes")
	b.ReportMetric(backupT.Seconds()/float64(b.N), "backup-s")
	b.ReportMetric(restoreT.Seconds()/float64(b.N), "restore-s")
}
