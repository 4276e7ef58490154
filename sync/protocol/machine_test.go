package protocol

import (
	"testing"
	"time"

	"github.com/crow-sync/crow/sync/wire"
)

var t0 = time.Unix(1_800_000_000, 0)

func fk(b byte) wire.FeedKey { return wire.FeedKey{b} }

func requests(o Output) []*wire.Request {
	var rs []*wire.Request
	for _, s := range o.Send {
		if r, ok := s.Msg.(*wire.Request); ok {
			rs = append(rs, r)
		}
	}
	return rs
}

// A peer with ten longer feeds gets at most MaxInflight requests; each
// answered request frees one slot; one request per feed at a time.
func TestBoundedInflight(t *testing.T) {
	m := New(Config{MaxInflight: 4, MaxBatchEntries: 100})
	m.PeerUp(t0, "p")
	if hs := m.Ready().Send; len(hs) != 1 {
		t.Fatalf("on connect want one Heads, got %+v", hs)
	}
	var heads []wire.Head
	for i := byte(1); i <= 10; i++ {
		heads = append(heads, wire.Head{Feed: fk(i), Length: 1000})
	}
	m.PeerHeads(t0, "p", heads)
	rs := requests(m.Ready())
	if len(rs) != 4 {
		t.Fatalf("%d requests in flight, want 4", len(rs))
	}
	for _, r := range rs {
		if r.Start != 0 || r.End != 100 {
			t.Fatalf("request %+v, want [0,100)", r)
		}
	}
	// Answer the first: it is stored, the feed continues and no fifth slot opens.
	r := rs[0]
	m.Receive(t0, "p", &wire.Data{ReqID: r.ReqID, Range: wire.Range{
		Head: wire.Head{Feed: r.Feed, Length: 1000}, Start: 0, Entries: make([][]byte, 100)}})
	o := m.Ready()
	if len(o.Store) != 1 || len(requests(o)) != 0 {
		t.Fatalf("after Data: %+v", o)
	}
	m.Stored(t0, "p", r.ReqID, StoreResult{Outcome: Stored, Head: wire.Head{Feed: r.Feed, Length: 100}})
	next := requests(m.Ready())
	if len(next) != 1 || next[0].Feed != r.Feed || next[0].Start != 100 || next[0].End != 200 {
		t.Fatalf("after store: %+v", next)
	}
	if st := m.Status()[0]; st.Inflight != 4 || st.EntriesReceived != 100 {
		t.Fatalf("status %+v", st)
	}
}

// A feed being fetched from one peer is not asked from another at the same time.
func TestSingleFlightAcrossPeers(t *testing.T) {
	m := New(Config{})
	m.PeerUp(t0, "p")
	m.PeerUp(t0, "q")
	m.Ready()
	m.PeerHeads(t0, "p", []wire.Head{{Feed: fk(1), Length: 10}})
	m.PeerHeads(t0, "q", []wire.Head{{Feed: fk(1), Length: 10}})
	o := m.Ready()
	if rs := requests(o); len(rs) != 1 || o.Send[0].Peer != "p" {
		t.Fatalf("requests %+v", o.Send)
	}
	// p goes away: the feed is asked from q.
	m.PeerDown(t0, "p")
	o = m.Ready()
	if rs := requests(o); len(rs) != 1 || o.Send[0].Peer != "q" {
		t.Fatalf("after p down: %+v", o.Send)
	}
}

func TestRejectedRangeHeldAndCounted(t *testing.T) {
	m := New(Config{RejectHold: time.Minute})
	m.PeerUp(t0, "p")
	m.Ready()
	m.PeerHeads(t0, "p", []wire.Head{{Feed: fk(1), Length: 10}})
	r := requests(m.Ready())[0]
	m.Receive(t0, "p", &wire.Data{ReqID: r.ReqID, Range: wire.Range{Head: wire.Head{Feed: fk(1), Length: 10}, Entries: make([][]byte, 10)}})
	m.Ready()
	m.Stored(t0, "p", r.ReqID, StoreResult{Outcome: Rejected})
	o := m.Ready()
	if len(o.Events) != 1 || o.Events[0].Kind != EventRejected || len(requests(o)) != 0 {
		t.Fatalf("after rejection: %+v", o)
	}
	if l, _ := m.Local(fk(1)); l.Length != 0 {
		t.Fatal("local head moved past a rejected range")
	}
	m.Tick(t0.Add(30 * time.Second))
	if len(requests(m.Ready())) != 0 {
		t.Fatal("asked again during the hold")
	}
	m.Tick(t0.Add(61 * time.Second))
	if len(requests(m.Ready())) != 1 {
		t.Fatal("not asked again after the hold")
	}
}

