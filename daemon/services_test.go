package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
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
	var buf syncBuffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	ctx, cancel := context.WithCancel(context.Background())
	release := make(chan struct{})
	go func() {
		cancel()
		for !strings.Contains(buf.String(), "still stopping") {
			time.Sleep(5 * time.Millisecond)
		}
		close(release)
	}()
	err := runServices(ctx, log,
		service{"writer", func(ctx context.Context) error { <-ctx.Done(); return nil }},
		service{"sync", func(ctx context.Context) error { <-ctx.Done(); <-release; return nil }},
	)
	if err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.Contains(out, "waiting_for=[sync]") {
		t.Fatalf("the slow stop's log does not name the service holding it:\n%s", out)
	}
	if strings.Contains(out, "writer") {
		t.Fatalf("the log names a service that had stopped:\n%s", out)
	}
	// Nothing is reported once the services returned.
	n := strings.Count(out, "still stopping")
	time.Sleep(100 * time.Millisecond)
	if m := strings.Count(buf.String(), "still stopping"); m != n {
		t.Fatalf("still reporting after the stop: %d reports, then %d", n, m)
	}
}

// syncBuffer is a bytes.Buffer safe for a logger and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
