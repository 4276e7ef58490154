package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/crow-sync/crow/anchor"
	"github.com/crow-sync/crow/search"
	"github.com/crow-sync/crow/store"
)

// service is one long-running part of the daemon.
type service struct {
	name  string
	serve func(ctx context.Context) error
}

// stopReportEvery is how often a stop that has not finished logs the services
// still running (a variable for tests).
var stopReportEvery = 10 * time.Second

// runServices runs every service until ctx is done or one of them fails; then
// it cancels the rest and waits for all of them. A service returning nil
// before shutdown counts as a failure: daemon parts run until told to stop.
// While the stop takes longer than stopReportEvery, it logs which services
// have not returned yet, so a daemon that does not exit says what holds it.
func runServices(ctx context.Context, log *slog.Logger, svcs ...service) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		running  = make(map[string]bool, len(svcs))
	)
	for _, s := range svcs {
		running[s.name] = true
	}
	done, reported := make(chan struct{}), make(chan struct{})
	defer func() { close(done); <-reported }()
	every := stopReportEvery
	go reportSlowStop(ctx, done, reported, log, every, func() []string {
		mu.Lock()
		defer mu.Unlock()
		names := make([]string, 0, len(running))
		for n := range running {
			names = append(names, n)
		}
		slices.Sort(names)
		return names
	})
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
			mu.Lock()
			delete(running, s.name)
			mu.Unlock()
			switch {
			case ctx.Err() != nil && stoppedBy(err):
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

// reportSlowStop waits for the stop to begin (ctx done), then logs the services
// still running every interval until done is closed; it closes reported as it
// returns.
func reportSlowStop(ctx context.Context, done <-chan struct{}, reported chan<- struct{}, log *slog.Logger, every time.Duration, running func() []string) {
	defer close(reported)
	select {
	case <-ctx.Done():
	case <-done:
		return
	}
	began := time.Now()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			log.Warn("still stopping", "waiting_for", running(), "since", time.Since(began).Round(time.Second))
		}
	}
}

// stoppedBy reports whether err, returned by a service after the stop began,
// is the stop itself: the context's end, or a part the service depends on
// (the writer, the search index, the chain) already closed by it. A service
// writing its first row when SIGTERM arrives gets store.ErrClosed; that is a
// clean stop, not a failure to report with a non-zero exit.
func stoppedBy(err error) bool {
	return err == nil || errors.Is(err, context.Canceled) ||
		errors.Is(err, store.ErrClosed) || errors.Is(err, search.ErrClosed) || errors.Is(err, anchor.ErrClosed)
}
