package apply

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crow-sync/crow/feed"
	"github.com/crow-sync/crow/store"

	"github.com/prometheus/client_golang/prometheus"
)

// certs is a fake registry: the trust of each feed key (unknown if unset).
type certs struct {
	mu sync.Mutex
	m  map[feed.PublicKey]feedTrust
}

func newCerts() *certs { return &certs{m: map[feed.PublicKey]feedTrust{}} }

func (c *certs) set(key feed.PublicKey, t Trust, id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[key] = feedTrust{trust: t, instance: id}
}

func (c *certs) trust(key feed.PublicKey) (Trust, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.m[key]
	return t.trust, t.instance
}

// logBuf is a goroutine-safe log sink.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

// trustedNode is an instance whose applier asks c for feed trust, with its
// metrics registered in the returned registry and its logs in the buffer.
func trustedNode(t *testing.T, id string, c *certs, opts func(*Options)) (*node, *prometheus.Registry, *logBuf) {
	t.Helper()
	reg, logs := prometheus.NewRegistry(), &logBuf{}
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	n := newNode(t, id, "", func(o *Options) {
		o.FeedTrust, o.Metrics = c.trust, m
		o.Logger = slog.New(slog.NewTextHandler(logs, nil))
		if opts != nil {
			opts(o)
		}
	})
	return n, reg, logs
}

// parkedGauge reads crow_apply_feeds_parked{reason}.
func parkedGauge(t *testing.T, reg *prometheus.Registry, reason string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "crow_apply_feeds_parked" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("no crow_apply_feeds_parked{reason=%q}", reason)
	return 0
}

func checkpoint(t *testing.T, n *node, key feed.PublicKey) uint64 {
	t.Helper()
	st, err := n.db.SyncState()
	if err != nil {
		t.Fatal(err)
	}
	return st.Applied[key.String()]
}

