package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/crow-sync/crow/app"
)

// peerState is d's sync status of peer id: listed, connected, paused.
func peerState(d *Daemon, id string) (listed, connected, paused bool) {
	d.t.Helper()
	for _, p := range Must(d, app.SyncStatusOp, app.NoInput{}).Peers {
		if p.InstanceID == id {
			return true, p.Connected, p.Paused
		}
	}
	return false, false, false
}

// TestSyncPausePerPeerPersistsAcrossRestart pauses the laptop on home (by
// id over REST) and on the vps (by name with the CLI): the laptop's writes
// stop arriving while the vps's still do, home restarted keeps it paused,
// and resuming lets both catch up.
func TestSyncPausePerPeerPersistsAcrossRestart(t *testing.T) {
	home, sats := cluster(t, "laptop", "vps")
	laptop, vps := sats[0], sats[1]
	lid, vid, hid := instanceID(laptop), instanceID(vps), instanceID(home)
	writeN(t, laptop, 1, "laptop before")
	Eventually(t, syncTimeout, "first convergence", func() bool { return converged(home, laptop, vps) })

	// The REST contract: bad ids are refused with what to do.
	if st, e := home.RawJSON(home.apiKey, "POST", "/v1/sync/pause", `{"id":"no-such-instance"}`); st != 404 || !strings.Contains(e.Msg, "no-such-instance") {
		t.Fatalf("pausing an unknown id = %d %v, want 404", st, e)
	}
	if st, e := home.RawJSON(home.apiKey, "POST", "/v1/sync/pause", `{"id":"`+hid+`"}`); st != 400 || !strings.Contains(e.Msg, "this instance") {
		t.Fatalf("pausing self = %d %v, want 400", st, e)
	}
	if _, err := os.Stat(filepath.Join(home.Home, "sync-paused.json")); err == nil {
		t.Fatal("a refused pause wrote sync-paused.json")
	}

	got := Must(home, app.SyncPause, app.SyncPauseIn{ID: lid})
	if got.Paused || !slices.Equal(got.PausedPeers, []string{lid}) {
		t.Fatalf("pause answer = %+v, want only the laptop", got)
	}
	if out := vps.MustCLI("sync", "pause", "laptop"); !strings.Contains(out, lid) {
		t.Fatalf("crow sync pause laptop on the vps:\n%s", out)
	}
	for _, d := range []*Daemon{home, vps} {
		Eventually(t, syncTimeout, d.Name+" to drop the laptop", func() bool {
			listed, connected, paused := peerState(d, lid)
			return listed && !connected && paused
		})
	}
	if _, _, paused := peerState(home, vid); paused {
		t.Fatal("home shows the vps paused")
	}
	held := feedLengths(home)[lid]
	writeN(t, laptop, 3, "laptop while paused")
	writeN(t, vps, 2, "vps while laptop paused")
	vpsLen := feedLengths(vps)[vid]
	Eventually(t, syncTimeout, "the vps's writes to reach home", func() bool { return feedLengths(home)[vid] >= vpsLen })
	if n := feedLengths(home)[lid]; n != held {
		t.Fatalf("home took %d laptop entries while the laptop was paused", n-held)
	}

	// Restarted, home keeps the laptop paused (and lists it as such).
	home.Stop()
	home.Start()
	if st := Must(home, app.SyncStatusOp, app.NoInput{}); st.Paused || !slices.Equal(st.PausedPeers, []string{lid}) {
		t.Fatalf("after a restart: paused=%v paused_peers=%v, want the laptop", st.Paused, st.PausedPeers)
	}
	if listed, connected, paused := peerState(home, lid); !listed || connected || !paused {
		t.Fatalf("after a restart home lists the laptop listed=%v connected=%v paused=%v", listed, connected, paused)
	}
	writeN(t, vps, 2, "vps after home restarted")
	vpsLen = feedLengths(vps)[vid]
	Eventually(t, syncTimeout, "the vps's writes to reach the restarted home", func() bool { return feedLengths(home)[vid] >= vpsLen })
	if n := feedLengths(home)[lid]; n != held {
		t.Fatalf("the restarted home took %d laptop entries while the laptop was paused", n-held)
	}
	if out := home.MustCLI("sync", "status"); !strings.Contains(out, "paused") {
		t.Fatalf("crow sync status does not show the pause:\n%s", out)
	}

	// Resumed (home over REST with an empty body: every peer), the laptop's
	// writes arrive.
	if st, e := home.RawJSON(home.apiKey, "POST", "/v1/sync/resume", ""); st != 200 {
		t.Fatalf("resume every peer = %d %v", st, e)
	}
	if out := vps.MustCLI("sync", "resume", lid); !strings.Contains(out, "paused now: none") {
		t.Fatalf("crow sync resume on the vps:\n%s", out)
	}
	Eventually(t, syncTimeout, "the laptop to catch up", func() bool { return converged(home, laptop, vps) })
	if _, _, paused := peerState(home, lid); paused {
		t.Fatal("home still shows the laptop paused after resume")
	}
}

// TestSyncPauseAllPersistsAcrossRestart pauses every peer with the CLI;
// a restart keeps it; resume lets the writes through.
func TestSyncPauseAllPersistsAcrossRestart(t *testing.T) {
	home, sats := cluster(t, "laptop")
	laptop := sats[0]
	lid := instanceID(laptop)
	Eventually(t, syncTimeout, "first convergence", func() bool { return converged(home, laptop) })
	if out := home.MustCLI("sync", "pause"); !strings.Contains(out, "every peer") {
		t.Fatalf("crow sync pause:\n%s", out)
	}
	home.Stop()
	home.Start()
	if st := Must(home, app.SyncStatusOp, app.NoInput{}); !st.Paused {
		t.Fatal("a restart forgot the pause of every peer")
	}
	held := feedLengths(home)[lid]
	writeN(t, laptop, 2, "laptop while home paused")
	Eventually(t, syncTimeout, "the laptop to see home disconnected", func() bool {
		_, connected, _ := peerState(laptop, instanceID(home))
		return !connected
	})
	if n := feedLengths(home)[lid]; n != held {
		t.Fatalf("a paused home took %d laptop entries", n-held)
	}
	home.MustCLI("sync", "resume")
	Eventually(t, syncTimeout, "the laptop to catch up", func() bool { return converged(home, laptop) })
}
