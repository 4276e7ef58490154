package conflicts

import (
	"context"
	"encoding/hex"
	"fmt"
	"log/slog"
)

// Raiser records operator notifications (Store.Raise).
type Raiser interface {
	Raise(kind, title, body, link string) error
}

// ForkNotifier tells the operator about forked feeds: a feed with two
// validly signed histories that do not extend each other (a restored backup,
// a cloned machine) stops replicating, and the operator hears of it through
// one high-priority KindFeedFork notification per burst. Report is the input
// (the sync node's fork events); Serve raises the notifications.
type ForkNotifier struct {
	raise Raiser
	name  func(feedKey []byte) (string, bool)
	log   *slog.Logger
	forks chan []byte
}

// ForkBuffer is how many reported forks wait for Serve; more are dropped
// (the notification is one per burst anyway).
const ForkBuffer = 16

// NewForkNotifier returns a notifier raising on r. name describes the
// instance whose feed key it is (e.g. registry.DescribeKey), false when
// unknown: the notification then names the key's first bytes in hex.
func NewForkNotifier(r Raiser, name func(feedKey []byte) (string, bool), log *slog.Logger) *ForkNotifier {
	if log == nil {
		log = slog.Default()
	}
	if name == nil {
		name = func([]byte) (string, bool) { return "", false }
	}
	return &ForkNotifier{raise: r, name: name, log: log.With("component", "fork-notifier"), forks: make(chan []byte, ForkBuffer)}
}

// Report queues a fork of the feed with key feedKey. It never blocks, so
// the sync node may call it from its loop.
func (n *ForkNotifier) Report(feedKey []byte) {
	select {
	case n.forks <- append([]byte(nil), feedKey...):
	default: // a burst: the notification is deduplicated anyway
	}
}

// Serve raises a notification for each reported fork until ctx ends.
func (n *ForkNotifier) Serve(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case key := <-n.forks:
			if err := n.raise.Raise(KindFeedFork, "A feed forked", n.body(key), InstancesLink); err != nil {
				n.log.Error("raising the fork notification", "err", err)
			}
		}
	}
}

// body is the notification text for a fork of key.
func (n *ForkNotifier) body(key []byte) string {
	who, ok := n.name(key)
	if !ok {
		who = hex.EncodeToString(key[:min(4, len(key))])
	}
	return fmt.Sprintf("The feed of %s has two validly signed histories that do not extend each other "+
		"(a restored backup or a cloned machine?). It stopped replicating; both heads are kept as evidence.", who)
}
