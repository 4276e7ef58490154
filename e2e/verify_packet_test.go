package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crow-sync/crow/anchor"
	"github.com/crow-sync/crow/anchor/merkle"
	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/home"
	"github.com/crow-sync/crow/state"
)

// The verification packet (SPEC §11) on a real home daemon with its
// embedded chain: a consolidated state version gets a packet, public at GET
// /v1/project/{name}/state/anchor?version=1, that anyone verifies from the
// packet and the chain alone — in Go (anchor.VerifyPacket) and with the CLI
// (crow verify NAME, crow verify --packet FILE); a tampered packet fails.
//
// Two tests: TestVerifyPacketThroughChainRPC reads the chain through the
// packet's own rpc_url (home's public POST /v1/chain/rpc); it skips, saying
// so, while the gateway does not serve that route. TestVerifyPacketAgainstTheChain
// needs no such route: it stops home and opens home's persisted chain itself
// with a loopback JSON-RPC endpoint.

// anchoredPacket starts a home, consolidates version 1 of a project and
// waits until its packet, read from the public endpoint without a key, says
// final. It returns home, the project, the packet and the endpoint's body.
func anchoredPacket(t *testing.T) (*Daemon, string, anchor.Packet, []byte) {
	t.Helper()
	home := NewDaemon(t, "home", nil)
	home.Start()
	const project = "packets"
	id := Must(home, app.MemoryCreate, app.MemoryCreateIn{Content: "every version gets a packet", Project: project}).ID
	var number uint64
	Eventually(t, syncTimeout, "the memory's number", func() bool {
		got := Must(home, app.MemoryGet, app.MemoryID{ID: id})
		if got.Number != nil {
			number = *got.Number
		}
		return got.Number != nil
	})
	v1, err := Call(home, app.ProjectConsolidate, app.ConsolidateIn{Project: project, ConsolidatedUntilEvent: &number, Ops: ops(
		fmt.Sprintf(`{"op": "add_decision", "title": "Packets", "statement": "a verifier needs only the packet and the chain", "evidence_memory_ids": [%d]}`, number))})
	if err != nil || v1.Version != 1 || v1.StateHash == "" {
		t.Fatalf("consolidation = %+v %v", v1, err)
	}
	var body []byte
	var doc struct {
		Packet *anchor.Packet `json:"packet"`
	}
	Eventually(t, syncTimeout, "version 1's packet, final (public, no key)", func() bool {
		status, b := publicGet(t, home, "/v1/project/"+project+"/state/anchor?version=1")
		body = b
		doc.Packet = nil
		return status == 200 && json.Unmarshal(b, &doc) == nil && doc.Packet != nil && doc.Packet.Status == anchor.StatusFinal
	})
	p := *doc.Packet
	if p.Version != 1 || p.StateHash != v1.StateHash || p.Root == "" || p.TxHash == "" || p.BlockNumber == 0 || p.ChainID != 1337 ||
		p.ProjectID == "" || strings.Contains(p.ProjectID, project) || p.AnchoringAddress == "" {
		t.Fatalf("version 1's packet = %+v, want version 1 with state hash %s, in a root on chain 1337", p, v1.StateHash)
	}
	if err := anchor.CheckPacket(p); err != nil {
		t.Fatalf("the packet's proof and binding: %v", err)
	}
	if want := strings.TrimSuffix(home.URL(), "/") + "/v1/chain/rpc"; p.RPCURL != want {
		t.Fatalf("the packet's rpc_url = %q, want home's public %q", p.RPCURL, want)
	}
	return home, project, p, body
}