func TestDataNotMatchingRequestRejected(t *testing.T) {
	m := New(Config{})
	m.PeerUp(t0, "p")
	m.Ready()
	m.PeerHeads(t0, "p", []wire.Head{{Feed: fk(1), Length: 10}})
	r := requests(m.Ready())[0]
	m.Receive(t0, "p", &wire.Data{ReqID: r.ReqID, Range: wire.Range{Head: wire.Head{Feed: fk(1), Length: 10}, Start: 3, Entries: make([][]byte, 2)}})
	o := m.Ready()
	if len(o.Store) != 0 || len(o.Events) != 1 || o.Events[0].Kind != EventRejected {
		t.Fatalf("%+v", o)
	}
	m.Receive(t0, "p", &wire.Data{ReqID: 999})
	if o := m.Ready(); len(o.Events) != 1 || o.Events[0].Kind != EventRejected {
		t.Fatalf("unsolicited: %+v", o)
	}
}

func TestLocalAppendPushed(t *testing.T) {
	m := New(Config{})
	m.PeerUp(t0, "p")
	m.PeerUp(t0, "q")
	m.Ready()
	m.LocalHead(t0, wire.Head{Feed: fk(9), Length: 3})
	o := m.Ready()
	if len(o.Send) != 2 {
		t.Fatalf("push to both peers: %+v", o.Send)
	}
	m.LocalHead(t0, wire.Head{Feed: fk(9), Length: 3})
	if m.HasReady() {
		t.Fatal("same head pushed twice")
	}
}

func TestRequestTimeoutDisconnects(t *testing.T) {
	m := New(Config{RequestTimeout: 10 * time.Second})
	m.PeerUp(t0, "p")
	m.PeerHeads(t0, "p", []wire.Head{{Feed: fk(1), Length: 10}})
	m.Ready()
	m.Tick(t0.Add(5 * time.Second))
	if o := m.Ready(); len(o.Disconnect) != 0 {
		t.Fatal("early timeout")
	}
	m.Tick(t0.Add(10 * time.Second))
	if o := m.Ready(); len(o.Disconnect) != 1 || o.Events[0].Kind != EventTimeout {
		t.Fatalf("%+v", o)
	}
}

func TestBackoff(t *testing.T) {
	b := Backoff{Min: 100 * time.Millisecond, Max: time.Second}
	cases := []struct {
		n    int
		r    float64
		want time.Duration
	}{
		{0, 0, 50 * time.Millisecond},
		{0, 0.999999, 99999950 * time.Nanosecond},
		{1, 0, 100 * time.Millisecond},
		{3, 0.5, 600 * time.Millisecond},
		{4, 0, 500 * time.Millisecond}, // capped at Max
		{40, 0.5, 750 * time.Millisecond},
	}
	for _, c := range cases {
		if got := b.Delay(c.n, c.r); got != c.want {
			t.Errorf("Delay(%d, %v) = %v, want %v", c.n, c.r, got, c.want)
		}
	}
}

// Redials follow the backoff schedule on the injected time, with jitter from
// the injected source.
func TestRedialSchedule(t *testing.T) {
	m := New(Config{Backoff: Backoff{Min: time.Second, Max: 8 * time.Second}, Rand: func() float64 { return 0 }})
	m.SetPeers(t0, []PeerID{"p"})
	if o := m.Ready(); len(o.Dial) != 1 {
		t.Fatalf("no first dial: %+v", o)
	}
	now := t0
	for i, wait := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second} {
		m.DialDone(now, "p", errDial)
		m.Tick(now.Add(wait - time.Millisecond))
		if o := m.Ready(); len(o.Dial) != 0 {
			t.Fatalf("failure %d: redial before %v", i+1, wait)
		}
		now = now.Add(wait)
		m.Tick(now)
		if o := m.Ready(); len(o.Dial) != 1 {
			t.Fatalf("failure %d: no redial after %v", i+1, wait)
		}
	}
	// A session the peer closes before its Heads arrive (its gater refused
	// us after the handshake) is one more failure: the wait stays at its
	// cap (4 s with Rand 0) instead of dropping back to Min/2.
	m.DialDone(now, "p", nil)
	m.PeerUp(now, "p")
	m.Ready()
	m.PeerDown(now, "p")
	m.Tick(now.Add(4*time.Second - time.Millisecond))
	if o := m.Ready(); len(o.Dial) != 0 {
		t.Fatal("a session refused before greeting reset the backoff")
	}
	now = now.Add(4 * time.Second)
	m.Tick(now)
	if o := m.Ready(); len(o.Dial) != 1 {
		t.Fatalf("no redial after an ungreeted session: %+v", o)
	}
	// A greeted session resets the backoff: dropped, it is redialled after Min/2.
	m.DialDone(now, "p", nil)
	m.PeerUp(now, "p")
	m.PeerHeads(now, "p", nil)
	m.Ready()
	m.PeerDown(now, "p")
	m.Tick(now.Add(500 * time.Millisecond))
	if o := m.Ready(); len(o.Dial) != 1 {
		t.Fatalf("no redial after drop: %+v", o)
	}
	// Dropping p from the peer list stops dialing.
	m.DialDone(now, "p", errDial)
	m.SetPeers(now, nil)
	m.Tick(now.Add(time.Hour))
	if o := m.Ready(); len(o.Dial) != 0 {
		t.Fatal("dialing a removed peer")
	}
}

