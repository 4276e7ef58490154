package clock

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestWithTimeoutFake(t *testing.T) {
	f := NewFake(epoch)
	ctx, cancel := WithTimeout(context.Background(), f, 5*time.Second)
	defer cancel()
	if d, ok := ctx.Deadline(); !ok || !d.Equal(epoch.Add(5*time.Second)) {
		t.Fatalf("Deadline = %v, %v", d, ok)
	}
	child, cancelChild := context.WithCancel(ctx)
	defer cancelChild()
	f.Advance(4 * time.Second)
	if ctx.Err() != nil {
		t.Fatalf("done early: %v", ctx.Err())
	}
	f.Advance(time.Second)
	<-ctx.Done()
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("Err = %v; want DeadlineExceeded", ctx.Err())
	}
	<-child.Done()
	if !errors.Is(context.Cause(child), context.DeadlineExceeded) {
		t.Fatalf("child cause = %v; want DeadlineExceeded", context.Cause(child))
	}
}

func TestWithTimeoutFakeCancel(t *testing.T) {
	f := NewFake(epoch)
	parent, cancelParent := context.WithCancel(context.Background())
	ctx, cancel := WithTimeout(parent, f, time.Second)
	defer cancel()
	cancelParent()
	<-ctx.Done()
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Fatalf("Err = %v; want Canceled from the parent", ctx.Err())
	}

	cancel() // stops the timer at once (the parent's end stops it soon)
	ctx, cancel = WithTimeout(context.Background(), f, time.Second)
	cancel()
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Fatalf("Err after cancel = %v; want Canceled", ctx.Err())
	}
	if n := len(f.Pending()); n != 0 {
		t.Fatalf("cancel left %d timers pending", n)
	}
}

func TestWithTimeoutSystem(t *testing.T) {
	ctx, cancel := WithTimeout(context.Background(), System{}, time.Millisecond)
	defer cancel()
	<-ctx.Done()
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("Err = %v", ctx.Err())
	}
}
