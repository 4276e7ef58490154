package daemon

import (
	"log/slog"
	"strconv"
	"sync/atomic"

	crowsync "github.com/crow-sync/crow/sync"
)

// tamperEnv names the test hook that corrupts served ranges: with
// CROW_TEST_TAMPER_SERVE=N the daemon flips one bit in one entry of each of
// the first N ranges it serves to peers, to prove end to end that receivers
// reject what does not verify and that sync recovers. Never set it in
// production; the daemon logs loudly when it is on.
const tamperEnv = "CROW_TEST_TAMPER_SERVE"

// tamperingFeeds wraps sync.Feeds with the tamper hook.
type tamperingFeeds struct {
	crowsync.Feeds
	left atomic.Int64
}

// withTestHooks returns f, wrapped if a test hook is set in the environment
// (getenv).
func withTestHooks(log *slog.Logger, getenv func(string) string, f crowsync.Feeds) crowsync.Feeds {
	n, err := strconv.Atoi(getenv(tamperEnv))
	if err != nil || n <= 0 {
		return f
	}
	log.Warn("TEST HOOK ON: corrupting served sync ranges", "env", tamperEnv, "ranges", n)
	t := &tamperingFeeds{Feeds: f}
	t.left.Store(int64(n))
	return t
}

func (t *tamperingFeeds) ReadRange(feed crowsync.FeedKey, start, end uint64, maxBytes int) (crowsync.Range, error) {
	r, err := t.Feeds.ReadRange(feed, start, end, maxBytes)
	if err != nil || len(r.Entries) == 0 || t.left.Add(-1) < 0 {
		return r, err
	}
	e := append([]byte(nil), r.Entries[0]...)
	if len(e) > 0 {
		e[len(e)/2] ^= 0x01
	}
	entries := append([][]byte{e}, r.Entries[1:]...)
	r.Entries = entries
	return r, nil
}
