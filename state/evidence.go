package state

import (
	"bytes"
	"crypto/sha3"
	"encoding/hex"
	"fmt"
	"slices"
)

// Evidence resolves the memory numbers that ops cite. The daemon implements it over the
// memories and memory_numbers tables; Apply calls it only during the call, from the calling
// goroutine, and at most once per number.
type Evidence interface {
	// Lookup returns the memory with that number, or false if no memory has it.
	Lookup(number uint64) (MemoryRef, bool)
}

// EvidenceFunc adapts a function to Evidence.
type EvidenceFunc func(number uint64) (MemoryRef, bool)

// Lookup calls f.
func (f EvidenceFunc) Lookup(number uint64) (MemoryRef, bool) { return f(number) }

// MemoryRef is what the builder needs to know of a cited memory.
type MemoryRef struct {
	Number       uint64
	Project      string
	EventHash    [32]byte
	HasEventHash bool // false until home has numbered the memory and computed its event hash
}

// Merkle node prefixes (see the package doc).
const (
	leafPrefix   = 0x00
	parentPrefix = 0x01
)

// EvidenceRoot returns the Merkle root of a set of event hashes as "0x" + 64 lowercase hex
// digits: the hashes sorted ascending and de-duplicated are the leaves, leaf = SHA3-256(0x00 ‖
// hash), parent = SHA3-256(0x01 ‖ left ‖ right), and a level with an odd number of nodes
// promotes its last node unchanged. It returns "" for no hashes.
func EvidenceRoot(hashes [][32]byte) string {
	if len(hashes) == 0 {
		return ""
	}
	sorted := slices.Clone(hashes)
	slices.SortFunc(sorted, func(a, b [32]byte) int { return bytes.Compare(a[:], b[:]) })
	sorted = slices.Compact(sorted)

	level := make([][32]byte, len(sorted))
	buf := make([]byte, 1, 65)
	for i, h := range sorted {
		buf = append(buf[:1], h[:]...)
		buf[0] = leafPrefix
		level[i] = sha3.Sum256(buf)
	}
	for len(level) > 1 {
		next := level[:0]
		for i := 0; i < len(level); i += 2 {
			if i+1 == len(level) {
				next = append(next, level[i]) // odd node: promoted unchanged
				break
			}
			buf = append(buf[:1], level[i][:]...)
			buf = append(buf, level[i+1][:]...)
			buf[0] = parentPrefix
			next = append(next, sha3.Sum256(buf))
		}
		level = next
	}
	return hex0x(level[0][:])
}

func hex0x(b []byte) string { return "0x" + hex.EncodeToString(b) }

// ParseHash decodes a 32-byte hash written as "0x" + 64 hex digits (either case), the form
// of event hashes, evidence roots and state hashes.
func ParseHash(s string) ([32]byte, error) {
	var h [32]byte
	if len(s) != 66 || s[:2] != "0x" {
		return h, fmt.Errorf("hash %q is not 0x and 64 hex digits", quote(s))
	}
	if _, err := hex.Decode(h[:], []byte(s[2:])); err != nil {
		return h, fmt.Errorf("hash %q is not 0x and 64 hex digits", quote(s))
	}
	return h, nil
}
