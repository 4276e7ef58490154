package doctor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crow-sync/crow/anchor"
)

// fakeProbes answers per peer id.
type fakeProbes struct {
	health   map[string]Health
	healthE  map[string]error
	callback map[string]Callback
	cbErr    map[string]error
}

func (f fakeProbes) Health(_ context.Context, id string) (Health, error) {
	return f.health[id], f.healthE[id]
}

func (f fakeProbes) Callback(_ context.Context, id string) (Callback, error) {
	return f.callback[id], f.cbErr[id]
}

type fakeStore struct {
	err         error
	free, floor uint64
	ok          bool
}

func (s fakeStore) Read() error                   { return s.err }
func (s fakeStore) Space() (uint64, uint64, bool) { return s.free, s.floor, s.ok }

var t0 = time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)

// find returns the findings of check (and subject, if not "").
func find(r Report, check, subject string) []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if f.Check == check && (subject == "" || f.Subject == subject) {
			out = append(out, f)
		}
	}
	return out
}

func one(t *testing.T, r Report, check, subject string) Finding {
	t.Helper()
	fs := find(r, check, subject)
	if len(fs) != 1 {
		t.Fatalf("%d findings of %s %q, want 1: %+v", len(fs), check, subject, r.Findings)
	}
	return fs[0]
}

// homeDir makes a $CROW_HOME with the files of a home, all private.
func homeDir(t *testing.T, seed bool) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	key := instanceKeyFile
	if seed {
		key = identityFile
	}
	for _, n := range []string{key, apiKeyFile, apiKeyHashFile, certificateFile} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestFilesOK(t *testing.T) {
	dir := homeDir(t, true)
	r := Run(context.Background(), Env{Now: func() time.Time { return t0 }, Files: Files{Dir: dir, HasSeed: true}})
	if f := one(t, r, CheckFiles, ""); f.Status != OK {
		t.Fatalf("files: %+v", f)
	}
}

func TestFilesWrongMode(t *testing.T) {
	dir := homeDir(t, false)
	key := filepath.Join(dir, apiKeyFile)
	if err := os.Chmod(key, 0o644); err != nil {
		t.Fatal(err)
	}
	r := Run(context.Background(), Env{Files: Files{Dir: dir}})
	f := one(t, r, CheckFiles, key)
	if f.Status != Problem || f.Fix != "chmod 600 "+key || !strings.Contains(f.Message, "0644") {
		t.Fatalf("wrong mode: %+v", f)
	}
	if r.Status != Problem || r.Problems != 1 {
		t.Fatalf("report %s with %d problems", r.Status, r.Problems)
	}
}

func TestFilesDirModeAndMissing(t *testing.T) {
	dir := homeDir(t, true)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	extra := filepath.Join(dir, "chain.key")
	r := Run(context.Background(), Env{Files: Files{Dir: dir, HasSeed: true, Extra: []string{extra}}})
	if f := one(t, r, CheckFiles, dir); f.Status != Problem || f.Fix != "chmod 700 "+dir {
		t.Fatalf("dir: %+v", f)
	}
	if f := one(t, r, CheckFiles, extra); f.Status != Problem || !strings.Contains(f.Message, "missing") {
		t.Fatalf("missing key file: %+v", f)
	}
}

func TestSeed(t *testing.T) {
	for _, c := range []struct {
		role           string
		seed, locked   bool
		want           Status
		fixHas, msgHas string
	}{
		{"home", true, false, Warn, "crow identity lock", "in clear"},
		{"home", true, true, OK, "", "locked"},
		{"home", false, false, Problem, "promote", "no master seed"},
		{"satellite", false, false, OK, "", "no master seed"},
		{"satellite", true, false, Warn, "crow identity lock", "satellite holds the master seed"},
		{"satellite", true, true, OK, "", "locked"},
	} {
		r := Run(context.Background(), Env{Self: Self{Role: c.role}, Files: Files{HasSeed: c.seed, Locked: c.locked}})
		f := one(t, r, CheckSeed, "")
		if f.Status != c.want || !strings.Contains(f.Fix, c.fixHas) || !strings.Contains(f.Message, c.msgHas) {
			t.Errorf("%s seed=%v locked=%v: %+v", c.role, c.seed, c.locked, f)
		}
	}
}

func TestStoreAndDisk(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		st          fakeStore
		store, disk Status
	}{
		{fakeStore{free: 10000 * mib, floor: 256 * mib, ok: true}, OK, OK},
		{fakeStore{free: 300 * mib, floor: 256 * mib, ok: true}, OK, Warn},
		{fakeStore{free: 100 * mib, floor: 256 * mib, ok: true}, OK, Problem},
		{fakeStore{err: errors.New("badger: closed"), ok: false}, Problem, OK},
	} {
		r := Run(context.Background(), Env{Store: c.st})
		if f := one(t, r, CheckStore, ""); f.Status != c.store {
			t.Errorf("%+v: store %+v", c.st, f)
		}
		if f := one(t, r, CheckDisk, ""); f.Status != c.disk {
			t.Errorf("%+v: disk %+v", c.st, f)
		}
	}
}

