package anchor

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"golang.org/x/crypto/chacha20poly1305"

	"github.com/crow-sync/crow/identity"
	"github.com/crow-sync/crow/store"
)

// Per-memory data keys (crypto-shredding). Each memory id has one random
// 32-byte data key, made on home the first time one of its versions is
// anchored; every version of the memory is sealed under it (SealMemory). It
// lives only in home's store, in a local-only keyspace that is never in a
// feed (so never replicated) and never on chain:
//
//	n/anchor/dek/<memory id>       wrapped data key (format below)
//	n/anchor/shredded/<memory id>  RFC 3339 time the key was destroyed
//
// A wrapped key (frozen; TestWrapDataKeyGolden pins it) is
//
//	0x01 ‖ nonce (24 bytes, random) ‖ XChaCha20-Poly1305(DataKeyWrapKey, nonce,
//	                                    data key, ad = "crow-dek-v1" ‖ 0x00 ‖ memory id)
//
// 73 bytes, the wrap key being identity.Seed.DataKeyWrapKey: a copy of the
// database without the seed reveals no data key, and the memory id in the
// associated data stops a wrapped key from being moved to another memory.
//
// ShredMemoryKey deletes the wrapped key and writes the shredded marker in
// one transaction, so "forgotten" (KeyShredded) is told apart from "never
// had one" (KeyNone, e.g. a memory anchored under the seed key before data
// keys existed). The store commits with fsync, so the deletion is durable
// when ShredMemoryKey returns. Badger keeps a deleted value on disk until
// compaction rewrites its table (and value-log GC its value log): the forget
// orchestration runs that compaction after shredding, which is what removes
// the old bytes from the disk. Until then they are still wrapped under the
// seed-derived key.
const (
	dekPrefix      = "n/anchor/dek/"
	shreddedPrefix = "n/anchor/shredded/"
	wrapFormat     = 0x01
	wrapDomain     = "crow-dek-v1"
	wrappedSize    = 1 + nonceSize + 32 + chacha20poly1305.Overhead
)

// KeyState is what home's store holds for a memory's data key.
type KeyState int

const (
	KeyNone     KeyState = iota // never had one (not anchored yet, or anchored under the seed key)
	KeyPresent                  // the key is here
	KeyShredded                 // it was destroyed (ShredMemoryKey): the content on chain is unreadable
)

func (s KeyState) String() string {
	switch s {
	case KeyPresent:
		return "present"
	case KeyShredded:
		return "shredded"
	}
	return "none"
}

// ErrUnwrap is returned by DataKeys when a stored data key does not unwrap
// with this seed's wrap key (another seed's database, or damage).
var ErrUnwrap = errors.New("anchor: stored data key does not unwrap with this seed")

// DataKeys is home's store of per-memory data keys. It is safe for
// concurrent use (each call is one store transaction).
type DataKeys struct {
	DB   *store.DB
	Wrap [32]byte // identity.Seed.DataKeyWrapKey
}

// NewDataKeys returns the data keys of db, wrapped under seed's wrap key.
func NewDataKeys(db *store.DB, seed identity.Seed) DataKeys {
	return DataKeys{DB: db, Wrap: seed.DataKeyWrapKey()}
}

// Get returns memoryID's data key and its state; the key is zero unless
// the state is KeyPresent.
func (k DataKeys) Get(memoryID string) (key [32]byte, st KeyState, err error) {
	err = k.DB.View(func(txn *store.Txn) error {
		key, st, err = k.getTxn(txn, memoryID)
		return err
	})
	return key, st, err
}

func (k DataKeys) getTxn(txn *store.Txn, memoryID string) ([32]byte, KeyState, error) {
	v, ok, err := txn.Get([]byte(dekPrefix + memoryID))
	if err != nil {
		return [32]byte{}, KeyNone, fmt.Errorf("reading the data key of %s: %w", memoryID, err)
	}
	if ok {
		key, err := unwrapDataKey(k.Wrap, memoryID, v)
		return key, KeyPresent, err
	}
	st, err := shreddedTxn(txn, memoryID)
	return [32]byte{}, st, err
}

func shreddedTxn(txn *store.Txn, memoryID string) (KeyState, error) {
	_, ok, err := txn.Get([]byte(shreddedPrefix + memoryID))
	if err != nil {
		return KeyNone, fmt.Errorf("reading the shredded marker of %s: %w", memoryID, err)
	}
	if ok {
		return KeyShredded, nil
	}
	return KeyNone, nil
}

