package feed

import (
	"context"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// badgerKV is a KV over a raw badger database opened with badger's own options, so feed's
// tests and its "badger" benchmarks need neither store nor the daemon's options. The
// daemon's KV is store.DB (exercised by the sync/feeds and sync/apply tests).
type badgerKV struct{ db *badger.DB }

func newBadgerStorage(db *badger.DB) *KVStorage { return NewKVStorage(badgerKV{db}) }

func (k badgerKV) View(fn func(*badgerTxn) error) error {
	return k.db.View(func(txn *badger.Txn) error { return fn(&badgerTxn{txn}) })
}

func (k badgerKV) Update(_ context.Context, fn func(*badgerTxn) error) error {
	return k.db.Update(func(txn *badger.Txn) error { return fn(&badgerTxn{txn}) })
}

func (k badgerKV) NewWriteBatch() *badger.WriteBatch { return k.db.NewWriteBatch() }

// badgerTxn is a KVTxn; tests also Commit or Discard the ones they open with newTxn.
type badgerTxn struct{ txn *badger.Txn }

func newTxn(db *badger.DB) *badgerTxn { return &badgerTxn{db.NewTransaction(true)} }

func (t *badgerTxn) Commit() error { return t.txn.Commit() }
func (t *badgerTxn) Discard()      { t.txn.Discard() }

type tooLargeError struct{ error }

func (tooLargeError) TooLarge() bool { return true }

func (t *badgerTxn) Get(key []byte) ([]byte, bool, error) {
	item, err := t.txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	v, err := item.ValueCopy(nil)
	return v, err == nil, err
}

func (t *badgerTxn) Set(key, val []byte) error {
	err := t.txn.Set(key, val)
	if errors.Is(err, badger.ErrTxnTooBig) {
		return tooLargeError{fmt.Errorf("writing %q: %w", key, err)}
	}
	return err
}

func (t *badgerTxn) Iterate(prefix, from []byte, fn func(key, val []byte) error) error {
	it := t.txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
	defer it.Close()
	for it.Seek([]byte(max(string(from), string(prefix)))); it.Valid(); it.Next() {
		item := it.Item()
		if err := item.Value(func(v []byte) error { return fn(item.Key(), v) }); err != nil {
			return err
		}
	}
	return nil
}

func (t *badgerTxn) IterateKeys(prefix, from []byte, fn func(key []byte) error) error {
	it := t.txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
	defer it.Close()
	for it.Seek([]byte(max(string(from), string(prefix)))); it.Valid(); it.Next() {
		if err := fn(it.Item().Key()); err != nil {
			return err
		}
	}
	return nil
}