func TestAddresses(t *testing.T) {
	local := Peer{ID: "b", Name: "B", GatewayURL: "http://127.0.0.1:4001", SyncAddrs: []string{"/ip4/127.0.0.1/tcp/4002"}}
	remoteURL := Peer{ID: "c", Name: "laptop", GatewayURL: "http://100.64.0.7:3001"}
	remoteSync := Peer{ID: "d", Name: "desk", GatewayURL: "http://localhost:3001", SyncAddrs: []string{"/ip4/192.0.2.10/tcp/3002"}}
	loopNet := Net{Listen: "127.0.0.1:3001", Advertised: "http://127.0.0.1:3001", SyncAddrs: []string{"/ip4/127.0.0.1/tcp/3002"}}
	goodNet := Net{Listen: "100.64.0.1:3001", GatewayURL: "http://100.64.0.1:3001", Advertised: "http://100.64.0.1:3001",
		SyncAddrs: []string{"/ip4/100.64.0.1/tcp/3002"}}
	for _, c := range []struct {
		name  string
		net   Net
		peers []Peer
		want  map[string]Status // subject → status
	}{
		{"all local", loopNet, []Peer{local}, map[string]Status{"": OK}},
		{"no peers", loopNet, nil, map[string]Status{"": OK}},
		{"remote url", loopNet, []Peer{local, remoteURL}, map[string]Status{"listen": Problem, "gateway_url": Problem, "sync": Problem}},
		{"remote sync", loopNet, []Peer{remoteSync}, map[string]Status{"listen": Problem, "gateway_url": Problem, "sync": Problem}},
		{"revoked remote", loopNet, []Peer{{ID: "c", Name: "old", GatewayURL: "http://100.64.0.9:3001", Revoked: true}}, map[string]Status{"": OK}},
		{"reachable", goodNet, []Peer{remoteURL}, map[string]Status{"": OK}},
		{"loopback gateway_url", Net{Listen: "0.0.0.0:3001", GatewayURL: "http://127.0.0.1:3001", Advertised: "http://127.0.0.1:3001",
			SyncAddrs: []string{"/ip4/100.64.0.1/tcp/3002"}}, []Peer{remoteURL}, map[string]Status{"gateway_url": Problem}},
	} {
		r := Run(context.Background(), Env{Net: c.net, Peers: c.peers})
		got := map[string]Status{}
		for _, f := range find(r, CheckAddresses, "") {
			got[f.Subject] = f.Status
			if f.Status == Problem && f.Fix == "" {
				t.Errorf("%s: problem without a fix: %+v", c.name, f)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: %v, want %v (%+v)", c.name, got, c.want, r.Findings)
		}
	}
	r := Run(context.Background(), Env{Net: loopNet, Peers: []Peer{remoteURL}})
	if f := one(t, r, CheckAddresses, "listen"); !strings.Contains(f.Message, "peers on other machines cannot reach it") ||
		!strings.Contains(f.Fix, "--listen tailscale") {
		t.Errorf("listen finding: %+v", f)
	}
}

func TestPeers(t *testing.T) {
	sent := t0
	h := func(skew time.Duration) Health {
		return Health{Sent: sent, Received: sent.Add(20 * time.Millisecond), PeerTime: sent.Add(10*time.Millisecond + skew)}
	}
	probes := fakeProbes{
		health: map[string]Health{"ok": h(0), "warn": h(-8 * time.Second), "skew": h(25 * time.Second), "refuses": h(0), "nocb": h(0)},
		healthE: map[string]error{
			"down":    fmt.Errorf("%w: connection refused", ErrUnreachable),
			"foreign": fmt.Errorf("%w: bad signature", ErrNotTrusted),
		},
		callback: map[string]Callback{"ok": {CallbackOK: true}, "warn": {CallbackOK: true}, "skew": {CallbackOK: true},
			"nocb": {CallbackError: "token not yet valid"}},
		cbErr: map[string]error{"refuses": fmt.Errorf("%w: 401", ErrRefused)},
	}
	var peers []Peer
	for _, id := range []string{"ok", "warn", "skew", "down", "foreign", "refuses", "nocb"} {
		peers = append(peers, Peer{ID: id, Name: id, GatewayURL: "http://127.0.0.1:1"})
	}
	peers = append(peers, Peer{ID: "gone", Name: "gone", Revoked: true, RevokedAt: "2026-12-01T00:00:00Z"})
	r := Run(context.Background(), Env{Self: Self{InstanceID: "self"}, Peers: peers, Probe: probes})
	for _, c := range []struct {
		check, subj string
		want        Status
	}{
		{CheckPeer, "ok", OK}, {CheckClock, "ok", OK}, {CheckTokens, "ok", OK},
		{CheckClock, "warn", Warn}, {CheckClock, "skew", Problem},
		{CheckPeer, "down", Problem}, {CheckPeer, "foreign", Problem},
		{CheckTokens, "refuses", Problem}, {CheckTokens, "nocb", Problem},
		{CheckPeer, "gone", OK},
	} {
		if f := one(t, r, c.check, c.subj); f.Status != c.want || (c.want != OK && f.Fix == "") {
			t.Errorf("%s %s: %+v, want %s", c.check, c.subj, f, c.want)
		}
	}
	if n := len(find(r, CheckTokens, "down")); n != 0 {
		t.Errorf("an unreachable peer's tokens were checked")
	}
	if f := one(t, r, CheckClock, "skew"); !strings.Contains(f.Message, "25s ahead") {
		t.Errorf("skew message: %q", f.Message)
	}
	if f := one(t, r, CheckClock, "warn"); !strings.Contains(f.Message, "8s behind") {
		t.Errorf("skew message: %q", f.Message)
	}
}

func TestCertificate(t *testing.T) {
	r := Run(context.Background(), Env{Self: Self{InstanceID: "a", Revoked: true, RevokedAt: "2026-12-01T00:00:00Z"}})
	if f := one(t, r, CheckCertificate, ""); f.Status != Problem || !strings.Contains(f.Fix, "--join") {
		t.Fatalf("%+v", f)
	}
}

func TestChain(t *testing.T) {
	now := t0
	old := now.Add(-2 * time.Hour).Format(time.RFC3339)
	for _, c := range []struct {
		name string
		role string
		st   anchor.ChainStatus
		want map[string]Status
	}{
		{"none on home", "home", anchor.ChainStatus{Kind: "none"}, map[string]Status{"": Warn}},
		{"none on satellite", "satellite", anchor.ChainStatus{Kind: "none"}, map[string]Status{"": OK}},
		{"embedded ok", "home", anchor.ChainStatus{Kind: "embedded", ChainID: 1337, Head: 5, BalanceWei: "0"},
			map[string]Status{"embedded": OK, "roots": OK}},
		{"rpc down", "home", anchor.ChainStatus{Kind: "rpc", Error: "dial tcp: connection refused"}, map[string]Status{"rpc": Problem}},
		{"rpc broke", "home", anchor.ChainStatus{Kind: "rpc", Account: "0xabc", BalanceWei: "0"},
			map[string]Status{"rpc": OK, "balance": Problem, "roots": OK}},
		{"rpc low", "home", anchor.ChainStatus{Kind: "rpc", Account: "0xabc", BalanceWei: "1000", BalanceETH: "0"},
			map[string]Status{"rpc": OK, "balance": Warn, "roots": OK}},
		{"stuck", "home", anchor.ChainStatus{Kind: "rpc", Account: "0xabc", BalanceWei: "2000000000000000000",
			Pending: []anchor.PendingTx{{Hash: "0x1", SentAt: old, Attempts: 3}},
			Open:    []anchor.RootRecord{{Root: "0xr", At: old}}},
			map[string]Status{"rpc": OK, "balance": OK, "pending": Warn, "roots": Warn}},
	} {
		st := c.st
		r := Run(context.Background(), Env{Self: Self{Role: c.role}, Now: func() time.Time { return now },
			Chain: func(context.Context) (anchor.ChainStatus, error) { return st, nil }})
		got := map[string]Status{}
		for _, f := range find(r, CheckChain, "") {
			got[f.Subject] = f.Status
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: %v, want %v (%+v)", c.name, got, c.want, r.Findings)
		}
	}
}

func TestFork(t *testing.T) {
	r := Run(context.Background(), Env{Fork: func() *Fork { return &Fork{Error: "forked", Length: 3, PeerLength: 5} }})
	if f := one(t, r, CheckFork, ""); f.Status != Problem || !strings.Contains(f.Fix, "crow instance reenroll --join INVITE") {
		t.Fatalf("%+v", f)
	}
	r = Run(context.Background(), Env{Fork: func() *Fork { return nil }})
	if f := one(t, r, CheckFork, ""); f.Status != OK {
		t.Fatalf("%+v", f)
	}
}

// TestNoCheckWithoutItsPart: an empty Env reports nothing and is ok.
func TestNoCheckWithoutItsPart(t *testing.T) {
	r := Run(context.Background(), Env{Self: Self{Role: "satellite"}})
	for _, f := range r.Findings {
		if f.Check != CheckSeed {
			t.Errorf("unexpected finding %+v", f)
		}
	}
	if r.Status != OK {
		t.Errorf("status %s", r.Status)
	}
}
