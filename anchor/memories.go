package anchor

// memoryCallFixed and memoryCallPer are the parts of the ABI encoding of
// anchorMemories that do not depend on content: the selector, the root, five array
// offsets and five lengths; then per memory an event hash, two offsets, an
// importance, a plain length and two length words (TestMemoryCallSize checks
// them against the ABI encoder).
const (
	memoryCallFixed = 4 + 32 + 5*32 + 5*32
	memoryCallPer   = 5*32 + 2*32
)

func ceil32(n int) int { return (n + 31) / 32 * 32 }

// memoryCallSize is how many bytes m adds to the anchorMemories call.
func memoryCallSize(m MemoryAnchor) int {
	return memoryCallPer + ceil32(len(m.EncryptedContent)) + ceil32(len(m.Category))
}

// SplitMemories cuts ms, in order, into batches that each fit one
// AnchorMemories call (MaxTxDataBytes). A memory too large to fit even alone
// gets a batch of its own, which AnchorMemories refuses with
// ErrBatchTooLarge; with crow's 64 KiB content limit that does not happen.
func SplitMemories(ms []MemoryAnchor) [][]MemoryAnchor {
	var out [][]MemoryAnchor
	start, size := 0, memoryCallFixed
	for i, m := range ms {
		n := memoryCallSize(m)
		if i > start && size+n > MaxTxDataBytes {
			out = append(out, ms[start:i:i])
			start, size = i, memoryCallFixed
		}
		size += n
	}
	if start < len(ms) {
		out = append(out, ms[start:len(ms):len(ms)])
	}
	return out
}

// memoryCall is anchorMemories' arguments, column by column.
type memoryCall struct {
	eventHashes  [][32]byte
	contents     [][]byte
	categories   []string
	importances  []uint8
	plainLengths []uint32
}

func memoryArgs(ms []MemoryAnchor) memoryCall {
	a := memoryCall{
		eventHashes:  make([][32]byte, len(ms)),
		contents:     make([][]byte, len(ms)),
		categories:   make([]string, len(ms)),
		importances:  make([]uint8, len(ms)),
		plainLengths: make([]uint32, len(ms)),
	}
	for i, m := range ms {
		a.eventHashes[i], a.contents[i], a.categories[i] = m.EventHash, m.EncryptedContent, m.Category
		a.importances[i], a.plainLengths[i] = m.Importance, m.PlainLength
	}
	return a
}

// size is the length of the encoded call.
func (a memoryCall) size() int {
	n := memoryCallFixed
	for i := range a.eventHashes {
		n += memoryCallPer + ceil32(len(a.contents[i])) + ceil32(len(a.categories[i]))
	}
	return n
}
