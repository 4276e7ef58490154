package apply

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/crow-sync/crow/store"
)

func TestStateCodecRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	ids := []string{"a", "b", "instance-ü", ""}
	vv := func() store.VV {
		v := store.VV{}
		for range rng.IntN(4) {
			v[ids[rng.IntN(len(ids))]] = rng.Uint64()
		}
		return v
	}
	for range 2000 {
		st := &rowState{Seen: vv()}
		for range rng.IntN(5) {
			v := &version{Origin: ids[rng.IntN(len(ids))], Lamport: rng.Uint64(), VV: vv(), Deleted: rng.IntN(2) == 0,
				TS: rng.Int64() - 1<<62}
			if rng.IntN(5) > 0 {
				v.Data = json.RawMessage(`{"v":"x y","n":[1,2]}`)[:1+rng.IntN(20)]
			}
			st.Versions = append(st.Versions, v)
		}
		b := encodeState(st)
		got, err := decodeState(b)
		if err != nil {
			t.Fatal(err)
		}
		if st.Versions == nil {
			st.Versions = []*version{}
		}
		if !reflect.DeepEqual(got, st) {
			t.Fatalf("\ngot  %+v\nwant %+v", got, st)
		}
		for i := range b { // truncations never decode (nor panic)
			if _, err := decodeState(b[:i]); err == nil {
				t.Fatalf("truncated at %d decoded", i)
			}
		}
		// The JSON form of earlier builds still reads.
		j, err := json.Marshal(st)
		if err != nil {
			continue // truncated data is not JSON
		}
		if got, err := decodeState(j); err != nil || len(got.Versions) != len(st.Versions) || !reflect.DeepEqual(got.Seen, st.Seen) {
			t.Fatalf("legacy: %v %+v", err, got)
		}
	}
}