type dialErr struct{}

func (dialErr) Error() string { return "refused" }

var errDial = dialErr{}

// A range proven against a head the replica cannot use (the peer's head is
// older than the one held) is neither a rejection nor a store failure: the
// feed is asked from the other peer at once, and from this one again when it
// announces a newer head.
func TestStaleRangeAsksOtherPeers(t *testing.T) {
	m := New(Config{RetryHold: time.Minute})
	m.PeerUp(t0, "p")
	m.PeerUp(t0, "q")
	m.Ready()
	m.PeerHeads(t0, "p", []wire.Head{{Feed: fk(1), Length: 10}})
	r := requests(m.Ready())[0]
	m.PeerHeads(t0, "q", []wire.Head{{Feed: fk(1), Length: 20}})
	m.Receive(t0, "p", &wire.Data{ReqID: r.ReqID, Range: wire.Range{Head: wire.Head{Feed: fk(1), Length: 10}, Entries: make([][]byte, 10)}})
	m.Ready()
	m.Stored(t0, "p", r.ReqID, StoreResult{Outcome: Stale})
	o := m.Ready()
	if len(o.Events) != 1 || o.Events[0].Kind != EventStale {
		t.Fatalf("events after a stale range: %+v", o.Events)
	}
	rs := requests(o)
	if len(rs) != 1 || o.Send[0].Peer != "q" {
		t.Fatalf("want the feed asked from q, got %+v", o.Send)
	}
	m.Receive(t0, "q", &wire.Data{ReqID: rs[0].ReqID, Range: wire.Range{Head: wire.Head{Feed: fk(1), Length: 20}, Entries: make([][]byte, 5)}})
	m.Ready()
	m.Stored(t0, "q", rs[0].ReqID, StoreResult{Outcome: Stored, Head: wire.Head{Feed: fk(1), Length: 5}})
	m.Ready() // q is asked for [5,20)
	m.PeerDown(t0, "q")
	if rs := requests(m.Ready()); len(rs) != 0 {
		t.Fatalf("p asked again during its hold with no new head: %+v", rs)
	}
	m.PeerHeads(t0, "p", []wire.Head{{Feed: fk(1), Length: 30}})
	if rs := requests(m.Ready()); len(rs) != 1 || rs[0].Start != 5 {
		t.Fatalf("p not asked after announcing a newer head: %+v", rs)
	}
}

// A peer still sending (Data for other requests, heads) is not timed out
// for a request it has not answered yet; once it goes silent it is.
func TestRequestTimeoutCountsFromTheLastMessage(t *testing.T) {
	m := New(Config{RequestTimeout: 10 * time.Second, MaxBatchEntries: 5})
	m.PeerUp(t0, "p")
	m.PeerHeads(t0, "p", []wire.Head{{Feed: fk(1), Length: 10}, {Feed: fk(2), Length: 10}})
	rs := requests(m.Ready())
	if len(rs) != 2 {
		t.Fatalf("requests %+v", rs)
	}
	// At 8 s the peer answers the first; the second stays unanswered.
	m.Receive(t0.Add(8*time.Second), "p", &wire.Data{ReqID: rs[0].ReqID, Range: wire.Range{Head: wire.Head{Feed: rs[0].Feed, Length: 10}, Entries: make([][]byte, 5)}})
	m.Ready()
	m.Stored(t0.Add(8*time.Second), "p", rs[0].ReqID, StoreResult{Outcome: Stored, Head: wire.Head{Feed: rs[0].Feed, Length: 5}})
	m.Ready()
	m.Tick(t0.Add(12 * time.Second))
	if o := m.Ready(); len(o.Disconnect) != 0 {
		t.Fatal("timed out a peer that answered 4 s ago")
	}
	m.Tick(t0.Add(18 * time.Second))
	if o := m.Ready(); len(o.Disconnect) != 1 {
		t.Fatalf("a peer silent for 10 s with a request open was kept: %+v", o)
	}
}
