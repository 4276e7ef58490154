package e2e

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/client"

	"github.com/crow-sync/crow/sync/transport"
)

// syncTimeout bounds how long convergence may take on a loaded CI machine.
const syncTimeout = 60 * time.Second

// cluster starts a home and satellites enrolled by invitation (crow
// instance invite on home, crow init --join on the satellite), each started
// and waited for until home and it list each other.
func cluster(t testing.TB, sats ...string) (*Daemon, []*Daemon) {
	t.Helper()
	home := NewDaemon(t, "home", nil)
	home.Start()
	var out []*Daemon
	for _, name := range sats {
		s := NewDaemon(t, name, home)
		s.Start()
		Enrolled(t, home, s)
		out = append(out, s)
	}
	return home, out
}

// feedLengths returns, by instance id, the length of every feed d holds.
func feedLengths(d *Daemon) map[string]uint64 {
	d.t.Helper()
	out := map[string]uint64{}
	for _, f := range Must(d, app.SyncStatusOp, app.NoInput{}).Feeds {
		id := f.InstanceID
		if id == "" {
			id = "key:" + f.Feed
		}
		out[id] = f.Length
	}
	return out
}

// received sums entries_received over d's peers (since d's last start).
func received(d *Daemon) uint64 {
	d.t.Helper()
	var n uint64
	for _, p := range Must(d, app.SyncStatusOp, app.NoInput{}).Peers {
		n += p.EntriesReceived
	}
	return n
}

// health is d's public /health document, read without a key.
func health(d *Daemon) app.Health {
	d.t.Helper()
	h, err := CallKey(d, "", app.InstanceHealth, app.HealthIn{})
	if err != nil {
		d.t.Fatalf("%s: /health: %v", d.Name, err)
	}
	return h
}

func instanceID(d *Daemon) string {
	d.t.Helper()
	return health(d).InstanceID
}

func writeN(t *testing.T, d *Daemon, n int, tag string) {
	t.Helper()
	for i := 0; i < n; i++ {
		if _, err := Call(d, app.MemoryCreate, app.MemoryCreateIn{Content: fmt.Sprintf("%s note %d", tag, i)}); err != nil {
			t.Fatalf("%s: write: %v", d.Name, err)
		}
	}
}

// settled reports whether every daemon lists n memories, all numbered by
// home, and the feeds have converged (so nothing more is on its way).
func settled(n int, ds ...*Daemon) bool {
	for _, d := range ds {
		page, err := Call(d, app.MemoryList, app.MemoryListIn{Limit: 1000})
		if err != nil || len(page.Memories) != n {
			return false
		}
		for _, m := range page.Memories {
			if m.Number == nil {
				return false
			}
		}
	}
	return converged(ds...)
}

// converged reports whether every daemon holds every other's feed at the
// length its author has.
func converged(ds ...*Daemon) bool {
	own := map[string]uint64{}
	for _, d := range ds {
		own[instanceID(d)] = feedLengths(d)[instanceID(d)]
	}
	for _, d := range ds {
		have := feedLengths(d)
		for id, n := range own {
			if have[id] != n {
				return false
			}
		}
	}
	return true
}

func TestThreeInstancesRegisterAndConverge(t *testing.T) {
	home, sats := cluster(t, "laptop", "vps")
	a, b := sats[0], sats[1]

	// The registry: home knows both satellites; each satellite was asked to
	// register home back.
	out := home.MustCLI("instance", "list")
	for _, name := range []string{"home", "laptop", "vps"} {
		if !strings.Contains(out, name) {
			t.Fatalf("home's instance list lacks %s:\n%s", name, out)
		}
	}
	if out := a.MustCLI("instance", "list"); !strings.Contains(out, "home") {
		t.Fatalf("laptop's instance list lacks home:\n%s", out)
	}
	// The registry replicates: laptop learns of vps through home's feed, and
	// the mirror file follows.
	Eventually(t, syncTimeout, "laptop to learn of vps by replication", func() bool {
		out, _, err := a.CLI("instance", "list")
		return err == nil && strings.Contains(out, "vps")
	})
	if mirror, err := os.ReadFile(filepath.Join(a.Home, "instances.json")); err != nil || !strings.Contains(string(mirror), instanceID(b)) {
		t.Fatalf("laptop's instances.json lacks vps: %v\n%s", err, mirror)
	}

	writeN(t, home, 5, "home")
	writeN(t, a, 7, "laptop")
	writeN(t, b, 3, "vps")
	Eventually(t, syncTimeout, "three feeds to converge", func() bool { return converged(home, a, b) })
	if n := len(feedLengths(b)); n != 3 {
		t.Fatalf("vps holds %d feeds, want 3", n)
	}
	out = a.MustCLI("sync", "status")
	if !strings.Contains(out, "connected") {
		t.Fatalf("crow sync status on laptop:\n%s", out)
	}
}

