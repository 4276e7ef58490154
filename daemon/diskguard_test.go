package daemon_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/crow-sync/crow/anchor"
	"github.com/crow-sync/crow/daemon"
	"github.com/crow-sync/crow/home"
	"github.com/crow-sync/crow/sync/transport"
)

// /metrics carries the free-space guard's gauge (the store's filesystem, read by statfs)
// and its counter of refused writes.
func TestStoreFreeSpaceMetrics(t *testing.T) {
	h := newHome(t)
	settings := home.DefaultConfig()
	settings.Listen = "127.0.0.1:0"
	d, err := daemon.New(daemon.Config{Home: h, Settings: settings, Version: "test"}, daemon.Deps{
		Logger:    slog.New(slog.DiscardHandler),
		Transport: daemon.MemTransport(transport.NewMemNetwork()),
		Chain:     func(context.Context, *slog.Logger) (anchor.Chain, error) { return nil, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Serve(ctx) }()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("Serve did not return")
		}
	}()
	var body []byte
	deadline := time.Now().Add(10 * time.Second)
	for {
		req, _ := http.NewRequest("GET", d.GatewayURL()+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+h.APIKey())
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics: %v %s", err, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	m := regexp.MustCompile(`(?m)^crow_store_free_bytes (\S+)$`).FindSubmatch(body)
	if m == nil {
		t.Fatalf("no crow_store_free_bytes in /metrics")
	}
	if v, err := strconv.ParseFloat(string(m[1]), 64); err != nil || v <= 0 {
		t.Errorf("crow_store_free_bytes = %s, want > 0", m[1])
	}
	if !regexp.MustCompile(`(?m)^crow_store_refused_writes_total 0$`).Match(body) {
		t.Errorf("no crow_store_refused_writes_total 0 in /metrics")
	}
}
