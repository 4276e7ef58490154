package backup

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crow-sync/crow/feed"
	"github.com/crow-sync/crow/home"
	"github.com/crow-sync/crow/identity"
	"github.com/crow-sync/crow/identity/member"
	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/registry"
	"github.com/crow-sync/crow/store"
	"github.com/crow-sync/crow/sync/feeds"
)

const pass = "correct horse battery staple"

// testWorkFactor keeps scrypt quick in tests (production: DefaultWorkFactor).
const testWorkFactor = 10

var noGuard = store.Options{MinFree: -1}

// source is a data directory with a database of n notes written through the
// real write path (rows and the own feed in one transaction), and the
// registry row of a home at homeURL.
type source struct {
	dir  string
	h    *home.Home
	seed identity.Seed
	n    int
}

// filler makes a note the size of a typical memory (~500 bytes).
var filler = strings.Repeat("lorem ipsum ", 40)

func newSource(t testing.TB, n int) *source {
	t.Helper()
	seed, err := identity.NewSeed(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "src")
	if _, err := home.Init(dir, "laptop", seed, home.RoleHome); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, home.ConfigName), []byte("listen = \"127.0.0.1:3101\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h, err := home.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(filepath.Join(dir, home.DBName), noGuard)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	own, err := feed.OpenLog(feed.NewKVStorage(db), h.InstanceKey())
	if err != nil {
		t.Fatal(err)
	}
	w, err := store.NewWriter(db, store.WriterOptions{InstanceID: h.InstanceID, Journal: feeds.NewChanges().Journal(own)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Serve(ctx) }()
	for i := 0; i < n; i += 100 {
		var muts []store.Mutation
		for j := i; j < min(n, i+100); j++ {
			muts = append(muts, store.Mutation{Table: store.TableNotes, RowID: fmt.Sprintf("n%03d", j), Op: store.OpInsert,
				Data: json.RawMessage(fmt.Sprintf(`{"text":"note %d: %s"}`, j, filler))})
		}
		if _, err := w.Write(ctx, muts...); err != nil {
			t.Fatal(err)
		}
	}
	row, _ := json.Marshal(registry.Row{ID: h.InstanceID, Name: "laptop", Role: registry.RoleHome, GatewayURL: "http://127.0.0.1:3101"})
	if _, err := w.Write(ctx, store.Mutation{Table: store.TableCrowInstances, RowID: h.InstanceID, Op: store.OpInsert, Data: row}); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-done
	if err := db.SetConsumerPos(memory.NumbererConsumer, 3); err != nil { // as on home
		t.Fatal(err)
	}
	return &source{dir: dir, h: h, seed: seed, n: n}
}

// archive is a sealed archive of s (taken with the database closed: the
// consistency under writes is store's TestSnapshotConsistentUnderWrites).
func (s *source) archive(t testing.TB, c Contents) []byte {
	t.Helper()
	db, err := store.Open(filepath.Join(s.dir, home.DBName), noGuard)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var snap bytes.Buffer
	if _, err := db.Snapshot(&snap, registry.LocalOnlyKey); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	enc, err := Seal(&out, []byte(pass), testWorkFactor)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Write(enc, c, &snap); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func (s *source) contents(t testing.TB) Contents {
	t.Helper()
	c, err := Collect(s.h, "test", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func restore(archive []byte, passphrase, dir string, opts Options) (Result, error) {
	plain, err := Open(bytes.NewReader(archive), []byte(passphrase))
	if err != nil {
		return Result{}, err
	}
	opts.Store = noGuard
	return Restore(context.Background(), plain, dir, opts)
}

// untouched checks that a failed restore left neither dir nor a staging
// directory behind.
func untouched(t *testing.T, dir string) {
	t.Helper()
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists after a failed restore", dir)
	}
	ents, _ := os.ReadDir(filepath.Dir(dir))
	for _, e := range ents {
		t.Errorf("left behind: %s", e.Name())
	}
}

func TestRoundTripWithSeed(t *testing.T) {
	s := newSource(t, 40)
	arch := s.archive(t, s.contents(t))
	if bytes.Contains(arch, []byte("note 7")) || bytes.Contains(arch, []byte(s.h.InstanceID)) {
		t.Fatal("the archive holds plaintext")
	}
	dir := filepath.Join(t.TempDir(), "restored")
	res, err := restore(arch, pass, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.InstanceID == s.h.InstanceID || res.Old.InstanceID != s.h.InstanceID || !res.Seed || res.Role != home.RoleSatellite ||
		res.Name != "laptop" || res.HomeURL != "http://127.0.0.1:3101" {
		t.Fatalf("result %+v", res)
	}
	h, err := home.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if h.InstanceID != res.InstanceID || !h.HasSeed() || h.Seed() != s.seed || h.Role != home.RoleSatellite {
		t.Fatalf("restored home: %+v", h.Info)
	}
	if e, ok := h.PendingJoin(); !ok || e.HomeURL != "http://127.0.0.1:3101" || e.HomeID != s.h.InstanceID {
		t.Fatalf("pending join %+v, %v", e, ok)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, home.ConfigName)); string(b) != "listen = \"127.0.0.1:3101\"\n" {
		t.Fatalf("config.toml = %q", b)
	}
	old, _ := os.ReadFile(filepath.Join(s.dir, home.APIKeyName))
	if key, _ := os.ReadFile(filepath.Join(dir, home.APIKeyName)); len(key) == 0 || bytes.Equal(key, old) {
		t.Fatal("the restored instance has no api-key of its own")
	}
	db, err := store.Open(h.DBDir(), noGuard)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows := 0
	var applied uint64
	var oldKey feed.PublicKey
	copy(oldKey[:], s.h.PublicKey)
	err = db.View(func(txn *store.Txn) error {
		if err := txn.ScanRows(store.TableNotes, func(*store.Row) error { rows++; return nil }); err != nil {
			return err
		}
		applied, err = txn.Applied(oldKey[:])
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := db.ConsumerPos(memory.NumbererConsumer); ok || err != nil {
		t.Fatalf("home's numberer position was restored (%v)", err)
	}
	if rows != s.n {
		t.Fatalf("%d notes restored, want %d", rows, s.n)
	}
	st, err := feed.OpenReplicas(feed.NewKVStorage(db), feed.PublicKey(h.PublicKey)).State(oldKey)
	if err != nil || st.Length != uint64(s.n+1) || applied != st.Length {
		t.Fatalf("old feed: length %d (%v), applied %d; want %d both", st.Length, err, applied, s.n+1)
	}
}

func TestRestoreByInvite(t *testing.T) {
	s := newSource(t, 5)
	c := s.contents(t)
	c.Manifest.Seed, c.Seed = false, nil // as a satellite that joined by invitation
	arch := s.archive(t, c)

	dir := filepath.Join(t.TempDir(), "restored")
	if _, err := restore(arch, pass, dir, Options{}); !errors.Is(err, ErrNeedsInvite) {
		t.Fatalf("restore without --join: %v, want ErrNeedsInvite", err)
	}
	untouched(t, dir)

	enroll := func(_ context.Context, name string) (home.Joined, error) {
		id, err := home.NewInstanceID()
		if err != nil {
			return home.Joined{}, err
		}
		pub, key, _ := ed25519.GenerateKey(rand.Reader)
		cert, err := member.Issue(s.seed.RootKey(), member.Fields{CrowID: s.seed.CrowID(), InstanceID: id, PublicKey: pub,
			Role: member.RoleSatellite, Name: name, IssuedAt: time.Now()})
		return home.Joined{Name: name, InstanceID: id, Key: key, Certificate: cert, RootPublicKey: s.seed.RootPublicKey(),
			HomeURL: "http://127.0.0.1:3101"}, err
	}
	res, err := restore(arch, pass, dir, Options{Enroll: enroll, Name: "laptop-2"})
	if err != nil {
		t.Fatal(err)
	}
	h, err := home.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if h.HasSeed() || h.InstanceID != res.InstanceID || h.Name != "laptop-2" || res.Seed {
		t.Fatalf("restored %+v, result %+v", h.Info, res)
	}

	// A failing enrollment leaves nothing.
	dir2 := filepath.Join(t.TempDir(), "restored")
	refused := errors.New("home refused the join")
	_, err = restore(arch, pass, dir2, Options{Enroll: func(context.Context, string) (home.Joined, error) { return home.Joined{}, refused }})
	if !errors.Is(err, refused) {
		t.Fatalf("err = %v", err)
	}
	untouched(t, dir2)
}

func TestRestoreRefusesBadArchives(t *testing.T) {
	s := newSource(t, 300)
	arch := s.archive(t, s.contents(t))
	flip := func(at int) []byte {
		b := append([]byte(nil), arch...)
		b[at] ^= 0x01
		return b
	}
	for _, tc := range []struct {
		name    string
		archive []byte
		pass    string
		want    error
	}{
		{"wrong passphrase", arch, "not the passphrase", ErrWrongPassphrase},
		{"empty passphrase", arch, "", ErrWrongPassphrase},
		{"not an archive", []byte("hello, this is not an age file\n"), pass, ErrNotArchive},
		{"truncated at the end", arch[:len(arch)-1], pass, ErrDamaged},
		{"truncated in the middle", arch[:len(arch)/2], pass, ErrDamaged},
		{"flipped byte in the middle", flip(len(arch) / 2), pass, ErrDamaged},
		{"flipped byte at the end", flip(len(arch) - 5), pass, ErrDamaged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "restored")
			if _, err := restore(tc.archive, tc.pass, dir, Options{}); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			untouched(t, dir)
		})
	}
}

func TestRestoreRefusesNonEmptyTarget(t *testing.T) {
	s := newSource(t, 3)
	arch := s.archive(t, s.contents(t))
	dir := t.TempDir()
	keep := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(keep, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := restore(arch, pass, dir, Options{}); !errors.Is(err, home.ErrNotEmpty) {
		t.Fatalf("err = %v, want ErrNotEmpty", err)
	}
	ents, _ := os.ReadDir(dir)
	if b, _ := os.ReadFile(keep); len(ents) != 1 || string(b) != "mine" {
		t.Fatalf("the target changed: %d entries", len(ents))
	}
	// The source itself (initialised) is refused too.
	if _, err := restore(arch, pass, s.dir, Options{}); !errors.Is(err, home.ErrNotEmpty) {
		t.Fatalf("restore over the source: %v, want ErrNotEmpty", err)
	}
	// An empty existing directory is fine.
	empty := t.TempDir()
	if _, err := restore(arch, pass, empty, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := home.Load(empty); err != nil {
		t.Fatal(err)
	}
}

// A snapshot stream that breaks midway (the daemon failed; HTTP reports
// io.ErrUnexpectedEOF) fails the backup instead of ending it.
func TestWriteFailsOnACutSnapshot(t *testing.T) {
	s := newSource(t, 3)
	cut := io.MultiReader(bytes.NewReader(bytes.Repeat([]byte("x"), chunkSize+10)), errReader{io.ErrUnexpectedEOF})
	if _, err := Write(io.Discard, s.contents(t), cut); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v, want the stream's io.ErrUnexpectedEOF", err)
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
