package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// fuzzSeeds are the ops of the table tests and of the base state.
func fuzzSeeds() []string {
	seeds := slices.Clone(baseOps)
	for _, c := range opCases() {
		if len(c.op) < 4096 {
			seeds = append(seeds, c.op)
		}
	}
	return seeds
}

// FuzzDecodeOp: decoding never panics, and an op it accepts has a known name and decodes
// the same way again.
func FuzzDecodeOp(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		name, o, err := decodeOp(data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if _, ok := opTypes[name]; !ok {
			t.Fatalf("accepted unknown op %q", name)
		}
		name2, o2, err := decodeOp(data)
		if err != nil || name2 != name || !reflect.DeepEqual(o, o2) {
			t.Fatalf("second decode: %q %v %v", name2, o2, err)
		}
	})
}

// FuzzApply applies arbitrary ops (one per line) on the base version: Apply never panics,
// accounts for every op, and any version it makes verifies, links to the base, survives a
// JSON round trip and is the same when built again.
func FuzzApply(f *testing.F) {
	f.Add([]byte(strings.Join(baseOps, "\n")), uint16(20))
	for _, s := range fuzzSeeds() {
		f.Add([]byte(s), uint16(0))
	}
	base := baseVersion(f)
	f.Fuzz(func(t *testing.T, data []byte, until uint16) {
		var ops []json.RawMessage
		for line := range bytes.SplitSeq(data, []byte("\n")) {
			ops = append(ops, json.RawMessage(line))
		}
		req := Request{Ops: ops, ConsolidatedUntilEvent: uint64(until), GeneratedAt: testTime}
		res, err := Apply(base, testProject, req, newTestEvidence(), highestTestMem)
		if err != nil {
			if !errors.Is(err, ErrTooManyOps) && !errors.Is(err, ErrUntilAhead) {
				t.Fatalf("unexpected request error %v", err)
			}
			return
		}
		if len(res.Applied)+len(res.Rejected) != len(ops) || res.AppliedCount != len(res.Applied) || res.Unchanged != (res.Version == nil) {
			t.Fatalf("result does not account for %d ops: %+v", len(ops), res)
		}
		out, err := json.Marshal(res)
		if err != nil {
			t.Fatalf("result does not encode: %v", err)
		}
		if res.Version == nil {
			return
		}
		if err := VerifyLink(*base, *res.Version); err != nil {
			t.Fatal(err)
		}
		var back Version
		if err := json.Unmarshal(mustMarshal(t, res.Version), &back); err != nil {
			t.Fatal(err)
		}
		if err := Verify(back); err != nil {
			t.Fatalf("after a JSON round trip: %v", err)
		}
		again, err := Apply(base, testProject, req, newTestEvidence(), highestTestMem)
		if err != nil || !bytes.Equal(mustMarshal(t, again), out) {
			t.Fatal("a second Apply gave another result")
		}
	})
}

// FuzzCanonicalJSON: whatever canonicalJSON accepts is valid JSON, means the same, and is
// its own canonical form.
func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range []string{`{"b":[1,{"z":null,"a":[]}],"a":{"y":true,"x":"x"}}`, `"\u20ac\ud83d\ude00"`, `1E2`, `-0.0`, `[]`} {
		f.Add([]byte(s))
	}
	f.Add(mustMarshal(f, goldenState()))
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := canonicalJSON(data)
		if err != nil {
			if !errors.Is(err, ErrNotCanonicalizable) {
				t.Fatalf("error %v does not wrap ErrNotCanonicalizable", err)
			}
			return
		}
		if !json.Valid(data) || !json.Valid(out) {
			t.Fatalf("accepted %q → %q", data, out)
		}
		again, err := canonicalJSON(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("not idempotent: %q → %q → %q, %v", data, out, again, err)
		}
		var a, b any
		if json.Unmarshal(data, &a) != nil || json.Unmarshal(out, &b) != nil || !reflect.DeepEqual(a, b) {
			t.Fatalf("meaning changed: %q → %q", data, out)
		}
	})
}

func mustMarshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