// publicGet GETs path from d with no credential at all.
func publicGet(t *testing.T, d *Daemon, path string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(d.URL() + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// chainRPCServed reports whether d's gateway serves the public POST
// /v1/chain/rpc (eth_chainId answers 1337); false only when the route does
// not exist (404 or 405).
func chainRPCServed(t *testing.T, d *Daemon) bool {
	t.Helper()
	resp, err := http.Post(d.URL()+"/v1/chain/rpc", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}`))
	if err != nil {
		t.Fatalf("POST /v1/chain/rpc: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed {
		return false
	}
	var r struct {
		Result string `json:"result"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(b, &r) != nil || r.Result != "0x539" {
		t.Fatalf("POST /v1/chain/rpc eth_chainId = %d %s, want 200 and 0x539 (1337)", resp.StatusCode, b)
	}
	return true
}

// writePacket writes p as a packet file.
func writePacket(t *testing.T, name string, p anchor.Packet) string {
	t.Helper()
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// forgery is a packet a verifier must refuse: verdicts are VerifyPacket's
// acceptable verdicts, want what the CLI's output must say.
type forgery struct {
	what     string
	packet   anchor.Packet
	verdicts []string
	want     []string
}

// tampered are the packets a verifier must refuse: another state hash (the
// proof no longer leads to the root: mismatch), and another state hash
// committed by a root of its own (a one-leaf tree: the proof holds, but the
// chain has no such root; VerifyPacket says mismatch, as its failed "root"
// check sets it, where SPEC §11 would say missing — either is a failure).
func tampered(t *testing.T, p anchor.Packet) []forgery {
	t.Helper()
	forged := "0x" + strings.Repeat("ee", 32)
	bad := p
	bad.StateHash = forged
	pid, err1 := state.ParseHash(p.ProjectID)
	sh, err2 := state.ParseHash(forged)
	if err1 != nil || err2 != nil {
		t.Fatalf("parsing hashes: %v %v", err1, err2)
	}
	own := p
	own.StateHash, own.Proof = forged, []string{}
	own.Root = anchor.HashHex(merkle.StateLeaf(pid, p.Version, sh))
	if err := anchor.CheckPacket(own); err != nil {
		t.Fatalf("the one-leaf forgery should pass the proof check: %v", err)
	}
	return []forgery{
		{"a tampered state_hash", bad, []string{anchor.VerdictMismatch}, []string{"mismatch", "FAIL proof"}},
		{"a forged root of its own", own, []string{anchor.VerdictMismatch, anchor.VerdictMissing}, []string{"FAIL root", "is not anchored on this chain"}},
	}
}

// checkVerified fails unless v is verified with every check passed.
func checkVerified(t *testing.T, what string, v anchor.PacketVerdict) {
	t.Helper()
	names := map[string]bool{}
	for _, c := range v.Checks {
		names[c.Name] = true
		if !c.OK {
			t.Errorf("%s: check %s failed: %s", what, c.Name, c.Detail)
		}
	}
	for _, n := range []string{"proof", "binding", "rpc", "chain id", "contract", "owner", "root", "transaction"} {
		if !names[n] {
			t.Errorf("%s: no %q check in %+v", what, n, v.Checks)
		}
	}
	if v.Verdict != anchor.VerdictVerified || v.RootID == 0 {
		t.Errorf("%s: verdict %+v, want verified with a root id", what, v)
	}
}

// cliVerify runs crow verify on d and checks its exit and output: exit 0 and
// "verified from the chain alone" when ok, else non-zero and every want.
func cliVerify(t *testing.T, d *Daemon, ok bool, want []string, args ...string) {
	t.Helper()
	out, errOut, err := d.CLI(append([]string{"verify"}, args...)...)
	all := out + errOut
	t.Logf("crow verify %s: exit %v\n%s", strings.Join(args, " "), err, all)
	switch {
	case ok && (err != nil || !strings.Contains(out, "verified from the chain alone: 1 version(s) checked") || !strings.Contains(out, "verified")):
		t.Errorf("crow verify %s: %v, want exit 0 and verified\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, errOut)
	case !ok && err == nil:
		t.Errorf("crow verify %s exited 0, want a failure\nstdout: %s\nstderr: %s", strings.Join(args, " "), out, errOut)
	}
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("crow verify %s: the output does not say %q\nstdout: %s\nstderr: %s", strings.Join(args, " "), w, out, errOut)
		}
	}
}

// TestVerifyPacketThroughChainRPC verifies the packet through its own
// rpc_url, home's public POST /v1/chain/rpc. Until the gateway serves that
// route it skips, saying so: re-check it once chain.rpc is merged.
func TestVerifyPacketThroughChainRPC(t *testing.T) {
	home, project, p, _ := anchoredPacket(t)
	if !chainRPCServed(t, home) {
		t.Skip("home's gateway does not serve POST /v1/chain/rpc yet (404): re-run after merging the chain.rpc route; TestVerifyPacketAgainstTheChain covers the packet meanwhile")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	checkVerified(t, "VerifyPacket through the packet's rpc_url", anchor.VerifyPacket(ctx, p, p.RPCURL, ""))
	for _, f := range tampered(t, p) {
		if v := anchor.VerifyPacket(ctx, f.packet, p.RPCURL, ""); !slices.Contains(f.verdicts, v.Verdict) {
			t.Errorf("VerifyPacket of %s = %+v, want %v", f.what, v, f.verdicts)
		}
	}

	// The CLI: the local daemon's packets, a packet file, tampered files.
	cliVerify(t, home, true, []string{"v1", p.StateHash}, project)
	cliVerify(t, home, true, nil, "--packet", writePacket(t, "packet.json", p))
	for i, f := range tampered(t, p) {
		cliVerify(t, home, false, f.want, "--packet", writePacket(t, fmt.Sprintf("tampered-%d.json", i), f.packet))
	}
}

// TestVerifyPacketAgainstTheChain verifies the packet against home's own
// chain with no route of the gateway involved: home is stopped and its
// persisted chain ($CROW_HOME/chain) opened here with a loopback JSON-RPC
// endpoint. crow verify NAME takes its packets from a stand-in gateway that
// replays home's public GET /v1/verify answer, with its own verdict forged
// to "verified": the CLI's verdict comes from the chain alone.
func TestVerifyPacketAgainstTheChain(t *testing.T) {
	d, project, p, anchorBody := anchoredPacket(t)
	// The public verify answer, and the answer of state/anchor holds the
	// packet under "packet": crow verify --packet takes either.
	status, verifyBody := publicGet(t, d, "/v1/verify/"+project)
	if status != 200 {
		t.Fatalf("GET /v1/verify/%s = %d %s", project, status, verifyBody)
	}
	seed := readSeed(t, d)
	d.Stop()

	ch, err := anchor.OpenEmbedded(filepath.Join(d.Home, home.ChainName), seed.AnchorKey(), nil, anchor.WithLoopbackRPC("127.0.0.1:0"))
	if err != nil {
		t.Fatalf("opening home's chain: %v", err)
	}
	t.Cleanup(func() { ch.Close() })
	rpcURL := ch.Info().RPCURL
	if rpcURL == "" {
		t.Fatal("the embedded chain opened no loopback RPC")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	checkVerified(t, "VerifyPacket against home's chain", anchor.VerifyPacket(ctx, p, rpcURL, ""))
	for _, f := range tampered(t, p) {
		if v := anchor.VerifyPacket(ctx, f.packet, rpcURL, ""); !slices.Contains(f.verdicts, v.Verdict) {
			t.Errorf("VerifyPacket of %s = %+v, want %v", f.what, v, f.verdicts)
		}
	}

	// crow verify --packet: the packet, the state/anchor answer as is, and
	// the tampered packets.
	cliVerify(t, d, true, []string{"v1", p.StateHash}, "--packet", writePacket(t, "packet.json", p), "--rpc", rpcURL)
	answer := filepath.Join(t.TempDir(), "anchor.json")
	if err := os.WriteFile(answer, anchorBody, 0o600); err != nil {
		t.Fatal(err)
	}
	cliVerify(t, d, true, nil, "--packet", answer, "--rpc", rpcURL)
	for i, f := range tampered(t, p) {
		cliVerify(t, d, false, f.want, "--packet", writePacket(t, fmt.Sprintf("tampered-%d.json", i), f.packet), "--rpc", rpcURL)
	}

	// crow verify NAME from a gateway that claims every version verified.
	var report map[string]any
	if err := json.Unmarshal(verifyBody, &report); err != nil {
		t.Fatal(err)
	}
	serve := func(packet anchor.Packet) string {
		vs, _ := report["versions"].([]any)
		if len(vs) != 1 {
			t.Fatalf("home's verify answer has %d versions, want 1: %s", len(vs), verifyBody)
		}
		v := vs[0].(map[string]any)
		v["packet"], v["status"], v["match"] = packet, anchor.StatusFinal, true
		report["verified"] = true
		body, _ := json.Marshal(report)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/v1/verify/"+project || r.Header.Get("Authorization") != "" {
				http.Error(w, `{"error":"not here"}`, http.StatusNotFound)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write(body)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	cliVerify(t, d, true, []string{"v1", p.StateHash}, project, "--url", serve(p), "--rpc", rpcURL)
	for _, f := range tampered(t, p) {
		cliVerify(t, d, false, f.want, project, "--url", serve(f.packet), "--rpc", rpcURL)
	}
}