func TestOfflineSatelliteCatchesUpWithOnlyNewEntries(t *testing.T) {
	home, sats := cluster(t, "laptop", "vps")
	a, b := sats[0], sats[1]
	writeN(t, home, 3, "before")
	// Settled: every memory numbered by home and every feed (home's
	// numbering entries included) at its author's length everywhere.
	Eventually(t, syncTimeout, "initial convergence", func() bool { return settled(3, home, a, b) })

	before := feedLengths(b)
	b.Stop()
	writeN(t, home, 20, "home while vps away")
	writeN(t, a, 15, "laptop while vps away")

	b.Start()
	Eventually(t, syncTimeout, "vps to catch up", func() bool { return settled(38, home, a, b) })
	var newEntries uint64
	for id, n := range feedLengths(b) {
		newEntries += n - before[id]
	}
	// The status may answer from the sync loop's last pass while the loop is
	// busy, so the count is awaited; more than the new entries still fails.
	var got uint64
	Eventually(t, syncTimeout, "vps's status to count what it stored", func() bool { got = received(b); return got >= newEntries })
	if got != newEntries {
		t.Fatalf("vps received %v entries after restart, want exactly the %v new ones", got, newEntries)
	}
}

func TestSatelliteEntriesReachOtherSatelliteThroughHome(t *testing.T) {
	home, sats := cluster(t, "laptop", "vps")
	a, b := sats[0], sats[1]
	Eventually(t, syncTimeout, "initial convergence", func() bool { return converged(home, a, b) })

	b.Stop()
	writeN(t, a, 12, "laptop only")
	aID := instanceID(a)
	aLen := feedLengths(a)[aID]
	Eventually(t, syncTimeout, "home to hold laptop's entries", func() bool { return feedLengths(home)[aID] == aLen })
	a.Stop() // laptop and vps are never online together from here on

	b.Start()
	Eventually(t, syncTimeout, "vps to get laptop's entries through home", func() bool { return feedLengths(b)[aID] == aLen })
}

