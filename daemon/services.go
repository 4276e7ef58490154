package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
)

// service is one long-running part of the daemon.
type service struct {
	name  string
	serve func(ctx context.Context) error
}

// runServices runs every service until ctx is done or one of them fails; then
// it cancels the rest and waits for all of them. A service returning nil
// before shutdown counts as a failure: daemon parts run until told to stop.
func runServices(ctx context.Context, log *slog.Logger, svcs ...service) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
		cancel()
	}
	for _, s := range svcs {
		wg.Go(func() {
			err := s.serve(ctx)
			switch {
			case ctx.Err() != nil && (err == nil || errors.Is(err, context.Canceled)):
				log.Debug("service stopped", "service", s.name)
			case err == nil:
				fail(fmt.Errorf("%s stopped unexpectedly", s.name))
			case errors.Is(err, ErrRestart):
				log.Info("restarting on the rewritten data directory", "service", s.name)
				fail(err)
			case errors.Is(err, ErrRoleChanged):
				log.Info("stopping every part: the home role moved", "err", err)
				fail(err)
			default:
				log.Error("service failed", "service", s.name, "err", err)
				fail(fmt.Errorf("%s: %w", s.name, err))
			}
		})
	}
	wg.Wait()
	return firstErr
}
