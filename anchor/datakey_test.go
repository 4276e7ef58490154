package anchor

import (
	"bytes"
	"errors"
	"testing"

	"github.com/crow-sync/crow/identity"
	"github.com/crow-sync/crow/store"
	"github.com/crow-sync/crow/store/storetest"
)

// TestSealMemoryGolden freezes format 2: 0x02 ‖ nonce ‖ XChaCha20-Poly1305
// under the data key with the event hash as associated data. The value was
// computed independently (Python: HChaCha20 written from
// draft-irtf-cfrg-xchacha, checked against its test vector, then the
// cryptography package's ChaCha20Poly1305).
func TestSealMemoryGolden(t *testing.T) {
	var key, event [32]byte
	var nonce [nonceSize]byte
	for i := range key {
		key[i], event[i] = byte(0x60+i), byte(0x20+i)
	}
	for i := range nonce {
		nonce[i] = byte(0x40 + i)
	}
	pt := []byte("Usar consenso Clique PoA")
	want := mustHex(t, "02404142434445464748494a4b4c4d4e4f5051525354555657ccee789be21aba8673d695398f73956fe0147eb12ba4fe8ccee5706891dafda2787cb307ef6a9936")
	got, err := sealMemory(key, event, nonce, pt)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("ciphertext\n got %x (%v)\nwant %x", got, err, want)
	}
	if back, err := OpenMemory(key, event, want); err != nil || !bytes.Equal(back, pt) {
		t.Fatalf("OpenMemory(golden) = %q, %v", back, err)
	}
	if len(want) != len(pt)+SealOverhead {
		t.Fatalf("len = %d, want %d", len(want), len(pt)+SealOverhead)
	}
}

// TestTwoFormatsApart: a format-2 ciphertext does not open with the seed's
// memory key (format 1), nor does format 1 open as format 2, and each
// refuses the other event hash and key.
func TestTwoFormatsApart(t *testing.T) {
	seedKey := goldenSeed().MemoryEncryptionKey()
	dek := [32]byte{9, 9, 9}
	event := [32]byte{1}
	v2, err := SealMemory(dek, event, []byte("secreto"))
	if err != nil {
		t.Fatal(err)
	}
	v1, err := EncryptMemory(seedKey, event, []byte("secreto"))
	if err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"format 2 under the seed key":        second(DecryptMemory(seedKey, event, v2)),
		"format 2 as format 1, its data key": second(DecryptMemory(dek, event, v2)),
		"format 1 as format 2":               second(OpenMemory(seedKey, event, v1)),
		"format 2, other event hash":         second(OpenMemory(dek, [32]byte{2}, v2)),
		"format 2, other data key":           second(OpenMemory([32]byte{8}, event, v2)),
		"format 2, truncated":                second(OpenMemory(dek, event, v2[:SealOverhead-1])),
	} {
		if !errors.Is(err, ErrDecrypt) {
			t.Errorf("%s: err = %v, want ErrDecrypt", name, err)
		}
	}
	if pt, err := OpenMemory(dek, event, v2); err != nil || string(pt) != "secreto" {
		t.Fatalf("OpenMemory = %q, %v", pt, err)
	}
}

func second[T any](_ T, err error) error { return err }

// TestWrapDataKeyGolden freezes the wrapped data key at rest (computed
// independently as TestSealMemoryGolden's value).
func TestWrapDataKeyGolden(t *testing.T) {
	var key [32]byte
	var nonce [nonceSize]byte
	for i := range key {
		key[i] = byte(0x60 + i)
	}
	for i := range nonce {
		nonce[i] = byte(0x40 + i)
	}
	wrap := goldenSeed().DataKeyWrapKey()
	want := mustHex(t, "01404142434445464748494a4b4c4d4e4f5051525354555657ba871c77c5df3376d72a582e4165b62ad84b170949b71a858ee1b3c6ff1191e65ce941a202328b1c75facfc912d2529b")
	got, err := wrapDataKeyNonce(wrap, "01JMEMORY", key, nonce)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("wrapped\n got %x (%v)\nwant %x", got, err, want)
	}
	if back, err := unwrapDataKey(wrap, "01JMEMORY", want); err != nil || back != key {
		t.Fatalf("unwrap = %x, %v", back, err)
	}
	if _, err := unwrapDataKey(wrap, "01JOTHER", want); !errors.Is(err, ErrUnwrap) {
		t.Fatalf("unwrapped under another memory id: %v", err)
	}
}

// Data keys: made once per memory and stable, wrapped under the seed
// (another seed cannot read them), kept out of every table; a shredded
// key is gone, told apart from none, and never made again.
func TestDataKeysShred(t *testing.T) {
	env := storetest.Start(t, t.TempDir())
	ctx := testCtx(t)
	keys := NewDataKeys(env.DB, goldenSeed())
	if st, err := MemoryKeyState(env.DB, "m1"); err != nil || st != KeyNone {
		t.Fatalf("before: %v %v", st, err)
	}
	got, err := keys.Ensure(ctx, []string{"m1", "m2"})
	if err != nil || len(got) != 2 || got["m1"] == got["m2"] || got["m1"] == ([32]byte{}) {
		t.Fatalf("Ensure = %v %v", got, err)
	}
	again, err := keys.Ensure(ctx, []string{"m1"})
	if err != nil || again["m1"] != got["m1"] {
		t.Fatal("a second Ensure made another key")
	}
	if k, st, err := keys.Get("m1"); err != nil || st != KeyPresent || k != got["m1"] {
		t.Fatalf("Get = %x %v %v", k, st, err)
	}
	var other identity.Seed
	other[0] = 1
	if _, _, err := NewDataKeys(env.DB, other).Get("m1"); !errors.Is(err, ErrUnwrap) {
		t.Fatalf("another seed read the key: %v", err)
	}
	// Nothing of it is in a table (so nothing replicates).
	err = env.DB.View(func(txn *store.Txn) error {
		for _, table := range store.Tables() {
			if err := txn.ScanRows(table, func(r *store.Row) error {
				if bytes.Contains(r.Data, []byte("dek")) {
					t.Errorf("table %s row %s mentions a data key", table, r.RowID)
				}
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := ShredMemoryKey(env.DB, "m1"); err != nil {
		t.Fatal(err)
	}
	if k, st, err := keys.Get("m1"); err != nil || st != KeyShredded || k != ([32]byte{}) {
		t.Fatalf("after shredding: %x %v %v", k, st, err)
	}
	if st, _ := MemoryKeyState(env.DB, "m1"); st != KeyShredded {
		t.Fatalf("MemoryKeyState = %v", st)
	}
	err = env.DB.View(func(txn *store.Txn) error {
		_, ok, err := txn.Get([]byte(dekPrefix + "m1"))
		if ok {
			t.Error("the wrapped key is still stored")
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	after, err := keys.Ensure(ctx, []string{"m1", "m2"})
	if _, made := after["m1"]; err != nil || made || after["m2"] != got["m2"] {
		t.Fatalf("Ensure after shredding = %v %v", after, err)
	}
	if err := ShredMemoryKey(env.DB, "m1"); err != nil {
		t.Fatal("shredding twice:", err)
	}
	// Shredding a memory that never had a key keeps it from getting one.
	if err := ShredMemoryKey(env.DB, "m3"); err != nil {
		t.Fatal(err)
	}
	if after, _ := keys.Ensure(ctx, []string{"m3"}); len(after) != 0 {
		t.Fatal("a key was made for a forgotten memory")
	}
}