// TestUncertifiedFeedWaitsForCertificate: a feed whose key has no
// certificate is not applied, nothing of it is parked and its checkpoint
// stays at 0; once the registry certifies it, a Notify applies all of it.
func TestUncertifiedFeedWaitsForCertificate(t *testing.T) {
	c := newCerts()
	a := newNode(t, "a", "", nil)
	got := make(chan string, 100)
	b, reg, logs := trustedNode(t, "b", c, func(o *Options) {
		o.MaxBatch = 4
		o.Rescan = time.Hour // only Notify wakes it
		o.OnApplied = func(table string, r *store.Row) { got <- r.RowID }
	})
	for i := range 10 {
		a.put(mem, fmt.Sprint(i), fmt.Sprintf(`{"v":%d}`, i))
	}
	pull(t, b, a, a.log.Key(), 100)
	for range 3 { // passes over an uncertified feed
		if n := b.catchUp(); n != 0 {
			t.Fatalf("processed %d entries of an uncertified feed", n)
		}
	}
	if cp := checkpoint(t, b, a.log.Key()); cp != 0 {
		t.Fatalf("checkpoint %d", cp)
	}
	if ps, err := b.ap.Parked(); err != nil || len(ps) != 0 {
		t.Fatalf("parked %v %+v", err, ps)
	}
	if b.get(mem, "0") != nil {
		t.Fatal("applied")
	}
	if s := b.ap.Stats(); s.UncertifiedFeeds != 1 || s.RevokedFeeds != 0 || s.Parked != 0 {
		t.Fatalf("stats %+v", s)
	}
	if g := parkedGauge(t, reg, "uncertified"); g != 1 {
		t.Fatalf("gauge %v", g)
	}
	if n := logs.count("no valid certificate"); n != 1 {
		t.Fatalf("logged %d times, want once:\n%s", n, logs.b.String())
	}

	idle := make(chan struct{}, 1)
	b.ap.idle = func() {
		select {
		case idle <- struct{}{}:
		default:
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.ap.Serve(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	<-idle // a pass with the feed still uncertified
	c.set(a.log.Key(), TrustCertified, "a")
	b.ap.Notify()
	for i := range 10 {
		select {
		case id := <-got:
			if id != fmt.Sprint(i) {
				t.Fatalf("applied %s, want %d", id, i)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("entry %d not applied after the certificate and Notify", i)
		}
	}
	<-idle
	if cp := checkpoint(t, b, a.log.Key()); cp != 10 {
		t.Fatalf("checkpoint %d", cp)
	}
	if s := b.ap.Stats(); s.UncertifiedFeeds != 0 || s.FastForward != 10 {
		t.Fatalf("stats %+v", s)
	}
	if g := parkedGauge(t, reg, "uncertified"); g != 0 {
		t.Fatalf("gauge %v", g)
	}
	if n := logs.count("feed key certified"); n != 1 {
		t.Fatalf("certification logged %d times:\n%s", n, logs.b.String())
	}
}

// TestRevokedMidCatchUp: a revocation that lands while a feed is being
// applied stops it at the next batch; the rest is never applied, even after
// more entries arrive, and its checkpoint stays.
func TestRevokedMidCatchUp(t *testing.T) {
	c := newCerts()
	a := newNode(t, "a", "", nil)
	b, reg, logs := trustedNode(t, "b", c, func(o *Options) { o.MaxBatch = 5 })
	c.set(a.log.Key(), TrustCertified, "a")
	for i := range 20 {
		a.put(mem, fmt.Sprint(i), fmt.Sprintf(`{"v":%d}`, i))
	}
	pull(t, b, a, a.log.Key(), 100)
	b.ap.hook = func(staged int) error {
		if staged == 10 { // the last entry of the second batch
			c.set(a.log.Key(), TrustRevoked, "")
		}
		return nil
	}
	if n := b.catchUp(); n != 10 {
		t.Fatalf("processed %d, want the two batches staged before the revocation", n)
	}
	for range 5 {
		a.put(mem, "late", `{"v":"late"}`)
	}
	pull(t, b, a, a.log.Key(), 100)
	if n := b.catchUp(); n != 0 {
		t.Fatalf("processed %d entries of a revoked feed", n)
	}
	for i := range 20 {
		if r := b.get(mem, fmt.Sprint(i)); (r != nil) != (i < 10) {
			t.Fatalf("row %d: %+v", i, r)
		}
	}
	if b.get(mem, "late") != nil {
		t.Fatal("an entry that arrived after the revocation was applied")
	}
	if cp := checkpoint(t, b, a.log.Key()); cp != 10 {
		t.Fatalf("checkpoint %d", cp)
	}
	if ps, err := b.ap.Parked(); err != nil || len(ps) != 0 {
		t.Fatalf("parked %v %+v", err, ps)
	}
	if s := b.ap.Stats(); s.RevokedFeeds != 1 || s.UncertifiedFeeds != 0 || s.FastForward != 10 {
		t.Fatalf("stats %+v", s)
	}
	if g := parkedGauge(t, reg, "revoked"); g != 1 {
		t.Fatalf("gauge %v", g)
	}
	if n := logs.count("revoked"); n != 1 {
		t.Fatalf("revocation logged %d times:\n%s", n, logs.b.String())
	}
}

// TestEntryOfAnotherInstanceParked: a certified feed speaks only for the
// instance it is certified for: an entry naming another instance id is
// parked, the others are applied; a feed certified for another instance
// than the one its entries name has all of them parked.
func TestEntryOfAnotherInstanceParked(t *testing.T) {
	c := newCerts()
	m, a := newNode(t, "m", "", nil), newNode(t, "a", "", nil)
	b, _, _ := trustedNode(t, "b", c, nil)
	c.set(m.log.Key(), TrustCertified, "m")
	c.set(a.log.Key(), TrustCertified, "x") // a's key is certified for x
	m.put(mem, "1", `{"v":1}`)
	forged, err := store.ChangeRecord{Schema: store.ChangeSchema, Type: store.ChangeType(mem, store.OpInsert),
		Table: mem, RowID: "z1", Op: store.OpInsert, Data: []byte(`{"v":"z"}`), Lamport: 1, InstanceID: "z",
		Timestamp: testEpoch.Unix(), VV: store.VV{"z": 1}}.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.log.Append([][]byte{forged}); err != nil {
		t.Fatal(err)
	}
	m.put(mem, "2", `{"v":2}`)
	a.put(mem, "3", `{"v":3}`)
	pull(t, b, m, m.log.Key(), 100)
	pull(t, b, a, a.log.Key(), 100)
	if n := b.catchUp(); n != 4 {
		t.Fatalf("processed %d", n)
	}
	if b.get(mem, "1") == nil || b.get(mem, "2") == nil {
		t.Fatal("the certified instance's entries were not applied")
	}
	if b.get(mem, "z1") != nil || b.get(mem, "3") != nil {
		t.Fatal("an entry naming another instance than the feed's certified one was applied")
	}
	ps, err := b.ap.Parked()
	if err != nil || len(ps) != 2 {
		t.Fatalf("parked: %v %+v", err, ps)
	}
	for _, p := range ps {
		want := map[string][2]string{m.log.Key().String(): {"z", "m"}, a.log.Key().String(): {"a", "x"}}[p.Feed]
		if !strings.Contains(p.Reason, "instance "+want[0]+",") || !strings.Contains(p.Reason, "certified for instance "+want[1]) {
			t.Fatalf("reason %q (feed %s)", p.Reason, p.Feed)
		}
	}
	if cp := checkpoint(t, b, m.log.Key()); cp != 3 {
		t.Fatalf("checkpoint %d", cp)
	}
	if s := b.ap.Stats(); s.Parked != 2 || s.FastForward != 2 || s.UncertifiedFeeds != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// TestCertifiedWithoutInstanceIsUnknown: a certificate always names an
// instance; TrustCertified without one is not taken as "no author check".
func TestCertifiedWithoutInstanceIsUnknown(t *testing.T) {
	c := newCerts()
	a := newNode(t, "a", "", nil)
	b, _, _ := trustedNode(t, "b", c, nil)
	c.set(a.log.Key(), TrustCertified, "")
	a.put(mem, "1", `{"v":1}`)
	pull(t, b, a, a.log.Key(), 100)
	if n := b.catchUp(); n != 0 || b.ap.Stats().UncertifiedFeeds != 1 {
		t.Fatalf("processed %d, %+v", n, b.ap.Stats())
	}
}
