package e2e

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// `crow demo` runs the whole story on three real daemons of its own and
// exits 0; its narrative reports what it measured (2 entries crossed the
// wire for the offline satellite, one conflict record, a federated search
// with every instance ok), and it leaves no directory behind.
func TestDemo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tmp := t.TempDir()
	cmd := exec.CommandContext(ctx, crowBin, "demo")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("crow demo: %v\n%s", err, out)
	}
	text := string(out)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`laptop instance [0-9a-f-]{36} .* joined with invite [0-9a-f]{12}`),
		regexp.MustCompile(`vps +instance [0-9a-f-]{36} .* joined with invite [0-9a-f]{12}`),
		regexp.MustCompile(`invite used a second time is refused: .*already used`),
		regexp.MustCompile(`all three instances hold all 3 memories`),
		// Exactly what it was missing crossed the wire (checked below).
		regexp.MustCompile(`it was missing (\d+) feed entries .*, and (\d+) crossed the wire`),
		regexp.MustCompile(`the same conflict record [0-9a-f]{32} on all three`),
		regexp.MustCompile(`conflict is resolved everywhere`),
		regexp.MustCompile(`statuses: .*\blaptop=ok\b`),
		regexp.MustCompile(`statuses: .*\bhome=ok\b`),
		// The vps was restarted a moment earlier: a laptop health probe that
		// happened to run in that window marks it offline (skipped) for one
		// probe interval; anything else is wrong.
		regexp.MustCompile(`statuses: .*(\bvps=ok\b.*partial=false|\bvps=skipped_offline\b.*partial=true)`),
		regexp.MustCompile(`forwarded to home: version 1, 3 ops applied`),
		regexp.MustCompile(`state_hash 0x[0-9a-f]{64} .*the same on all three`),
		regexp.MustCompile(`version 1 is final: Merkle root 0x[0-9a-f]{16}… \(root #\d+\) in block \d+ of chain 1337`),
		regexp.MustCompile(`verified from the packet and the chain alone \(8 checks, over http://127\.0\.0\.1:\d+/v1/chain/rpc\)`),
		regexp.MustCompile(`the 5 memories' event hashes are on chain too`),
		regexp.MustCompile(`its new memory reached neither`),
		regexp.MustCompile(`Done in [0-9.]+s`),
	} {
		if !want.MatchString(text) {
			t.Errorf("demo output lacks %q:\n%s", want, text)
		}
	}
	if m := regexp.MustCompile(`it was missing (\d+) feed entries .*, and (\d+) crossed the wire`).FindStringSubmatch(text); m == nil || m[1] != m[2] || m[1] == "0" {
		t.Errorf("the offline catch-up moved other than what was missing: %v", m)
	}
	left, _ := os.ReadDir(tmp)
	for _, e := range left {
		if strings.HasPrefix(e.Name(), "crow-demo-") {
			t.Errorf("the demo left %s behind", e.Name())
		}
	}
}
