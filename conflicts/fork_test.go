package conflicts

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/crow-sync/crow/store"
)

func TestForkNotifierRaisesOneNotificationNamingTheInstance(t *testing.T) {
	db, err := store.Open("", store.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := NewStore(db, time.Now)
	known := bytes.Repeat([]byte{1}, 32)
	n := NewForkNotifier(s, func(key []byte) (string, bool) {
		if bytes.Equal(key, known) {
			return "laptop (id-1)", true
		}
		return "", false
	}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- n.Serve(ctx) }()
	for range 3 {
		n.Report(known)
	}
	var ns []Notification
	deadline := time.Now().Add(5 * time.Second)
	for len(ns) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
		if ns, err = s.Notifications(); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if ns, _ = s.Notifications(); len(ns) != 1 {
		t.Fatalf("%d notifications after a burst of three forks, want 1: %+v", len(ns), ns)
	}
	if got := ns[0]; got.Kind != KindFeedFork || got.Priority != PriorityHigh || got.Link != InstancesLink ||
		!strings.Contains(got.Body, "The feed of laptop (id-1) has two validly signed histories") {
		t.Errorf("notification %+v", got)
	}
}

func TestForkNotifierNamesUnknownKeysInHex(t *testing.T) {
	n := NewForkNotifier(nil, nil, nil)
	if b := n.body([]byte{0xab, 0xcd, 0xef, 0x01, 0x99}); !strings.Contains(b, "The feed of abcdef01 has") {
		t.Errorf("body %q", b)
	}
}

func TestForkNotifierReportNeverBlocks(t *testing.T) {
	n := NewForkNotifier(nil, nil, nil) // not served
	for range ForkBuffer * 3 {
		n.Report([]byte{1})
	}
}
