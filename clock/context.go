package clock

import (
	"context"
	"errors"
	"time"
)

// WithTimeout is context.WithTimeout on c: the returned context is done d
// after c's Now, or when ctx is. On System it is context.WithTimeout itself.
// On any other Clock (a Fake) the deadline fires through c.AfterFunc; the
// context's Err is then context.DeadlineExceeded and Deadline reports the
// fake deadline, while contexts derived from it see context.Canceled with
// cause context.DeadlineExceeded (check context.Cause to tell them apart).
func WithTimeout(ctx context.Context, c Clock, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := c.(System); ok || c == nil {
		return context.WithTimeout(ctx, d)
	}
	inner, cancel := context.WithCancelCause(ctx)
	deadline := c.Now().Add(d)
	t := c.AfterFunc(d, func() { cancel(context.DeadlineExceeded) })
	context.AfterFunc(inner, func() { t.Stop() }) // done early: drop the timer
	return timeoutCtx{inner, deadline}, func() {
		t.Stop()
		cancel(context.Canceled)
	}
}

// timeoutCtx is a context whose deadline is on a non-system Clock.
type timeoutCtx struct {
	context.Context // from context.WithCancelCause
	deadline        time.Time
}

func (c timeoutCtx) Deadline() (time.Time, bool) {
	if d, ok := c.Context.Deadline(); ok && d.Before(c.deadline) {
		return d, true
	}
	return c.deadline, true
}

func (c timeoutCtx) Err() error {
	err := c.Context.Err()
	if err != nil && errors.Is(context.Cause(c.Context), context.DeadlineExceeded) {
		return context.DeadlineExceeded
	}
	return err
}
