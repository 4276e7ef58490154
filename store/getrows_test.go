package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestGetRowsMatchesGetRow reads rows spread over badger's tables and memtable
// (live, updated, deleted, missing; neighbours, gaps, scattered, another
// table's keys around them) with GetRows and checks every one against GetRow.
func TestGetRowsMatchesGetRow(t *testing.T) {
	db, err := Open(t.TempDir(), Options{MemTableSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	w := startWriter(t, db, &fakeJournal{})
	ctx := context.Background()
	pad := string(bytes.Repeat([]byte("memory text "), 25))
	const n = 6000
	id := func(i int) string { return fmt.Sprintf("r%06d", 2*i) } // odd numbers: never written
	write := func(muts []Mutation) {
		t.Helper()
		if _, err := w.Write(ctx, muts...); err != nil {
			t.Fatal(err)
		}
	}
	for lo := 0; lo < n; lo += 100 {
		var muts []Mutation
		for i := lo; i < lo+100; i++ {
			muts = append(muts, ins(id(i), fmt.Sprintf(`{"i":%d,"t":%q}`, i, pad)))
			// Rows of the next table in key order, with the same ids.
			muts = append(muts, Mutation{Table: TableSettings, RowID: id(i), Op: OpInsert, Data: []byte(`{"s":1}`)})
		}
		write(muts)
	}
	if err := db.flushMemtables(ctx); err != nil {
		t.Fatal(err)
	}
	// Then updates and deletes that stay in the memtable over the tables' versions.
	for i := 0; i < n; i += 97 {
		write([]Mutation{{Table: TableNotes, RowID: id(i), Op: OpUpdate, Data: []byte(fmt.Sprintf(`{"i":%d,"v":2}`, i))}})
	}
	for i := 5; i < n; i += 131 {
		write([]Mutation{{Table: TableNotes, RowID: id(i), Op: OpDelete}})
	}

	rng := rand.New(rand.NewPCG(1, 2))
	sets := map[string][]string{
		"empty":     nil,
		"one":       {id(7)},
		"short":     {id(1), id(2), fmt.Sprintf("r%06d", 7), id(3000), id(n - 1)},
		"missing":   {"a", "r", fmt.Sprintf("r%06d", 1), fmt.Sprintf("r%06d", 3), "zzz"},
		"edges":     {id(0), id(n - 1), "zzzz"},
		"all":       nil,
		"with-odds": nil,
		"gaps":      nil,
		"scattered": nil,
	}
	for i := range n {
		sets["all"] = append(sets["all"], id(i))
		sets["with-odds"] = append(sets["with-odds"], id(i), fmt.Sprintf("r%06d", 2*i+1))
		if i%200 < 40 { // runs of neighbours, then gaps longer than the walk
			sets["gaps"] = append(sets["gaps"], id(i))
		}
	}
	for range 200 {
		sets["scattered"] = append(sets["scattered"], id(rng.IntN(n)))
	}
	sets["scattered"] = append(sets["scattered"], "a", "zzz")
	slices.Sort(sets["scattered"])
	sets["scattered"] = slices.Compact(sets["scattered"])
	slices.Sort(sets["with-odds"])

	for name, ids := range sets {
		t.Run(name, func(t *testing.T) {
			err := db.View(func(txn *Txn) error {
				next := 0
				found := 0
				err := txn.GetRows(TableNotes, ids, func(i int, got *Row) error {
					if i != next {
						t.Fatalf("fn called for index %d, want %d", i, next)
					}
					next++
					want, err := getRow(txn.txn, TableNotes, ids[i])
					if errors.Is(err, ErrNotFound) {
						want = nil
					} else if err != nil {
						return err
					}
					switch {
					case (got == nil) != (want == nil):
						t.Errorf("%s: GetRows gave %v, GetRow %v", ids[i], got, want)
					case got != nil:
						found++
						if got.RowID != want.RowID || got.Table != want.Table || !bytes.Equal(got.Data, want.Data) ||
							got.Deleted != want.Deleted || got.LamportTS != want.LamportTS || got.VV.Compare(want.VV) != Equal {
							t.Errorf("%s: GetRows gave %+v, GetRow %+v", ids[i], got, want)
						}
					}
					return nil
				})
				if next != len(ids) {
					t.Errorf("fn called %d times for %d ids", next, len(ids))
				}
				if name == "all" && found != n {
					t.Errorf("found %d of %d rows", found, n)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}

	t.Run("refused", func(t *testing.T) {
		for _, ids := range [][]string{{id(2), id(1)}, {id(1), id(1)}} {
			err := db.View(func(txn *Txn) error {
				return txn.GetRows(TableNotes, ids, func(int, *Row) error {
					t.Fatalf("fn called for %v", ids)
					return nil
				})
			})
			if err == nil {
				t.Errorf("GetRows(%v) = nil, want an error", ids)
			}
		}
		if err := db.View(func(txn *Txn) error { return txn.GetRows("nope", nil, nil) }); !errors.Is(err, ErrInvalidTable) {
			t.Errorf("GetRows of an unknown table: %v", err)
		}
	})

	t.Run("stop", func(t *testing.T) {
		calls := 0
		err := db.View(func(txn *Txn) error {
			return txn.GetRows(TableNotes, sets["all"], func(i int, _ *Row) error {
				calls++
				if i == 99 {
					return ErrStop
				}
				return nil
			})
		})
		if err != nil || calls != 100 {
			t.Errorf("stopped at the 100th row: err %v, %d calls", err, calls)
		}
	})
}

// BenchmarkGetRows reads 5,000 neighbouring rows of 50,000 held in badger's
// tables (a search indexer's batch after a first sync), one GetRow each or with
// one GetRows.
func BenchmarkGetRows(b *testing.B) {
	db, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	w, err := NewWriter(db, WriterOptions{InstanceID: "inst-a", Journal: &fakeJournal{}})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Serve(ctx) }()
	defer func() { cancel(); <-done }()
	pad := string(bytes.Repeat([]byte("memory text "), 21))
	var ids []string
	for lo := 0; lo < 50_000; lo += 1000 {
		var muts []Mutation
		for i := lo; i < lo+1000; i++ {
			id := fmt.Sprintf("01M984JG29HQ4SPVGG%08d", i)
			ids = append(ids, id)
			muts = append(muts, ins(id, fmt.Sprintf(`{"i":%d,"t":%q}`, i, pad)))
		}
		if _, err := w.Write(ctx, muts...); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.flushMemtables(ctx); err != nil {
		b.Fatal(err)
	}
	batch := ids[20_000:25_000]
	b.Run("GetRow", func(b *testing.B) {
		for b.Loop() {
			db.View(func(txn *Txn) error {
				for _, id := range batch {
					if _, err := txn.GetRow(TableNotes, id); err != nil {
						b.Fatal(err)
					}
				}
				return nil
			})
		}
	})
	b.Run("GetRows", func(b *testing.B) {
		for b.Loop() {
			db.View(func(txn *Txn) error {
				return txn.GetRows(TableNotes, batch, func(_ int, r *Row) error {
					if r == nil {
						b.Fatal("row missing")
					}
					return nil
				})
			})
		}
	})
}
