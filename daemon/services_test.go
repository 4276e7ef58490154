package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"

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
