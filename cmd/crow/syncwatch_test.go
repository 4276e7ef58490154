package main

import (
	"strings"
	"testing"
	"time"

	"github.com/crow-sync/crow/anchor"
	"github.com/crow-sync/crow/app"
)

func TestSyncWatchRatesAndETA(t *testing.T) {
	w := newSyncWatcher()
	t0 := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	doc := func(length, known, recv uint64) app.SyncStatus {
		return app.SyncStatus{InstanceID: "me", PausedPeers: []string{"p2"},
			Feeds: []app.FeedStatus{{Feed: "aa", Name: "laptop", Length: length, Known: known}},
			Peers: []app.PeerStatus{{PeerID: "x", InstanceID: "p1", Name: "laptop", Connected: true, EntriesReceived: recv, Lag: known - length},
				{InstanceID: "p2", Name: "vps", Paused: true}}}
	}
	chain := &app.ChainStatus{Kind: "embedded", Roots: map[string]int{"included": 2, "final": 5}, Open: make([]anchor.RootRecord, 2)}
	f := w.frame(t0, doc(10, 110, 0), chain, nil)
	if f.Feeds[0].Rate != 0 || f.Feeds[0].ETASeconds != nil || f.Feeds[0].Lag != 100 {
		t.Fatalf("first frame %+v: no rate yet", f.Feeds[0])
	}
	f = w.frame(t0.Add(time.Second), doc(30, 110, 20), chain, nil)
	if got := f.Feeds[0].Rate; got != 10 { // EMA of 20/s with 0
		t.Fatalf("rate = %v, want 10", got)
	}
	if eta := f.Feeds[0].ETASeconds; eta == nil || *eta != 8 {
		t.Fatalf("eta = %v, want 80 left at 10/s = 8s", eta)
	}
	if f.Peers[0].RecvRate != 10 {
		t.Fatalf("peer received rate = %v", f.Peers[0].RecvRate)
	}
	// A counter that went down (the daemon restarted) is no progress.
	f = w.frame(t0.Add(2*time.Second), doc(30, 110, 3), chain, nil)
	if f.Peers[0].RecvRate != 5 {
		t.Fatalf("after a counter reset the rate = %v, want the average decaying to 5", f.Peers[0].RecvRate)
	}
	text := renderSyncFrame(f, time.Second)
	t.Log("\n" + text)
	for _, s := range []string{"laptop", "30", "110", "ETA", "paused peers: p2", "disconnected,paused",
		"roots included=2 final=5, 2 not final yet, 0 transaction(s) pending"} {
		if !strings.Contains(text, s) {
			t.Fatalf("frame lacks %q:\n%s", s, text)
		}
	}
	if strings.ContainsRune(text, '\x1b') {
		t.Fatal("the plain frame holds escape codes")
	}
}
