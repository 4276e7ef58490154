package audit_test

import (
	"context"
	"testing"
	"time"

	"github.com/crow-sync/crow/audit"
	"github.com/crow-sync/crow/memory"
)

// versionsSource is a Source with the memory_versions layout: every content
// version numbered, the live rows checked for their content hash only.
type versionsSource struct{ ms []audit.Memory }

func (s versionsSource) Kind() string { return audit.KindVersions }
func (s versionsSource) Memories(ctx context.Context, project, after string, limit int, fn func(audit.Memory) error) (string, error) {
	for _, m := range s.ms {
		if err := fn(m); err != nil {
			return "", err
		}
	}
	return "", nil
}
func (s versionsSource) CountMemories(context.Context, string) (uint64, error) {
	return uint64(len(s.ms)), nil
}
func (s versionsSource) Numbers(ctx context.Context, fn func(audit.NumberRecord) error) error {
	for _, m := range s.ms {
		if !m.Row {
			if err := fn(audit.NumberRecord{Number: m.Number, MemoryID: m.ID, EventHash: m.EventHash}); err != nil {
				return err
			}
		}
	}
	return nil
}
func (s versionsSource) StateProjects(context.Context) ([]string, error) { return nil, nil }
func (s versionsSource) StateVersions(context.Context, string, func(audit.StateRow) error) error {
	return nil
}
func (s versionsSource) CountStates(context.Context, string) (uint64, error) { return 0, nil }

func version(id string, n uint64, content string) audit.Memory {
	at := time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC)
	h := memory.ContentHash(content)
	return audit.Memory{ID: id, Number: n, Project: "crow", Content: content, ContentHash: h, CreatedAt: at,
		Origin: "inst", EventHash: memory.EventHash(n, "crow", h, at, "inst")}
}

// With memory_versions, an edit is a new version whose event hash checks
// exactly; a forgotten version is checked for its number and event hash only.
func TestVersionsLayout(t *testing.T) {
	v1, v2, v3 := version("m1", 1, "first"), version("m1", 2, "edited"), version("m2", 3, "secret")
	v1.Record = &audit.NumberRecord{Number: 2, MemoryID: "m1", EventHash: v2.EventHash}
	v3.Content, v3.ContentHash, v3.Forgotten = "", "", true
	row := audit.Memory{ID: "m1", Row: true, Content: "edited", ContentHash: memory.ContentHash("edited"), Record: v1.Record}
	r, err := audit.Run(context.Background(), versionsSource{ms: []audit.Memory{row, v1, v2, v3}}, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK || r.Source != audit.KindVersions {
		t.Fatalf("versions layout fails:\n%s", mismatches(r))
	}
	if c := r.Check(audit.CheckEventHash); c.OK != 3 || c.Skipped != 0 {
		t.Errorf("event hashes %+v", c)
	}
	if c := r.Check(audit.CheckContentHash); c.OK != 3 || c.Skipped != 1 {
		t.Errorf("content hashes %+v", c)
	}

	// A version whose memory_numbers record disagrees, and a tampered old version.
	v2.Record = &audit.NumberRecord{Number: 2, MemoryID: "m1", EventHash: v1.EventHash}
	v1.Content = "firsT"
	r, err = audit.Run(context.Background(), versionsSource{ms: []audit.Memory{v1, v2, v3}}, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Check(audit.CheckNumbering).Mismatches != 1 || r.Check(audit.CheckContentHash).Mismatches != 1 ||
		r.Mismatches[0].Number != 1 || r.Mismatches[1].Number != 2 {
		t.Errorf("want #1's content and #2's record named:\n%s", mismatches(r))
	}
}
