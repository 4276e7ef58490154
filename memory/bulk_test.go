package memory

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"testing"

	"github.com/crow-sync/crow/store"
)

// TestAddManyLargeCall: a call large enough to be validated and encoded on several cores
// refuses every bad item by its index (and writes nothing), and stores a good call's
// memories in order: ids ascending as the items, each one read back as returned.
func TestAddManyLargeCall(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	s, _ := newService(t)
	ctx := context.Background()
	ins := make([]CreateInput, MaxBulk)
	for i := range ins {
		ins[i] = CreateInput{Content: fmt.Sprintf("memory %d of a large call", i), Project: fmt.Sprintf("p%d", i%3),
			Tags: []string{fmt.Sprint("t", i%5)}, Importance: ptr(1 + i%10)}
	}
	bad := slices.Clone(ins)
	for _, i := range []int{3, 500, 999} {
		bad[i].Content = ""
	}
	bad[640].Importance = ptr(11)
	_, err := s.AddMany(ctx, bad)
	var be *BulkError
	if !errors.As(err, &be) {
		t.Fatalf("a call with bad items: %v, want a *BulkError", err)
	}
	var idx []int
	for _, it := range be.Items {
		idx = append(idx, it.Index)
	}
	if !slices.Equal(idx, []int{3, 500, 640, 999}) {
		t.Fatalf("refused items %v, want [3 500 640 999]", idx)
	}
	if c, err := s.db.CountRows("memories"); err != nil || c != (store.RowCounts{}) {
		t.Fatalf("after a refused call: %+v memories (%v)", c, err)
	}

	out, err := s.AddMany(ctx, ins)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(ins) {
		t.Fatalf("%d memories stored of %d", len(out), len(ins))
	}
	for i, m := range out {
		if m.Content != ins[i].Content || m.Project != ins[i].Project || m.Importance != *ins[i].Importance || m.ContentHash != ContentHash(ins[i].Content) {
			t.Fatalf("memory %d is %+v, from %+v", i, m, ins[i])
		}
		if i > 0 && m.ID <= out[i-1].ID {
			t.Fatalf("memory %d's id %s does not sort after %s", i, m.ID, out[i-1].ID)
		}
		got, err := s.Get(ctx, m.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Fatalf("memory %d read back as %+v, returned %+v", i, got, m)
		}
	}
}
