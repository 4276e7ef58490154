package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/crow-sync/crow/store"
)

// A service that fails because a part it uses was closed by the stop is a
// clean stop; the same error before any stop is a failure.
func TestRunServicesClosedByStop(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	writerStopped := make(chan struct{})
	go cancel()
	err := runServices(ctx, log,
		service{"writer", func(ctx context.Context) error { <-ctx.Done(); close(writerStopped); return nil }},
		service{"registry", func(ctx context.Context) error {
			<-writerStopped
			return fmt.Errorf("registering self: %w", store.ErrClosed)
		}},
	)
	if err != nil {
		t.Fatalf("stop with a part closed under a service: %v, want nil", err)
	}

	err = runServices(context.Background(), log,
		service{"writer", func(ctx context.Context) error { <-ctx.Done(); return nil }},
		service{"registry", func(ctx context.Context) error { return fmt.Errorf("registering self: %w", store.ErrClosed) }},
	)
	if !errors.Is(err, store.ErrClosed) {
		t.Fatalf("writer closed with no stop: %v, want store.ErrClosed", err)
	}
}

// A stop that a service holds up is logged with that service's name, until it
// returns; the services that stopped are not named.
func TestRunServicesReportsSlowStop(t *testing.T) {
	old := stopReportEvery
	stopReportEvery = 20 * time.Millisecond
	defer func() { stopReportEvery = old }()
	records := make(recordSink, 100)
	ctx, cancel := context.WithCancel(context.Background())
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- runServices(ctx, slog.New(records),
			service{"writer", func(ctx context.Context) error { <-ctx.Done(); return nil }},
			service{"sync", func(ctx context.Context) error { <-ctx.Done(); <-release; return nil }},
		)
	}()
	cancel()
	r := <-records
	var waiting string
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "waiting_for" {
			waiting = a.Value.String()
		}
		return true
	})
	if r.Message != "still stopping" || waiting != "[sync]" {
		t.Fatalf("logged %q waiting_for=%s; want still stopping, waiting for [sync] alone", r.Message, waiting)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Nothing is reported once the services returned.
	for len(records) > 0 {
		<-records
	}
	time.Sleep(100 * time.Millisecond)
	if n := len(records); n != 0 {
		t.Fatalf("%d reports after the stop", n)
	}
}

// recordSink is a slog handler that hands each record to the test.
type recordSink chan slog.Record

func (c recordSink) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (c recordSink) Handle(_ context.Context, r slog.Record) error {
	select {
	case c <- r.Clone():
	default:
	}
	return nil
}

func (c recordSink) WithAttrs([]slog.Attr) slog.Handler { return c }

func (c recordSink) WithGroup(string) slog.Handler { return c }
