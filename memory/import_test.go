package memory

import (
	"context"
	"crypto/sha256"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestImportKeepsIDsTimesAndSkipsWhatIsHere(t *testing.T) {
	ctx := context.Background()
	svc, _ := newService(t)
	live, err := svc.Add(ctx, CreateInput{Content: "already here"})
	if err != nil {
		t.Fatal(err)
	}
	gone, _ := svc.Add(ctx, CreateInput{Content: "deleted here"})
	if err := svc.Delete(ctx, gone.ID); err != nil {
		t.Fatal(err)
	}
	forgotten, _ := svc.Add(ctx, CreateInput{Content: "forgotten here"})
	if _, err := svc.Forget(ctx, forgotten.ID); err != nil {
		t.Fatal(err)
	}
	created := time.Date(2025, 3, 4, 5, 6, 7, 891e6, time.UTC)
	newID := DerivedID(created, sha256.Sum256([]byte("new")))
	recs := []ImportRecord{
		{ID: newID, CreateInput: CreateInput{Content: "new one", Project: "p", Category: "c", Importance: ptr(9), Tags: []string{"a", "a", "b"}, Source: SourceMCP},
			CreatedAt: created, UpdatedAt: created.Add(time.Hour)},
		{ID: live.ID, CreateInput: CreateInput{Content: "other text, same id"}},
		{ID: gone.ID, CreateInput: CreateInput{Content: "deleted here"}},
		{ID: forgotten.ID, CreateInput: CreateInput{Content: "forgotten here"}},
		{ID: newID, CreateInput: CreateInput{Content: "new one"}}, // twice in a batch
	}
	want := []ImportOutcome{Imported, Duplicate, Refused, Refused, Duplicate}

	outs, err := svc.Import(ctx, recs, true)
	if err != nil || !slices.Equal(outs, want) {
		t.Fatalf("dry run: %v, %v; want %v", outs, err, want)
	}
	if _, err := svc.Get(ctx, newID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a dry run wrote: %v", err)
	}
	outs, err = svc.Import(ctx, recs, false)
	if err != nil || !slices.Equal(outs, want) {
		t.Fatalf("import: %v, %v; want %v", outs, err, want)
	}
	m, err := svc.Get(ctx, newID)
	if err != nil {
		t.Fatal(err)
	}
	if m.Content != "new one" || m.Project != "p" || m.Category != "c" || m.Importance != 9 || strings.Join(m.Tags, ",") != "a,b" ||
		m.Source != SourceMCP || !m.CreatedAt.Equal(created) || !m.UpdatedAt.Equal(created.Add(time.Hour)) || m.ContentHash != ContentHash("new one") {
		t.Fatalf("imported %+v", m)
	}
	if m, _ := svc.Get(ctx, live.ID); m.Content != "already here" {
		t.Fatalf("an import changed a live memory: %q", m.Content)
	}
	if _, err := svc.Get(ctx, gone.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("an import revived a deleted memory: %v", err)
	}
	// Again: nothing new.
	outs, err = svc.Import(ctx, recs[:1], false)
	if err != nil || outs[0] != Duplicate {
		t.Fatalf("re-import: %v %v", outs, err)
	}
	c, _ := svc.Count(ctx)
	if c.Total != 2 {
		t.Fatalf("%d live memories, want 2", c.Total)
	}
}

func TestImportOneBadRecordWritesNothing(t *testing.T) {
	ctx := context.Background()
	svc, _ := newService(t)
	ok := DerivedID(time.Time{}, sha256.Sum256([]byte("ok")))
	cases := []struct {
		rec   ImportRecord
		field string
	}{
		{ImportRecord{ID: DerivedID(time.Time{}, sha256.Sum256([]byte("x"))), CreateInput: CreateInput{Content: strings.Repeat("x", MaxContentBytes+1)}}, "content"},
		{ImportRecord{ID: "not-an-id", CreateInput: CreateInput{Content: "x"}}, "id"},
		{ImportRecord{ID: "81JDQ7Z3K5M8N9P0Q1R2S3T4V5", CreateInput: CreateInput{Content: "x"}}, "id"}, // more than 128 bits
		{ImportRecord{ID: DerivedID(time.Time{}, sha256.Sum256([]byte("y"))), CreateInput: CreateInput{Content: "x", Importance: ptr(11)}}, "importance"},
		{ImportRecord{ID: DerivedID(time.Time{}, sha256.Sum256([]byte("z"))), CreateInput: CreateInput{Content: "x", Source: "web"}}, "source"},
	}
	for _, c := range cases {
		_, err := svc.Import(ctx, []ImportRecord{{ID: ok, CreateInput: CreateInput{Content: "fine"}}, c.rec}, false)
		var ie *ImportError
		var ve *ValidationError
		if !errors.As(err, &ie) || ie.Index != 1 || !errors.As(err, &ve) || ve.Field != c.field {
			t.Errorf("%s: %v; want record 1 refused on %s", c.field, err, c.field)
		}
	}
	if _, err := svc.Get(ctx, ok); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a refused batch wrote its good record: %v", err)
	}
	if _, err := svc.Import(ctx, make([]ImportRecord, MaxImportBatch+1), false); err == nil {
		t.Fatal("an oversized batch was taken")
	}
}

func TestDerivedIDsSortByTime(t *testing.T) {
	a := DerivedID(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), sha256.Sum256([]byte("z")))
	b := DerivedID(time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC), sha256.Sum256([]byte("a")))
	if !ValidID(a) || !ValidID(b) || a >= b || !ValidID(newID(time.Now())) {
		t.Fatalf("%s %s", a, b)
	}
	if DerivedID(time.Time{}, sha256.Sum256([]byte("a"))) != DerivedID(time.Time{}, sha256.Sum256([]byte("a"))) {
		t.Fatal("not deterministic")
	}
}
