package feed

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// hashEntries returns n JSON entries shaped like crow's change records: a
// marker text and one or two hex hashes each; every fifth also holds a 0xFF
// byte, every seventh no hash at all (stored as before: not packed).
func hashEntries(rng *rand.Rand, n int) (entries [][]byte, hashes []string) {
	for i := range n {
		h := make([]byte, 32)
		for j := range h {
			h[j] = byte(rng.IntN(256))
		}
		hx := hex.EncodeToString(h)
		e := fmt.Sprintf(`{"content":"%s","content_hash":"%s","event_hash":"0x%s"`, marker(i), hx, hx[:62]+"ab")
		switch {
		case i%7 == 0:
			e = fmt.Sprintf(`{"content":"%s"`, marker(i))
			hx = ""
		case i%5 == 0:
			e += ",\"b\":\"\xff\""
		}
		entries = append(entries, []byte(e+"}"))
		hashes = append(hashes, hx)
	}
	return entries, hashes
}

// TestPackedRecords: records whose data holds hex hashes are stored with the
// hashes in binary (the hex is nowhere in the database, the text is), read
// back byte for byte, prove against the head, and clear as others do; a
// replica stores what it verifies the same way.
func TestPackedRecords(t *testing.T) {
	db := openBadger(t, t.TempDir())
	defer func() { db.Close() }()
	rng := rand.New(rand.NewPCG(31, 32))
	orig, hashes := hashEntries(rng, 100)
	l, err := OpenLog(newBadgerStorage(db), testKey(1))
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range [][2]int{{0, 5}, {5, 40}, {40, 41}, {41, 90}} { // chunk bases and parts
		if _, err := l.Append(orig[part[0]:part[1]]); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 90 {
		if hashes[i] != "" && rawContains(t, db, []byte(hashes[i])) {
			t.Fatalf("entry %d: its hash is stored in hex", i)
		}
		if !rawContains(t, db, marker(i)) {
			t.Fatalf("entry %d: its text is not stored as it is", i)
		}
	}
	clearSet := []uint64{0, 5, 7, 16, 17, 40, 63, 89}
	if err := l.Clear(clearSet...); err != nil {
		t.Fatal(err)
	}
	isCleared := map[uint64]bool{}
	for _, i := range clearSet {
		isCleared[i] = true
		if rawContains(t, db, marker(int(i))) {
			t.Fatalf("entry %d: text still stored after its clear", i)
		}
	}
	if _, err := l.Append(orig[90:]); err != nil {
		t.Fatal(err)
	}
	checkFeed(t, l.Read, l.ReadSparse, func(s, e uint64) (*Proof, error) { return l.Proof(s, e, 0) }, orig, isCleared)
	got, err := l.Read(90, 100)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range got {
		if !bytes.Equal(e, orig[90+i]) {
			t.Fatalf("entry %d read back as %q", 90+i, e)
		}
	}

	// A replica of it, in another database: verified ranges stored packed too.
	db2, _, rs := replicate(t, l, 100)
	back, err := rs.Read(l.Key(), 90, 100)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range back {
		if !bytes.Equal(e, orig[90+i]) {
			t.Fatalf("replica entry %d read back as %q", 90+i, e)
		}
		if hashes[90+i] != "" && rawContains(t, db2, []byte(hashes[90+i])) {
			t.Fatalf("replica entry %d: its hash is stored in hex", 90+i)
		}
	}
}

// TestPackedFrameFormat freezes a packed record's bytes on disk: the length
// word with its top bit set, the nodes as they are, the data packed.
func TestPackedFrameFormat(t *testing.T) {
	nodes := bytes.Repeat([]byte{0xff}, recordHeader(0)) // node bytes are never escaped
	data := []byte(`{"h":"` + strings.Repeat("5a", 32) + `"}`)
	plain := []byte(`{"h":"short"}`)
	recs := [][]byte{append(bytes.Clone(nodes), data...), append(bytes.Repeat([]byte{1}, recordHeader(1)), plain...)}
	got := packRecords(recs, 0)
	want := hex.EncodeToString(binary.BigEndian.AppendUint32(nil, uint32(len(nodes)+5+34+1)|1<<31)) +
		hex.EncodeToString(nodes) + hex.EncodeToString([]byte(`{"h":`)) + "ff01" + strings.Repeat("5a", 32) + "7d" +
		hex.EncodeToString(binary.BigEndian.AppendUint32(nil, uint32(len(recs[1])))) + hex.EncodeToString(recs[1])
	if hex.EncodeToString(got) != want {
		t.Fatalf("packed frames changed:\ngot  %x\nwant %s", got, want)
	}
	if unpacked, want := packRecords(recs[1:], 1), binary.BigEndian.AppendUint32(nil, uint32(len(recs[1]))); !bytes.Equal(unpacked, append(want, recs[1]...)) {
		t.Fatal("a record without hashes was rewritten")
	}
	stored := storedRecords(t, got, 0)
	if len(stored) != 2 || !bytes.Equal(stored[0], recs[0]) || !bytes.Equal(stored[1][recordHeader(1):], plain) {
		t.Fatalf("read back %q", stored)
	}
}
