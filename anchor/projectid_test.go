package anchor

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/crow-sync/crow/projects"
	"github.com/crow-sync/crow/state"
	"github.com/crow-sync/crow/store"
	"github.com/crow-sync/crow/store/storetest"
)

// mapVersions is a Versions over a map (version → state hash) of one project.
type mapVersions map[uint64]string

func (m mapVersions) Latest(project string) (*state.Version, error) {
	var top uint64
	for v := range m {
		top = max(top, v)
	}
	return m.Version(project, top)
}

func (m mapVersions) Version(project string, n uint64) (*state.Version, error) {
	h, ok := m[n]
	if !ok {
		return nil, fmt.Errorf("project %q version %d: %w", project, n, projects.ErrNoState)
	}
	return &state.Version{Project: project, Version: n, StateHash: h}, nil
}

// A satellite holds home's replicated anchor records but not the seed: with
// RecordsProjectID it names the project on chain as home does, reads the
// anchors home made on a real embedded chain, and reports the same
// project_id as home's Verifier with SeedProjectID.
func TestVerifierWithoutSeedReadsHomesAnchors(t *testing.T) {
	home := storetest.Start(t, t.TempDir())
	seed := goldenSeed()
	ch := openEmbedded(t, t.TempDir(), seed.AnchorKey())
	ctx := testCtx(t)
	versions := mapVersions{1: HashHex(hashOf("v1")), 2: HashHex(hashOf("v2"))}
	for v, h := range versions {
		data, _ := json.Marshal(map[string]any{"project": "crow", "version": v, "state_hash": h})
		if _, err := home.Writer.Write(ctx, store.Mutation{Table: store.TableStateVersions,
			RowID: fmt.Sprintf("crow/%020d", v), Op: store.OpPut, Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	if err := NewWorker(WorkerConfig{DB: home.DB, Writer: home.Writer, Chain: ch, Seed: seed, Interval: time.Hour}).Round(ctx); err != nil {
		t.Fatal(err)
	}

	// The satellite: the anchors table as replicated, nothing else.
	sat := storetest.Start(t, t.TempDir())
	var rows []store.Mutation
	if err := home.DB.View(func(txn *store.Txn) error {
		return txn.ScanRows(store.TableAnchors, func(r *store.Row) error {
			rows = append(rows, store.Mutation{Table: r.Table, RowID: r.RowID, Op: store.OpPut, Data: r.Data})
			return nil
		})
	}); err != nil || len(rows) != 2 { // the root (its batch names the two versions), the chain
		t.Fatalf("home's records: %d %v", len(rows), err)
	}
	if _, err := sat.Writer.Write(ctx, rows...); err != nil {
		t.Fatal(err)
	}
	if id, ok, err := RecordedProjectID(sat.DB, "crow"); err != nil || !ok || id != seed.ProjectIDHash("crow") {
		t.Fatalf("RecordedProjectID = %x %v %v", id, ok, err)
	}

	want, err := Verifier{DB: home.DB, Chain: ch, ProjectID: SeedProjectID(seed), Versions: versions}.VerifyProject(ctx, "crow")
	if err != nil || !want.Verified || want.ProjectID != HashHex(seed.ProjectIDHash("crow")) {
		t.Fatalf("home's report: %+v %v", want, err)
	}
	got, err := Verifier{DB: sat.DB, Chain: ch, ProjectID: RecordsProjectID(sat.DB), Versions: versions}.VerifyProject(ctx, "crow")
	if err != nil || !got.Verified || got.ProjectID != want.ProjectID || got.Chain == nil || len(got.Versions) != 2 {
		t.Fatalf("satellite's report: %+v %v", got, err)
	}
	for i, c := range got.Versions {
		if c.Status != StatusFinal || !c.Match || c.RootID == 0 || c.RootID != want.Versions[i].RootID || c.TxHash == "" ||
			c.Root != want.Versions[i].Root || c.Packet == nil || c.Packet.CrowID != seed.CrowID() {
			t.Errorf("satellite, version %d: %+v (home: %+v)", c.Version, c, want.Versions[i])
		}
	}
}