func TestForeignIdentityRefused(t *testing.T) {
	home := NewDaemon(t, "home", nil)
	home.Start()
	stranger := NewDaemon(t, "stranger", nil) // a master seed of its own
	stranger.Start()

	_, errOut, err := home.CLI("instance", "add", stranger.URL())
	if err == nil || !strings.Contains(errOut, "another identity") {
		t.Fatalf("registering a foreign instance: err=%v stderr=%q", err, errOut)
	}
	if _, err := Call(home, app.InstancesRegister, app.RegisterIn{GatewayURL: stranger.URL()}); client.StatusOf(err) != 403 || client.KindOf(err) != app.KindForbidden {
		t.Fatalf("POST /v1/instances foreign: %v (status %d), want 403", err, client.StatusOf(err))
	}
	if _, err := Call(home, app.InstancesRegister, app.RegisterIn{GatewayURL: "ftp://x"}); client.StatusOf(err) != 400 || client.KindOf(err) != app.KindInvalid {
		t.Fatalf("POST /v1/instances bad URL: %v (status %d), want 400", err, client.StatusOf(err))
	}

	// The gater: a libp2p peer with a key home never registered cannot connect.
	h := health(home)
	pub, _ := hex.DecodeString(h.PublicKey)
	homePeer, err := transport.PeerIDFromPublicKey(ed25519.PublicKey(pub))
	if err != nil {
		t.Fatal(err)
	}
	addrs := h.SyncAddrs
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	intruder, err := transport.NewHost(transport.HostConfig{
		Key: key, Listen: []string{"/ip4/127.0.0.1/tcp/0"},
		Admitter: transport.AdmitFunc(func(transport.PeerID) bool { return true }),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer intruder.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := intruder.Dial(ctx, homePeer, addrs); err == nil {
		t.Fatal("an unregistered peer connected to home's sync port")
	}
}

func TestRevokedInstanceDisconnectedAndRefused(t *testing.T) {
	home, sats := cluster(t, "laptop")
	a := sats[0]
	writeN(t, a, 2, "before revoke")
	Eventually(t, syncTimeout, "convergence", func() bool { return converged(home, a) })

	aID := instanceID(a)
	home.MustCLI("instance", "revoke", aID)
	Eventually(t, syncTimeout, "laptop to be disconnected", func() bool {
		for _, p := range Must(home, app.SyncStatusOp, app.NoInput{}).Peers {
			if p.InstanceID == aID && p.Connected {
				return false
			}
		}
		return true
	})
	held := feedLengths(home)[aID]
	writeN(t, a, 5, "after revoke")
	time.Sleep(3 * time.Second) // give a refused peer time to (fail to) deliver
	if got := feedLengths(home)[aID]; got != held {
		t.Fatalf("home accepted %v entries from a revoked instance", int64(got)-int64(held))
	}
	if out := home.MustCLI("instance", "list", "--json"); !strings.Contains(out, `"revoked"`) {
		t.Fatalf("revoked status not listed:\n%s", out)
	}
	// A revoked id cannot come back.
	if _, err := Call(home, app.InstancesRegister, app.RegisterIn{GatewayURL: a.URL()}); client.StatusOf(err) != 409 || client.KindOf(err) != app.KindConflict {
		t.Fatalf("re-registering a revoked instance: %v (status %d), want 409", err, client.StatusOf(err))
	}
}

func TestTamperedEntryRejectedAndSyncRecovers(t *testing.T) {
	home := NewDaemon(t, "home", nil)
	home.Env = []string{"CROW_TEST_TAMPER_SERVE=1"}
	home.Start()
	writeN(t, home, 10, "home")
	a := NewDaemon(t, "laptop", home)
	a.Start()
	Enrolled(t, home, a)
	Eventually(t, syncTimeout, "laptop to converge despite tampering", func() bool { return converged(home, a) })
	if !strings.Contains(a.Log(), "security: peer data rejected") {
		t.Fatalf("laptop logged no rejection of tampered data")
	}
	st, body := a.DoRaw("GET", "/metrics")
	if st != 200 || !strings.Contains(body, "crow_sync_rejected_total") {
		t.Fatalf("metrics lack the rejection counter: %d", st)
	}
}

// TestRevokedFeedNotTakenThroughARelay: once home revokes laptop, laptop's
// new entries are refused even when another satellite relays them.
func TestRevokedFeedNotTakenThroughARelay(t *testing.T) {
	home, sats := cluster(t, "laptop", "vps")
	a, b := sats[0], sats[1]
	aID := instanceID(a)
	Eventually(t, syncTimeout, "convergence", func() bool { return converged(home, a, b) })
	Eventually(t, syncTimeout, "laptop and vps to know each other", func() bool {
		out, _, err := a.CLI("instance", "list")
		return err == nil && strings.Contains(out, "vps")
	})

	cut(home)
	writeN(t, a, 5, "after the theft")
	want := feedLengths(a)[aID]
	Eventually(t, syncTimeout, "vps to hold laptop's new entries", func() bool { return feedLengths(b)[aID] == want })
	held := feedLengths(home)[aID]
	home.MustCLI("instance", "revoke", aID)
	heal(home)
	// vps reconnects to home and offers laptop's feed; give it time to try.
	Eventually(t, syncTimeout, "home to reconnect to vps", func() bool {
		bID := instanceID(b)
		for _, p := range Must(home, app.SyncStatusOp, app.NoInput{}).Peers {
			if p.InstanceID == bID && p.Connected {
				return true
			}
		}
		return false
	})
	time.Sleep(3 * time.Second)
	if got := feedLengths(home)[aID]; got != held {
		t.Fatalf("home took %v entries of a revoked instance through a relay", int64(got)-int64(held))
	}
}

// TestClonedMachineForkNotifiesOperator: a satellite's data directory copied
// to another machine (a clone) makes two signed histories of one feed; home
// keeps replicating everything else and raises one high-priority notification.
func TestClonedMachineForkNotifiesOperator(t *testing.T) {
	home, sats := cluster(t, "laptop")
	a := sats[0]
	writeN(t, a, 2, "shared past")
	Eventually(t, syncTimeout, "convergence", func() bool { return converged(home, a) })
	a.Stop()
	clone := CopyDaemon(t, a, "laptop-clone")
	writeOffline := func(d *Daemon, tag string) {
		d.Start()
		writeN(t, d, 3, tag)
	}
	writeOffline(a, "original")
	Eventually(t, syncTimeout, "home to take the original's entries", func() bool { return converged(home, a) })
	a.Stop()
	// The clone writes while home is down: once it meets a head of its own
	// feed that it did not write, it refuses writes (e2e/fork_test.go).
	home.Stop()
	writeOffline(clone, "clone") // same key, another history
	home.Start()
	Eventually(t, syncTimeout, "a fork notification on home", func() bool {
		for _, x := range Must(home, app.NotificationsList, app.PageIn{}).Notifications {
			if x.Kind == "feed_fork" {
				return true
			}
		}
		return false
	})
	if !strings.Contains(home.Log(), "fork") {
		t.Fatal("home logged nothing about the fork")
	}
}
