package store

import (
	"math/rand"
	"reflect"
	"testing"
	"testing/quick"
)

func TestVVCompare(t *testing.T) {
	cases := []struct {
		a, b VV
		want Ordering
	}{
		{nil, nil, Equal},
		{VV{}, nil, Equal},
		{VV{"a": 0}, nil, Equal},
		{VV{"a": 1}, VV{"a": 1}, Equal},
		{VV{"a": 1}, VV{"a": 2}, Lesser},
		{VV{"a": 2}, VV{"a": 1}, Greater},
		{nil, VV{"a": 1}, Lesser},
		{VV{"a": 1}, nil, Greater},
		{VV{"a": 1}, VV{"b": 1}, Concurrent},
		{VV{"a": 1, "b": 1}, VV{"a": 1}, Greater},
		{VV{"a": 1}, VV{"a": 1, "b": 1}, Lesser},
		{VV{"a": 2, "b": 1}, VV{"a": 1, "b": 2}, Concurrent},
		{VV{"a": 2, "b": 2}, VV{"a": 1, "b": 2}, Greater},
		{VV{"a": 1, "b": 0}, VV{"a": 1, "c": 0}, Equal},
	}
	for _, c := range cases {
		if got := c.a.Compare(c.b); got != c.want {
			t.Errorf("%v.Compare(%v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func TestVVMergeCopyInc(t *testing.T) {
	a := VV{"a": 3, "b": 1}
	b := VV{"b": 4, "c": 2}
	m := a.Merge(b)
	if want := (VV{"a": 3, "b": 4, "c": 2}); m.Compare(want) != Equal || len(m) != 3 {
		t.Fatalf("merge = %v", m)
	}
	if a["b"] != 1 || len(a) != 2 {
		t.Fatalf("merge modified receiver: %v", a)
	}
	i := a.Inc("z")
	if i["z"] != 1 || a["z"] != 0 {
		t.Fatalf("inc: %v %v", i, a)
	}
	var n VV
	if c := n.Copy(); c == nil {
		t.Fatal("copy of nil is nil")
	}
}

// naiveCompare is the reference: a ≤ b iff every counter of a is ≤ the one in b.
func naiveCompare(a, b VV) Ordering {
	le := func(x, y VV) bool {
		for _, id := range []string{"a", "b", "c", "d"} {
			if x[id] > y[id] {
				return false
			}
		}
		return true
	}
	switch ab, ba := le(a, b), le(b, a); {
	case ab && ba:
		return Equal
	case ab:
		return Lesser
	case ba:
		return Greater
	}
	return Concurrent
}

type smallVV VV

func (smallVV) Generate(r *rand.Rand, _ int) reflect.Value {
	v := smallVV{}
	for _, id := range []string{"a", "b", "c", "d"} {
		if r.Intn(3) > 0 {
			v[id] = uint64(r.Intn(3))
		}
	}
	return reflect.ValueOf(v)
}

func TestVVProperties(t *testing.T) {
	cfg := &quick.Config{MaxCount: 5000}
	agree := func(a, b smallVV) bool { return VV(a).Compare(VV(b)) == naiveCompare(VV(a), VV(b)) }
	if err := quick.Check(agree, cfg); err != nil {
		t.Error("compare vs reference:", err)
	}
	antisym := func(a, b smallVV) bool {
		x, y := VV(a).Compare(VV(b)), VV(b).Compare(VV(a))
		switch x {
		case Lesser:
			return y == Greater
		case Greater:
			return y == Lesser
		}
		return x == y
	}
	if err := quick.Check(antisym, cfg); err != nil {
		t.Error("antisymmetry:", err)
	}
	mergeDominates := func(a, b smallVV) bool {
		m := VV(a).Merge(VV(b))
		oa, ob := m.Compare(VV(a)), m.Compare(VV(b))
		return (oa == Greater || oa == Equal) && (ob == Greater || ob == Equal) &&
			m.Compare(VV(b).Merge(VV(a))) == Equal
	}
	if err := quick.Check(mergeDominates, cfg); err != nil {
		t.Error("merge is an upper bound and commutative:", err)
	}
	incGreater := func(a smallVV) bool { return VV(a).Inc("b").Compare(VV(a)) == Greater }
	if err := quick.Check(incGreater, cfg); err != nil {
		t.Error("inc:", err)
	}
}
