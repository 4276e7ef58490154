package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/crow-sync/crow/anchor"
	"github.com/crow-sync/crow/app"
)

// A memory's proof on a real home daemon: written, numbered #1 and
// anchored on the embedded chain, `crow memory proof 1 --json` says
// verified, with the event hash recomputed and the content decrypted from
// the chain under its data key equal to what was written; the readable
// form ends with the status, and an unknown number exits non-zero.
func TestMemoryProofOnHome(t *testing.T) {
	home := NewDaemon(t, "home", nil)
	home.Start()
	m := Must(home, app.MemoryCreate, app.MemoryCreateIn{Content: "prove me on chain", Project: "chain"})
	var p app.MemoryProofDoc
	Eventually(t, syncTimeout, "memory #1 numbered, anchored and proved", func() bool {
		out, _, err := home.CLI("memory", "proof", "1", "--json")
		if err != nil {
			return false
		}
		p = app.MemoryProofDoc{}
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			t.Fatalf("crow memory proof 1 --json printed %q: %v", out, err)
		}
		return p.Status != anchor.StatusPending
	})
	if p.Status != anchor.StatusVerified || p.MemoryID != m.ID || !p.Event.Match || p.Event.Recomputed != p.Event.EventHash {
		t.Fatalf("proof = %+v", p)
	}
	if p.Anchor == nil || p.Anchor.TxHash == "" || p.Anchor.Encryption != anchor.EncryptionDataKey ||
		p.Onchain == nil || !p.Onchain.Found || p.Onchain.Format != 2 {
		t.Fatalf("anchor %+v onchain %+v", p.Anchor, p.Onchain)
	}
	if c := p.Content; c == nil || c.Key != anchor.KeyUsedData || c.Content != "prove me on chain" || !c.Match || c.Hash != m.ContentHash {
		t.Fatalf("content = %+v", p.Content)
	}
	if text := home.MustCLI("memory", "proof", "1"); !strings.Contains(text, "status: verified") || !strings.Contains(text, "prove me on chain") {
		t.Fatalf("crow memory proof 1 printed:\n%s", text)
	}
	if _, stderr, err := home.CLI("memory", "proof", "99"); err == nil || !strings.Contains(stderr, "no memory has number 99") {
		t.Fatalf("an unknown number: err %v, stderr %q", err, stderr)
	}
}
