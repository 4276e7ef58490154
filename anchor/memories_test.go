package anchor

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestMemoryCallSize checks the size arithmetic against the ABI encoder.
func TestMemoryCallSize(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := 1; n < 20; n++ {
		ms := make([]MemoryAnchor, n)
		for i := range ms {
			ms[i] = MemoryAnchor{
				EventHash:        [32]byte{byte(i)},
				EncryptedContent: bytes.Repeat([]byte{1}, r.IntN(300)),
				Category:         string(bytes.Repeat([]byte{'c'}, r.IntN(70))),
				Importance:       uint8(r.IntN(11)),
				PlainLength:      r.Uint32(),
			}
		}
		a := memoryArgs(ms)
		packed, err := contractABI.Pack("anchorMemories", [32]byte{byte(n)}, a.eventHashes, a.contents, a.categories, a.importances, a.plainLengths)
		if err != nil {
			t.Fatal(err)
		}
		if a.size() != len(packed) {
			t.Fatalf("%d memories: size() = %d, encoder says %d", n, a.size(), len(packed))
		}
	}
}

func TestSplitMemories(t *testing.T) {
	mk := func(contentLen int) MemoryAnchor {
		return MemoryAnchor{EncryptedContent: make([]byte, contentLen), Category: "decision"}
	}
	big := (MaxTxDataBytes - memoryCallFixed - memoryCallPer - 32) / 32 * 32 // alone it fits, with anything else not
	if memoryArgs([]MemoryAnchor{mk(big)}).size() > MaxTxDataBytes {
		t.Fatal("test memory too big")
	}
	for _, tc := range []struct {
		in   []MemoryAnchor
		want string
	}{
		{nil, "[]"},
		{[]MemoryAnchor{mk(10)}, "[1]"},
		{[]MemoryAnchor{mk(10), mk(10), mk(10)}, "[3]"},
		{[]MemoryAnchor{mk(big), mk(10)}, "[1 1]"},
		{[]MemoryAnchor{mk(10), mk(big), mk(10), mk(10)}, "[1 1 2]"},
		{[]MemoryAnchor{mk(MaxTxDataBytes), mk(10)}, "[1 1]"}, // too big alone: its own batch
	} {
		got := SplitMemories(tc.in)
		if fmt.Sprint(lens(got)) != tc.want && !(tc.want == "[]" && len(got) == 0) {
			t.Errorf("SplitMemories(%d memories) = batches %v, want %s", len(tc.in), lens(got), tc.want)
		}
		var flat []MemoryAnchor
		for _, b := range got {
			flat = append(flat, b...)
			if len(b) > 1 && memoryArgs(b).size() > MaxTxDataBytes {
				t.Errorf("batch of %d is %d bytes", len(b), memoryArgs(b).size())
			}
		}
		if len(flat) != len(tc.in) {
			t.Errorf("batches hold %d memories, want %d", len(flat), len(tc.in))
		}
	}
	// Many small memories fill batches close to the limit.
	var many []MemoryAnchor
	for range 2000 {
		many = append(many, mk(200))
	}
	for i, b := range SplitMemories(many) {
		if s := memoryArgs(b).size(); s > MaxTxDataBytes || (i == 0 && s < MaxTxDataBytes-600) {
			t.Errorf("batch %d: %d memories, %d bytes", i, len(b), s)
		}
	}
}
