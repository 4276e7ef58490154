package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/crow-sync/crow/anchor"
	"github.com/crow-sync/crow/app"
)

// gethDevKey is geth --dev's well-known developer key (cmd/utils.DeveloperKey),
// the account geth --dev funds.
const gethDevKey = "b71c71a67e1177ad4e901695e1b4b9ee17ae16c6668d313eac2f96dbcda3f291"

// needTool returns the path of a tool the test needs, from env or PATH. In
// CI (CI=true) a missing tool fails the test; elsewhere it skips it.
func needTool(t *testing.T, env, name, how string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	if p, err := exec.LookPath(name); err == nil && name != "verify.mjs" {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is needed (set %s): %s", name, env, how)
	}
	t.Skipf("%s not available (set %s): %s", name, env, how)
	return ""
}

// jsVerifier runs the standalone third-party verifier (tools/verify-js, ethers +
// @openzeppelin/merkle-tree, no crow code) on a packet file.
func jsVerifier(t *testing.T, script, packet string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{script, packet}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// anchorPacket consolidates project on d and waits for version 1's public
// packet to reach status want; it returns the packet's raw JSON and how long
// that took from the consolidation's answer.
func anchorPacket(t *testing.T, d *Daemon, project, want string) (anchor.Packet, []byte, time.Duration) {
	t.Helper()
	if _, err := Call(d, app.ProjectConsolidate, app.ConsolidateIn{Project: project,
		Ops: ops(`{"op": "set_focus", "focus": "verifiable by anyone"}`)}); err != nil {
		t.Fatalf("consolidation: %v", err)
	}
	start := time.Now()
	var raw []byte
	var p anchor.Packet
	Eventually(t, 3*time.Minute, "version 1's packet "+want, func() bool {
		code, body := d.DoRaw("GET", "/v1/project/"+project+"/state/anchor?version=1")
		if code != 200 {
			return false
		}
		var doc struct {
			Packet *json.RawMessage `json:"packet"`
		}
		if json.Unmarshal([]byte(body), &doc) != nil || doc.Packet == nil {
			return false
		}
		raw = *doc.Packet
		return json.Unmarshal(raw, &p) == nil && (p.Status == want || (want == anchor.StatusIncluded && p.Status == anchor.StatusFinal))
	})
	return p, raw, time.Since(start)
}

func writeFile(t *testing.T, path string, b []byte) string {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// tamperedHash is raw with another state hash: the leaf no longer leads to root.
func tamperedHash(t *testing.T, raw []byte) []byte {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	h := []byte(m["state_hash"].(string))
	if h[len(h)-1] == '0' {
		h[len(h)-1] = '1'
	} else {
		h[len(h)-1] = '0'
	}
	m["state_hash"] = string(h)
	out, _ := json.Marshal(m)
	return out
}

// checkThirdParty runs the standalone JS verifier and crow verify on the
// packet (both from the chain alone), then both on a tampered copy.
func checkThirdParty(t *testing.T, d *Daemon, script string, raw []byte, rpc string) {
	t.Helper()
	dir := t.TempDir()
	good := writeFile(t, filepath.Join(dir, "packet.json"), raw)
	bad := writeFile(t, filepath.Join(dir, "tampered.json"), tamperedHash(t, raw))
	if out, err := jsVerifier(t, script, good, "--rpc", rpc); err != nil || !strings.Contains(out, "verified") {
		t.Fatalf("the JS verifier refused a good packet (%v):\n%s", err, out)
	}
	if out, err := jsVerifier(t, script, bad, "--rpc", rpc); err == nil {
		t.Fatalf("the JS verifier accepted a tampered state hash:\n%s", out)
	}
	if out, errOut, err := d.CLI("verify", "--packet", good, "--rpc", rpc); err != nil || !strings.Contains(out, "verified") {
		t.Fatalf("crow verify --packet refused a good packet (%v):\n%s%s", err, out, errOut)
	}
	if out, errOut, err := d.CLI("verify", "--packet", bad, "--rpc", rpc); err == nil || !strings.Contains(out+errOut, "mismatch") {
		t.Fatalf("crow verify --packet accepted a tampered state hash (%v):\n%s%s", err, out, errOut)
	}
}

// TestThirdPartyVerifiesEmbedded: on the embedded chain, a script written
// from the SPEC alone (tools/verify-js) verifies an anchored version with
// only the packet and home's public, read-only /v1/chain/rpc, and rejects a
// tampered state hash; crow verify agrees.
func TestThirdPartyVerifiesEmbedded(t *testing.T) {
	script := needTool(t, "CROW_VERIFY_JS", "verify.mjs", "npm ci in tools/verify-js (.ci/run does it)")
	home := NewDaemon(t, "home", nil)
	home.Start()
	p, raw, took := anchorPacket(t, home, "public", anchor.StatusFinal)
	t.Logf("consolidation → final on the embedded chain: %s", took)
	if p.RPCURL != home.URL()+"/v1/chain/rpc" {
		t.Fatalf("packet rpc_url = %q, want home's public chain RPC", p.RPCURL)
	}
	checkThirdParty(t, home, script, raw, p.RPCURL)
	out := home.MustCLI("verify", "public")
	// No checkpoints here: a verifier that requires one for roots older
	// than a second refuses once the root is that old; within the grace it
	// accepts. The root's age counts from its block's time, which the
	// embedded chain may set ahead of the wall clock (a block at least a
	// second after its parent), so the wait is from that time.
	home.MustCLI("verify", "public", "--require-checkpoint", "1h")
	m := regexp.MustCompile(`root #\d+ \(([^)]+)\)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("crow verify printed no root time:\n%s", out)
	}
	at, err := time.Parse(time.RFC3339, m[1])
	if err != nil {
		t.Fatalf("root time %q: %v", m[1], err)
	}
	time.Sleep(time.Until(at.Add(1100 * time.Millisecond)))
	if out, errOut, err := home.CLI("verify", "public", "--require-checkpoint", "1s"); err == nil || !strings.Contains(out+errOut, "checkpoint") {
		t.Fatalf("crow verify --require-checkpoint accepted a root no checkpoint covers (%v):\n%s%s", err, out, errOut)
	}
}

// startGethDev runs a real geth --dev (instant dev chain, a block a second),
// reachable only on loopback HTTP, and returns its URL.
func startGethDev(t *testing.T, bin string) string {
	t.Helper()
	port := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--dev", "--dev.period", "1", "--datadir", t.TempDir(),
		"--http", "--http.addr", "127.0.0.1", "--http.port", fmt.Sprint(port), "--http.api", "eth,net,web3",
		"--ipcdisable", "--nodiscover", "--maxpeers", "0", "--port", "0", "--authrpc.addr", "127.0.0.1", "--authrpc.port", fmt.Sprint(freePort(t)))
	logf, err := os.Create(filepath.Join(t.TempDir(), "geth.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting geth: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("---- geth log ----\n%s", tail(string(b), 60))
		}
	})
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	Eventually(t, 60*time.Second, "geth --dev to answer", func() bool {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return url
}

func tail(s string, n int) string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TestThirdPartyVerifiesGethDev: home anchors on a real geth --dev (RPC
// mode); the standalone script and crow verify check the packet from geth
// alone and reject a tampered one; a restart keeps the persisted contract
// and the old version still verifies; a new version anchors on the same
// contract.
func TestThirdPartyVerifiesGethDev(t *testing.T) {
	geth := needTool(t, "CROW_GETH", "geth", "go install github.com/ethereum/go-ethereum/cmd/geth@v1.17.10 (.ci/run does it)")
	script := needTool(t, "CROW_VERIFY_JS", "verify.mjs", "npm ci in tools/verify-js (.ci/run does it)")
	url := startGethDev(t, geth)
	home := NewDaemon(t, "home", nil)
	keyFile := writeFile(t, filepath.Join(t.TempDir(), "dev.key"), []byte(gethDevKey))
	writeFile(t, filepath.Join(home.Home, "config.toml"), []byte(fmt.Sprintf(
		"[chain]\nrpc_url = %q\nkey_file = %q\nconfirmations = 2\npublic_rpc_url = %q\nreplace_after = \"5s\"\n", url, keyFile, url)))
	home.Start()
	p, raw, took := anchorPacket(t, home, "geth", anchor.StatusIncluded)
	t.Logf("consolidation → included on geth --dev: %s (chain %d, contract %s)", took, p.ChainID, p.Contract)
	if p.RPCURL != url || p.ChainID != 1337 {
		t.Fatalf("packet = %+v", p)
	}
	checkThirdParty(t, home, script, raw, url)

	// A restart keeps the contract (chain-rpc.json) and the old version
	// still verifies; the next version goes to the same contract.
	home.Stop()
	home.Start()
	if _, err := Call(home, app.ProjectConsolidate, app.ConsolidateIn{Project: "geth",
		Ops: ops(`{"op": "set_phase", "phase": "restarted"}`)}); err != nil {
		t.Fatal(err)
	}
	Eventually(t, 3*time.Minute, "version 2 anchored after the restart", func() bool {
		out, _, err := home.CLI("verify", "geth", "--json")
		return err == nil && strings.Count(out, `"verdict": "verified"`) == 2
	})
	code, body := home.DoRaw("GET", "/v1/project/geth/state/anchor?version=2")
	var doc struct{ Packet anchor.Packet }
	if code != 200 || json.Unmarshal([]byte(body), &doc) != nil || doc.Packet.Contract != p.Contract {
		t.Fatalf("version 2 after the restart: %d %s (want contract %s)", code, body, p.Contract)
	}
	home.MustCLI("verify", "geth", "--rpc", url)
}

// TestChainStatus: crow chain status on home with the embedded chain shows
// the account, its balance, the public RPC and the root anchored.
func TestChainStatus(t *testing.T) {
	home := NewDaemon(t, "home", nil)
	home.Start()
	anchorPacket(t, home, "status", anchor.StatusFinal)
	var st anchor.ChainStatus
	Eventually(t, 30*time.Second, "a final root in crow chain status --json", func() bool {
		out, _, err := home.CLI("chain", "status", "--json")
		return err == nil && json.Unmarshal([]byte(out), &st) == nil && st.Roots[anchor.StatusFinal] >= 1
	})
	if st.Kind != anchor.KindEmbedded || st.ChainID != 1337 || st.Account == "" || st.BalanceWei == "" || st.Worker == nil || st.Worker.States < 1 ||
		st.RPCURL != home.URL()+"/v1/chain/rpc" || st.Last == nil || st.Last.Status != anchor.StatusFinal || len(st.Pending) != 0 {
		t.Fatalf("chain status = %+v", st)
	}
	out := home.MustCLI("chain", "status")
	for _, want := range []string{"chain     embedded, chain id 1337", "balance", "roots     1 final", "pending transactions: none"} {
		if !strings.Contains(out, want) {
			t.Fatalf("crow chain status lacks %q:\n%s", want, out)
		}
	}
	if _, _, err := home.CLI("chain", "bogus"); err == nil {
		t.Fatal("crow chain bogus exited 0")
	}
}
