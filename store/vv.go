package store

// VV is a version vector: instance id → number of changes that instance made to the row.
// A nil VV is the empty vector. Methods never modify their receiver unless documented.
type VV map[string]uint64

// Ordering is the result of comparing two version vectors.
type Ordering int

const (
	// Equal: both vectors have seen exactly the same changes.
	Equal Ordering = iota
	// Lesser: the receiver happened before the other (the other dominates).
	Lesser
	// Greater: the receiver dominates the other.
	Greater
	// Concurrent: each has seen a change the other has not.
	Concurrent
)

func (o Ordering) String() string {
	switch o {
	case Equal:
		return "equal"
	case Lesser:
		return "lesser"
	case Greater:
		return "greater"
	case Concurrent:
		return "concurrent"
	}
	return "invalid"
}

// Compare orders v against other. Missing entries count as zero.
func (v VV) Compare(other VV) Ordering {
	less, greater := false, false
	for id, a := range v {
		b := other[id]
		if a < b {
			less = true
		} else if a > b {
			greater = true
		}
	}
	for id, b := range other {
		if _, ok := v[id]; !ok && b > 0 {
			less = true
		}
	}
	switch {
	case less && greater:
		return Concurrent
	case less:
		return Lesser
	case greater:
		return Greater
	}
	return Equal
}

// Merge returns a new vector holding, for each instance, the maximum of v and other.
func (v VV) Merge(other VV) VV {
	out := v.Copy()
	for id, b := range other {
		if b > out[id] {
			out[id] = b
		}
	}
	return out
}

// Copy returns a copy of v (never nil).
func (v VV) Copy() VV {
	out := make(VV, len(v)+1)
	for id, c := range v {
		out[id] = c
	}
	return out
}

// Inc returns a copy of v with id's counter incremented.
func (v VV) Inc(id string) VV {
	out := v.Copy()
	out[id]++
	return out
}
