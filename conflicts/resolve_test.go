package conflicts_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/crow-sync/crow/conflicts"
	"github.com/crow-sync/crow/store"
	"github.com/crow-sync/crow/store/storetest"
)

// seed writes a row and records a conflict whose winner is that row.
func seed(t *testing.T, env *storetest.Env, st *conflicts.Store, rowID string) *conflicts.Conflict {
	t.Helper()
	ctx := context.Background()
	rows, err := env.Writer.Write(ctx, store.Mutation{Table: store.TableNotes, RowID: rowID, Op: store.OpPut, Data: []byte(`{"v":"live"}`)})
	if err != nil {
		t.Fatal(err)
	}
	live := rows[0]
	c, err := conflicts.New(store.TableNotes, rowID,
		conflicts.Version{InstanceID: live.InstanceID, Lamport: live.LamportTS, VV: live.VV, Data: live.Data},
		conflicts.Version{InstanceID: "inst-other", Lamport: 1, VV: store.VV{"inst-other": 1}, Data: []byte(`{"v":"lost"}`)},
		conflicts.OpUpdate)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.DB.Update(ctx, func(txn *store.Txn) error { _, err := st.PutTxn(txn, c); return err }); err != nil {
		t.Fatal(err)
	}
	return c
}

// Keep is idempotent on a kept conflict, and refuses one resolved by a
// restore, saying by whom and when.
func TestKeepAfterRestoreSaysSo(t *testing.T) {
	env := storetest.Start(t, t.TempDir())
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	st := conflicts.NewStore(env.DB, func() time.Time { return now })
	rec := conflicts.NewRecovery(st, env.Writer)
	ctx := context.Background()

	kept := seed(t, env, st, "n1")
	first, err := rec.Keep(ctx, kept.ID)
	if err != nil || !first.Resolved || first.Resolution != conflicts.ActionKeep {
		t.Fatalf("keep = %+v, %v", first, err)
	}
	again, err := rec.Keep(ctx, kept.ID)
	if err != nil || !again.ResolvedAt.Equal(*first.ResolvedAt) {
		t.Fatalf("keep again = %+v, %v", again, err)
	}

	restored := seed(t, env, st, "n2")
	if _, _, err := rec.Restore(ctx, restored.ID); err != nil {
		t.Fatal(err)
	}
	_, err = rec.Keep(ctx, restored.ID)
	if !errors.Is(err, conflicts.ErrResolvedByRestore) || !errors.Is(err, conflicts.ErrResolved) {
		t.Fatalf("keep after restore = %v, want ErrResolvedByRestore", err)
	}
	want := "already resolved by restore on " + env.Writer.InstanceID() + " at 2026-03-04T05:06:07Z; nothing to keep"
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("message %q lacks %q", err, want)
	}
	// The row is still the restored version.
	row, err := env.DB.Get(store.TableNotes, "n2")
	if err != nil {
		t.Fatal(err)
	}
	var d struct{ V string }
	if err := json.Unmarshal(row.Data, &d); err != nil || d.V != "lost" {
		t.Fatalf("row after refused keep: %s", row.Data)
	}
}
