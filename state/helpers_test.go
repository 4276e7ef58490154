package state

import (
	"crypto/sha3"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

const testProject = "sistema-pagos"

// Memories of the test evidence: 1…testMemories belong to testProject and have event
// hashes; memOther belongs to another project; memUnnumbered has no event hash yet.
const (
	testMemories   = 300
	memOther       = 900
	memUnnumbered  = 901
	highestTestMem = 1000
)

var testTime = time.Date(2026, 9, 13, 22, 2, 35, 0, time.UTC)

// testEvidence is the fixed Evidence of the tests. calls counts lookups per number.
type testEvidence struct{ calls map[uint64]int }

func newTestEvidence() *testEvidence { return &testEvidence{calls: map[uint64]int{}} }

func eventHash(n uint64) [32]byte { return sha3.Sum256(fmt.Appendf(nil, "event-%d", n)) }

func (e *testEvidence) Lookup(n uint64) (MemoryRef, bool) {
	if e.calls != nil {
		e.calls[n]++
	}
	switch {
	case n >= 1 && n <= testMemories:
		return MemoryRef{Number: n, Project: testProject, EventHash: eventHash(n), HasEventHash: true}, true
	case n == memOther:
		return MemoryRef{Number: n, Project: "otro", EventHash: eventHash(n), HasEventHash: true}, true
	case n == memUnnumbered:
		return MemoryRef{Number: n, Project: testProject}, true
	}
	return MemoryRef{}, false
}

// raws turns JSON texts into ops.
func raws(ops ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(ops))
	for i, o := range ops {
		out[i] = json.RawMessage(o)
	}
	return out
}

// build applies ops as one request on prev and fails the test on a request error or a
// rejected op.
func build(t testing.TB, prev *Version, ops ...string) *Version {
	t.Helper()
	until := uint64(0)
	if prev != nil {
		until = prev.State.Meta.ConsolidatedUntilEvent
	}
	res, err := Apply(prev, testProject, Request{Ops: raws(ops...), ConsolidatedUntilEvent: until, GeneratedAt: testTime}, newTestEvidence(), highestTestMem)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if len(res.Rejected) > 0 {
		t.Fatalf("rejected: %+v", res.Rejected)
	}
	if res.Version == nil {
		return prev
	}
	return res.Version
}

// applyOne applies one op on prev and returns the new version or the rejection error.
func applyOne(t testing.TB, prev *Version, op string) (*Version, string) {
	t.Helper()
	until := uint64(0)
	if prev != nil {
		until = prev.State.Meta.ConsolidatedUntilEvent
	}
	res, err := Apply(prev, testProject, Request{Ops: raws(op), ConsolidatedUntilEvent: until, GeneratedAt: testTime}, newTestEvidence(), highestTestMem)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if len(res.Rejected) == 1 {
		if !res.Unchanged || res.Version != nil || res.AppliedCount != 0 {
			t.Fatalf("rejected op but result %+v", res)
		}
		return nil, res.Rejected[0].Error
	}
	if res.Version == nil || res.AppliedCount != 1 || res.Unchanged {
		t.Fatalf("applied op but result %+v", res)
	}
	return res.Version, ""
}

func canonical(t testing.TB, s State) string {
	t.Helper()
	c, err := Canonical(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(c)
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
