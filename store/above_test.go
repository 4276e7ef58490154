package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

func aboveRow(id string, n uint64) *Row {
	return &Row{RowID: id, Table: TableMemories, Data: json.RawMessage(fmt.Sprintf(`{"content":"m %s"}`, id)), VV: VV{"b": n}}
}

// Reads with known-absent bounds answer what lookups answer, for rows and raw keys held
// below, between and above what a transaction writes and deletes, including keys whose
// next byte after the prefix is 0xFF (never answered from the bound); and most reads above
// the held keys are answered without a lookup.
func TestExpectNewKeysReadsAsLookups(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	db := openTest(t, t.TempDir())
	defer db.Close()
	ctx := context.Background()
	rawPrefix := []byte("n/test/")
	id := func() string {
		if rng.IntN(20) == 0 {
			return "\xff" + fmt.Sprint(rng.IntN(50))
		}
		return fmt.Sprintf("%04d", rng.IntN(400))
	}
	// Held: rows and raw keys with ids below 0200, some deleted.
	err := db.Update(ctx, func(txn *Txn) error {
		for i := range 120 {
			k := fmt.Sprintf("%04d", rng.IntN(200))
			if _, err := txn.PutRow(aboveRow(k, uint64(i+1))); err != nil {
				return err
			}
			if err := txn.Set(append(rawPrefix, k...), []byte(k)); err != nil {
				return err
			}
		}
		if _, err := txn.PutRow(aboveRow("\xff9", 1000)); err != nil {
			return err
		}
		return txn.Set(append(rawPrefix, "\xff9"...), []byte("ff"))
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(ctx, func(txn *Txn) error {
		for i := range 40 {
			k := fmt.Sprintf("%04d", rng.IntN(200))
			if i%2 == 0 {
				if err := txn.Delete(append(rawPrefix, k...)); err != nil {
					return err
				}
				continue
			}
			r := aboveRow(k, uint64(2000+i))
			r.Deleted = true
			if _, err := txn.PutRow(r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	answered := 0
	for round := range 30 {
		ops := make([]int, 200)
		keys := make([]string, 200)
		for i := range ops {
			ops[i], keys[i] = rng.IntN(4), id()
		}
		type result struct{ row, raw string }
		run := func(fast bool) ([]result, error) {
			var out []result
			err := db.Update(ctx, func(txn *Txn) error {
				out = out[:0]
				if fast {
					txn.ExpectNewKeys()
				}
				for i, op := range ops {
					k := keys[i]
					switch op {
					case 0: // read the row
						r, err := txn.GetRow(TableMemories, k)
						res := result{}
						switch {
						case errors.Is(err, ErrNotFound):
							res.row = "absent"
						case err != nil:
							return err
						default:
							res.row = fmt.Sprintf("%s deleted=%v %s", r.RowID, r.Deleted, r.Data)
						}
						out = append(out, res)
					case 1: // read the raw key
						v, ok, err := txn.GetIn(rawPrefix, append(rawPrefix, k...))
						if err != nil {
							return err
						}
						out = append(out, result{raw: fmt.Sprintf("%v %s", ok, v)})
					case 2: // write the row
						if _, err := txn.PutRow(aboveRow(k, uint64(10000+i))); err != nil {
							return err
						}
					case 3: // write or delete the raw key
						var err error
						if i%3 == 0 {
							err = txn.Delete(append(rawPrefix, k...))
						} else {
							err = txn.Set(append(rawPrefix, k...), []byte(k))
						}
						if err != nil {
							return err
						}
					}
				}
				if fast {
					answered += txn.above.answered
				}
				return errStopTest // roll back: both runs start from the same store
			})
			if errors.Is(err, errStopTest) {
				err = nil
			}
			return out, err
		}
		want, err := run(false)
		if err != nil {
			t.Fatal(err)
		}
		got, err := run(true)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("round %d, read %d: %+v with known-absent reads, %+v with lookups", round, i, got[i], want[i])
			}
		}
	}
	if answered == 0 {
		t.Fatal("no read answered without a lookup")
	}
	t.Logf("%d reads answered without a lookup", answered)
}

var errStopTest = errors.New("roll back")

// A first sync's shape: each new row (ids ascending, above every row held) is read, then
// written with its per-row state: every read is answered from the bounds, and the rows and
// states read back as written.
func TestExpectNewKeysFirstSync(t *testing.T) {
	db := openTest(t, t.TempDir())
	defer db.Close()
	ctx := context.Background()
	if err := db.Update(ctx, func(txn *Txn) error {
		_, err := txn.PutRow(aboveRow("a0500", 1))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	const n = 300
	state := []byte("n/state/")
	err := db.Update(ctx, func(txn *Txn) error {
		txn.ExpectNewKeys()
		b, err := txn.BeginBatch()
		if err != nil {
			return err
		}
		for i := range n {
			id := fmt.Sprintf("b%04d", i)
			if _, err := txn.GetRow(TableMemories, id); !errors.Is(err, ErrNotFound) {
				return fmt.Errorf("row %s: %v", id, err)
			}
			if _, ok, err := txn.GetIn(state, append(state, id...)); err != nil || ok {
				return fmt.Errorf("state %s: %v %v", id, ok, err)
			}
			if _, err := b.PutRow(aboveRow(id, uint64(i+2))); err != nil {
				return err
			}
			if err := txn.Set(append(state, id...), []byte(id)); err != nil {
				return err
			}
		}
		if txn.above.answered != 2*n {
			return fmt.Errorf("%d of %d reads answered without a lookup", txn.above.answered, 2*n)
		}
		// Held and written keys are looked up, and found.
		for _, id := range []string{"a0500", "b0000", fmt.Sprintf("b%04d", n-1)} {
			if _, err := txn.GetRow(TableMemories, id); err != nil {
				return fmt.Errorf("row %s: %v", id, err)
			}
		}
		if v, ok, err := txn.GetIn(state, append(state, "b0007"...)); err != nil || !ok || string(v) != "b0007" {
			return fmt.Errorf("state b0007: %q %v %v", v, ok, err)
		}
		return b.Flush()
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err := db.CountRows(TableMemories)
	if err != nil {
		t.Fatal(err)
	}
	if c.Live != n+1 {
		t.Fatalf("%d live rows counted, want %d", c.Live, n+1)
	}
}

// A read answered from the bound is still a read: a transaction that commits the key
// after it began makes its commit conflict, as a lookup would.
func TestExpectNewKeysStillConflicts(t *testing.T) {
	db := openTest(t, t.TempDir())
	defer db.Close()
	ctx := context.Background()
	if err := db.Update(ctx, func(txn *Txn) error {
		if _, err := txn.PutRow(aboveRow("0001", 1)); err != nil {
			return err
		}
		return txn.Set([]byte("n/test/0001"), []byte("x"))
	}); err != nil {
		t.Fatal(err)
	}
	for _, raw := range []bool{false, true} {
		a := &Txn{db: db, txn: db.bdb.NewTransaction(true), seen: map[string]tally{}}
		a.ExpectNewKeys()
		if raw {
			if _, ok, err := a.GetIn([]byte("n/test/"), []byte("n/test/0002")); err != nil || ok {
				t.Fatal(ok, err)
			}
		} else if _, err := a.GetRow(TableMemories, "0002"); !errors.Is(err, ErrNotFound) {
			t.Fatal(err)
		}
		if a.above.answered != 1 {
			t.Fatalf("raw=%v: the read was looked up, not answered from the bound", raw)
		}
		// Another transaction creates the key and commits first.
		if err := db.Update(ctx, func(txn *Txn) error {
			if raw {
				return txn.Set([]byte("n/test/0002"), []byte("other"))
			}
			_, err := txn.PutRow(aboveRow("0002", 5))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		var err error
		if raw {
			err = a.Set([]byte("n/test/0002"), []byte("mine"))
		} else {
			_, err = a.PutRow(aboveRow("0002", 6))
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := a.txn.Commit(); !errors.Is(err, badger.ErrConflict) {
			t.Fatalf("raw=%v: commit after another created the key: %v, want a conflict", raw, err)
		}
		if err := db.Update(ctx, func(txn *Txn) error {
			if err := txn.Delete([]byte("n/test/0002")); err != nil {
				return err
			}
			r := aboveRow("0002", 7)
			r.Deleted = true
			_, err := txn.PutRow(r)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// A write batch large enough for known-absent reads resolves every mutation as the same
// mutations written one per call (each read looked up) do: updates and deletes of held
// rows find them, new rows below and above the highest held id are created.
func TestExpectNewKeysWriterBatch(t *testing.T) {
	ctx := context.Background()
	var muts []Mutation
	for i := 0; i < 300; i++ {
		id := fmt.Sprintf("m%04d", i)
		op := OpPut
		if i < 200 && i%10 == 4 {
			op = OpDelete
		}
		muts = append(muts, Mutation{Table: TableMemories, RowID: id, Op: op, Data: json.RawMessage(fmt.Sprintf(`{"v":%d}`, i))})
	}
	if len(muts) < expectNewRowsFrom {
		t.Fatal("the batch is below the known-absent threshold")
	}
	rows := map[bool]map[string]*Row{}
	for _, oneCall := range []bool{true, false} {
		db := openTest(t, t.TempDir())
		w := startWriter(t, db, &fakeJournal{})
		for i := 0; i < 200; i += 2 {
			id := fmt.Sprintf("m%04d", i)
			if _, err := w.Write(ctx, Mutation{Table: TableMemories, RowID: id, Op: OpPut, Data: json.RawMessage(`{"held":true}`)}); err != nil {
				t.Fatal(err)
			}
		}
		// Odd ids below 200 are new, so their deletes are refused: only even ones.
		var ms []Mutation
		for _, m := range muts {
			var n int
			fmt.Sscanf(m.RowID, "m%d", &n)
			if m.Op == OpDelete && n%2 == 1 {
				continue
			}
			ms = append(ms, m)
		}
		if oneCall {
			if _, err := w.Write(ctx, ms...); err != nil {
				t.Fatal(err)
			}
		} else {
			for _, m := range ms {
				if _, err := w.Write(ctx, m); err != nil {
					t.Fatal(err)
				}
			}
		}
		got := map[string]*Row{}
		if err := db.View(func(txn *Txn) error {
			return txn.ScanRows(TableMemories, func(r *Row) error { got[r.RowID] = r; return nil })
		}); err != nil {
			t.Fatal(err)
		}
		rows[oneCall] = got
		db.Close()
	}
	if len(rows[true]) != 300 || len(rows[false]) != 300 {
		t.Fatalf("%d rows in one call, %d one by one; want 300", len(rows[true]), len(rows[false]))
	}
	for id, a := range rows[true] {
		b := rows[false][id]
		if b == nil || a.Deleted != b.Deleted || !maps.Equal(a.VV, b.VV) || !jsonEqual(a.Data, b.Data) {
			t.Fatalf("row %s: %+v in one call, %+v one by one", id, a, b)
		}
	}
	if r := rows[true]["m0010"]; r.VV["inst-a"] != 2 {
		t.Fatalf("held row m0010 updated in the batch has vector %v: the update did not find it", r.VV)
	}
}
