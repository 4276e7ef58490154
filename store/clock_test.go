package store

import (
	"context"
	"testing"
	"time"

	"github.com/crow-sync/crow/clock"
)

// The store stamps rows and sync_state from Options.Clock.
func TestClockStamps(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 700_000_000, time.UTC))
	db, err := Open("", Options{InMemory: true, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	w := startWriter(t, db, &fakeJournal{})
	ctx := context.Background()
	if _, err := w.Write(ctx, ins("n1", `{"text":"a"}`)); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)
	if _, err := w.Write(ctx, ins("n2", `{"text":"b"}`)); err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Time{
		"n1": time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), // whole seconds
		"n2": time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC),
	}
	for id, at := range want {
		r, err := db.Get(TableNotes, id)
		if err != nil || !r.UpdatedAt.Equal(at) {
			t.Errorf("%s updated_at %v (%v), want %v", id, r.UpdatedAt, err, at)
		}
	}
	if st, err := db.SyncState(); err != nil || !st.UpdatedAt.Equal(clk.Now()) {
		t.Errorf("sync state updated_at %v (%v), want %v", st.UpdatedAt, err, clk.Now())
	}
	if !db.Now().Equal(clk.Now()) {
		t.Errorf("db.Now %v, want the fake's %v", db.Now(), clk.Now())
	}
}
