package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/audit"
	"github.com/crow-sync/crow/home"
	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/store"
)

// crow audit passes on a home with numbered memories and a state version
// (also once they are anchored on the embedded chain); after one memory's
// content is rewritten in the store, with its content_hash kept, it exits
// non-zero and names that memory by id and number.
func TestAuditNamesAnAlteredMemory(t *testing.T) {
	d := NewDaemon(t, "home", nil)
	d.Start()
	writeN(t, d, 12, "audit")
	var victim memory.Memory
	Eventually(t, syncTimeout, "every memory numbered", func() bool {
		page, err := Call(d, app.MemoryList, app.MemoryListIn{Limit: 100})
		if err != nil || len(page.Memories) != 12 {
			return false
		}
		for _, m := range page.Memories {
			if m.Number == nil || m.EventHash == nil {
				return false
			}
			if *m.Number == 5 {
				victim = m
			}
		}
		return true
	})
	op, _ := json.Marshal(map[string]any{"op": "add_decision", "title": "Audit", "statement": "audits recompute",
		"evidence_memory_ids": []uint64{1, 5}})
	Must(d, app.ProjectConsolidate, app.ConsolidateIn{Project: "default", Ops: []json.RawMessage{op}})

	out := d.MustCLI("audit", "--page", "5")
	if !strings.Contains(out, "ok: every recomputed hash matches") {
		t.Fatalf("crow audit on a clean store:\n%s", out)
	}
	// Once anchored, the anchors are checked on the chain.
	Eventually(t, syncTimeout, "memories and the state version anchored and checked on chain", func() bool {
		r, err := Call(d, app.AuditRun, app.AuditIn{})
		return err == nil && r.OK && r.Chain != "" && r.Check(audit.CheckMemoryAnchor).OK == 12 && r.Check(audit.CheckStateAnchor).OK == 1
	})
	var rep audit.Report
	if err := json.Unmarshal([]byte(d.MustCLI("audit", "default", "--json")), &rep); err != nil || !rep.OK || rep.Check(audit.CheckEvidenceRoot).OK != 1 {
		t.Fatalf("crow audit default --json: %+v, %v", rep, err)
	}

	// Offline, rewrite #5's content and keep its content_hash.
	d.Stop()
	db, err := store.Open(home.PathsOf(d.Home).DBDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(context.Background(), func(txn *store.Txn) error {
		r, err := txn.GetRow(store.TableMemories, victim.ID)
		if err != nil {
			return err
		}
		var data map[string]any
		if err := json.Unmarshal(r.Data, &data); err != nil {
			return err
		}
		data["content"] = "audit note 4, quietly rewritten"
		if r.Data, err = json.Marshal(data); err != nil {
			return err
		}
		_, err = txn.PutRow(r)
		return err
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	d.Start()

	stdout, stderr, err := d.CLI("audit")
	if err == nil {
		t.Fatalf("crow audit exits 0 on an altered store:\n%s", stdout)
	}
	want := "MISMATCH content_hash: memory " + victim.ID + " #5"
	if !strings.Contains(stdout, want) || !strings.Contains(stderr, "audit failed: 1 mismatches") {
		t.Fatalf("crow audit does not name the memory (want %q):\nstdout: %s\nstderr: %s", want, stdout, stderr)
	}
	t.Logf("crow audit:\n%s%s", stdout, stderr)
}
