package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestTxnRawKeys(t *testing.T) {
	db := openTest(t, t.TempDir())
	defer db.Close()
	ctx := context.Background()
	err := db.Update(ctx, func(txn *Txn) error {
		for i := range 5 {
			if err := txn.Set(fmt.Appendf(nil, "n/test/%d", i), fmt.Appendf(nil, "v%d", i)); err != nil {
				return err
			}
		}
		return txn.Set([]byte("n/tesu"), []byte("other prefix"))
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.View(func(txn *Txn) error {
		if v, ok, err := txn.Get([]byte("n/test/3")); err != nil || !ok || string(v) != "v3" {
			t.Errorf("get = %q %v %v", v, ok, err)
		}
		if v, ok, err := txn.Get([]byte("n/test/9")); err != nil || ok || v != nil {
			t.Errorf("get missing = %q %v %v", v, ok, err)
		}
		var keys []string
		err := txn.Iterate([]byte("n/test/"), []byte("n/test/1"), func(k, v []byte) error {
			if !bytes.Equal(v, append([]byte("v"), k[len(k)-1])) {
				t.Errorf("value of %s = %q", k, v)
			}
			keys = append(keys, string(k))
			if len(keys) == 3 {
				return ErrStop
			}
			return nil
		})
		if err != nil || fmt.Sprint(keys) != "[n/test/1 n/test/2 n/test/3]" {
			t.Errorf("iterate = %v %v", keys, err)
		}
		keys = nil
		err = txn.IterateKeys([]byte("n/test/"), nil, func(k []byte) error { keys = append(keys, string(k)); return nil })
		if err != nil || len(keys) != 5 {
			t.Errorf("iterate keys = %v %v", keys, err)
		}
		boom := errors.New("boom")
		if err := txn.IterateKeys([]byte("n/"), nil, func([]byte) error { return boom }); !errors.Is(err, boom) {
			t.Errorf("fn error = %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Deleting in a batch.
	wb := db.NewWriteBatch()
	defer wb.Cancel()
	for i := range 5 {
		if err := wb.Delete(fmt.Appendf(nil, "n/test/%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := wb.Flush(); err != nil {
		t.Fatal(err)
	}
	err = db.View(func(txn *Txn) error {
		return txn.IterateKeys([]byte("n/"), nil, func(k []byte) error {
			if string(k) != "n/tesu" {
				t.Errorf("left %s", k)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestTxnReservedKeys(t *testing.T) {
	db := openTest(t, t.TempDir())
	defer db.Close()
	for _, k := range []string{"t/memories/x", "s/lamport", "q/", "m/schema"} {
		err := db.Update(context.Background(), func(txn *Txn) error {
			if _, _, err := txn.Get([]byte(k)); !errors.Is(err, ErrReservedKey) {
				t.Errorf("get %s: %v", k, err)
			}
			if err := txn.Delete([]byte(k)); !errors.Is(err, ErrReservedKey) {
				t.Errorf("delete %s: %v", k, err)
			}
			if err := txn.IterateKeys([]byte(k), nil, func([]byte) error { return nil }); !errors.Is(err, ErrReservedKey) {
				t.Errorf("iterate %s: %v", k, err)
			}
			return txn.Set([]byte(k), []byte("x"))
		})
		if !errors.Is(err, ErrReservedKey) {
			t.Errorf("set %s: %v", k, err)
		}
		if err := db.NewWriteBatch().Set([]byte(k), nil); !errors.Is(err, ErrReservedKey) {
			t.Errorf("batch set %s: %v", k, err)
		}
	}
	err := db.View(func(txn *Txn) error {
		return txn.Iterate([]byte("n"), nil, func(_, _ []byte) error { return nil })
	})
	if !errors.Is(err, ErrReservedKey) {
		t.Errorf("iterating a one-byte prefix: %v", err)
	}
}

// Update re-runs a transaction that conflicted and gives up with ErrConflict.
func TestUpdateRetriesConflicts(t *testing.T) {
	db := openTest(t, t.TempDir())
	defer db.Close()
	ctx := context.Background()
	key := []byte("n/test/k")
	// conflicting makes the running transaction conflict: it reads key, then another
	// transaction writes key and commits first.
	conflicting := func(txn *Txn) error {
		if _, _, err := txn.Get(key); err != nil {
			return err
		}
		if err := db.Update(ctx, func(other *Txn) error { return other.Set(key, []byte("other")) }); err != nil {
			return err
		}
		return txn.Set(key, []byte("mine"))
	}
	runs := 0
	err := db.Update(ctx, func(txn *Txn) error {
		runs++
		if runs < 3 {
			return conflicting(txn)
		}
		return txn.Set(key, []byte("mine"))
	})
	if err != nil || runs != 3 {
		t.Fatalf("update = %v after %d runs", err, runs)
	}
	runs = 0
	err = db.Update(ctx, func(txn *Txn) error { runs++; return conflicting(txn) })
	if !errors.Is(err, ErrConflict) || runs != maxAttempts {
		t.Fatalf("always conflicting: %v after %d runs", err, runs)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := db.Update(cctx, func(*Txn) error { t.Fatal("ran"); return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

// A transaction that outgrows badger's limit fails with ErrTooLarge, which packages that
// cannot import store recognise by its TooLarge method.
func TestUpdateTooLarge(t *testing.T) {
	db, err := Open(t.TempDir(), Options{MemTableSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	val := bytes.Repeat([]byte("x"), 1<<10)
	err = db.Update(context.Background(), func(txn *Txn) error {
		for i := range 1 << 12 {
			if err := txn.Set(fmt.Appendf(nil, "n/big/%d", i), val); err != nil {
				return err
			}
		}
		return nil
	})
	var tl interface{ TooLarge() bool }
	if !errors.Is(err, ErrTooLarge) || !errors.As(err, &tl) || !tl.TooLarge() {
		t.Fatalf("err = %v", err)
	}
}