// Ensure returns the data key of each of memoryIDs, making (and storing,
// in one transaction) those that have none. A memory whose key was
// shredded gets no new one: it is left out of the map, and its content
// must not be anchored again.
func (k DataKeys) Ensure(ctx context.Context, memoryIDs []string) (map[string][32]byte, error) {
	var out map[string][32]byte
	err := k.DB.Update(ctx, func(txn *store.Txn) error {
		out = make(map[string][32]byte, len(memoryIDs))
		for _, id := range memoryIDs {
			key, st, err := k.getTxn(txn, id)
			if err != nil {
				return err
			}
			switch st {
			case KeyPresent:
				out[id] = key
			case KeyNone:
				if _, err := rand.Read(key[:]); err != nil {
					return fmt.Errorf("making a data key: %w", err)
				}
				w, err := wrapDataKey(k.Wrap, id, key)
				if err != nil {
					return err
				}
				if err := txn.Set([]byte(dekPrefix+id), w); err != nil {
					return err
				}
				out[id] = key
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("storing data keys: %w", err)
	}
	return out, nil
}

// ShredMemoryKey destroys memoryID's data key: the wrapped key is deleted
// and the shredded marker written, in one fsynced transaction (see above
// for compaction). From then on the memory's ciphertext on chain decrypts
// with nothing, the seed included. Shredding a key that is already gone, or
// that never existed, records the marker and is not an error.
func ShredMemoryKey(db *store.DB, memoryID string) error {
	at := db.Now().UTC().Format(time.RFC3339)
	err := db.Update(context.Background(), func(txn *store.Txn) error {
		if err := txn.Delete([]byte(dekPrefix + memoryID)); err != nil {
			return err
		}
		if st, err := shreddedTxn(txn, memoryID); err != nil || st == KeyShredded {
			return err // keep the first shredding's time
		}
		return txn.Set([]byte(shreddedPrefix+memoryID), []byte(at))
	})
	if err != nil {
		return fmt.Errorf("shredding the data key of %s: %w", memoryID, err)
	}
	return nil
}

// MemoryKeyState reports what db holds for memoryID's data key, without
// unwrapping it (no seed needed).
func MemoryKeyState(db *store.DB, memoryID string) (KeyState, error) {
	st := KeyNone
	err := db.View(func(txn *store.Txn) error {
		_, ok, err := txn.Get([]byte(dekPrefix + memoryID))
		if err != nil || ok {
			st = KeyPresent
			return err
		}
		st, err = shreddedTxn(txn, memoryID)
		return err
	})
	return st, err
}

func wrapAD(memoryID string) []byte {
	return append([]byte(wrapDomain+"\x00"), memoryID...)
}

func wrapDataKey(wrap [32]byte, memoryID string, key [32]byte) ([]byte, error) {
	var nonce [nonceSize]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, fmt.Errorf("reading nonce: %w", err)
	}
	return wrapDataKeyNonce(wrap, memoryID, key, nonce)
}

func wrapDataKeyNonce(wrap [32]byte, memoryID string, key [32]byte, nonce [nonceSize]byte) ([]byte, error) {
	aead, err := chacha20poly1305.NewX(wrap[:])
	if err != nil {
		return nil, fmt.Errorf("making cipher: %w", err)
	}
	out := make([]byte, 1+nonceSize, wrappedSize)
	out[0] = wrapFormat
	copy(out[1:], nonce[:])
	return aead.Seal(out, nonce[:], key[:], wrapAD(memoryID)), nil
}

func unwrapDataKey(wrap [32]byte, memoryID string, w []byte) ([32]byte, error) {
	if len(w) != wrappedSize || w[0] != wrapFormat {
		return [32]byte{}, fmt.Errorf("%w: data key of %s: %d bytes, format %#x", ErrUnwrap, memoryID, len(w), w[:min(len(w), 1)])
	}
	aead, err := chacha20poly1305.NewX(wrap[:])
	if err != nil {
		return [32]byte{}, fmt.Errorf("making cipher: %w", err)
	}
	key, err := aead.Open(nil, w[1:1+nonceSize], w[1+nonceSize:], wrapAD(memoryID))
	if err != nil {
		return [32]byte{}, fmt.Errorf("%w: data key of %s: %w", ErrUnwrap, memoryID, err)
	}
	return [32]byte(key), nil
}
