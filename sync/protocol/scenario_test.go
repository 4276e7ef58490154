package protocol_test

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	crowsync "github.com/crow-sync/crow/sync"
	"github.com/crow-sync/crow/sync/internal/memfeed"
	"github.com/crow-sync/crow/sync/protocol"
	"github.com/crow-sync/crow/sync/wire"
)

// TestScenarios runs the scripts in testdata/*.txt against a cluster of
// Machines, each driven by the harness below as package sync's Node drives it
// (see the caller contract in doc.go), over honest in-memory feeds
// (sync/internal/memfeed: signed heads, verified ranges) and a message queue
// the script delivers step by step. Regenerate the expected output with
//
//	go test ./sync/protocol -run TestScenarios -rewrite
//
// and read the diff: it is the behaviour change.
//
// Commands (names are nodes; a node's own feed is named after it):
//
//	peer A B... [clone=X] [inflight=N] [batch=N] [timeout=D] [reject-hold=D] [retry-hold=D]
//	    new nodes with their own feeds; clone=X authors X's feed with X's key
//	    (a restored identity writing a second history: a fork)
//	append A [n=1]          A appends n entries to its own feed
//	connect A B             a session: PeerUp on both sides
//	disconnect A B          the session ends: queued messages between them are lost
//	deliver [from=A] [to=B] [n=K]
//	                        deliver the queued messages (at most K) in order;
//	                        the messages this causes are queued, not delivered
//	stabilize               deliver until the queue is empty
//	drop [from=A] [to=B] [n=K]   lose queued messages
//	tamper from=A to=B      flip a byte of an entry in the next Data queued A→B
//	fail A outcome=stale|failed  A's next store reports that outcome
//	                        (memfeed cannot produce a stale head; package feed can)
//	tick [d=1s]             advance the clock, Tick every node
//	queue                   list the queued messages
//	status A                A's heads and its view of each peer
//
// Output: "A->B: message" for a message sent, "A: ..." for what A did
// (store outcomes, events, dials). Heads print as feed:length, with /signed
// when the signed head covers more entries than are held.
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		c := newCluster()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out, err := c.run(d)
			if err != nil {
				d.Fatalf(t, "%v", err)
			}
			return out
		})
	})
}

var t0 = time.Unix(1_800_000_000, 0)

type node struct {
	name  string
	feeds *memfeed.Feeds
	m     *protocol.Machine
	batch uint64
	fail  protocol.Outcome // injected outcome of the next store (Stored: none)
}

type envelope struct {
	from, to string
	payload  []byte // wire-encoded, so every message crosses the real codec
}

type cluster struct {
	now   time.Time
	nodes map[string]*node
	names map[wire.FeedKey]string // feed key → author's name
	links map[[2]string]bool      // open sessions, by sorted pair
	queue []envelope
	out   *strings.Builder
}

func newCluster() *cluster {
	return &cluster{now: t0, nodes: map[string]*node{}, names: map[wire.FeedKey]string{},
		links: map[[2]string]bool{}}
}

func pair(a, b string) [2]string {
	if a > b {
		a, b = b, a
	}
	return [2]string{a, b}
}

func (c *cluster) printf(format string, args ...any) { fmt.Fprintf(c.out, format+"\n", args...) }

func (c *cluster) run(d *datadriven.TestData) (string, error) {
	c.out = &strings.Builder{}
	var names []string
	opts := map[string]string{}
	for _, a := range d.CmdArgs {
		if len(a.Vals) == 0 {
			names = append(names, a.Key)
		} else {
			opts[a.Key] = a.Vals[0]
		}
	}
	var err error
	switch d.Cmd {
	case "peer":
		err = c.peer(names, opts)
	case "append":
		err = c.append(names, opts)
	case "connect":
		err = c.connect(names)
	case "disconnect":
		err = c.disconnect(names)
	case "deliver":
		err = c.deliver(opts, false)
	case "stabilize":
		for i := 0; len(c.queue) > 0; i++ {
			if i == 100 {
				return "", errors.New("stabilize: still busy after 100 rounds")
			}
			if err = c.deliver(nil, false); err != nil {
				break
			}
		}
	case "drop":
		err = c.deliver(opts, true)
	case "tamper":
		err = c.tamper(opts)
	case "fail":
		err = c.failNext(names, opts)
	case "tick":
		err = c.tick(opts)
	case "queue":
		for _, e := range c.queue {
			c.printf("%s->%s: %s", e.from, e.to, c.describe(e.payload))
		}
	case "status":
		err = c.status(names)
	default:
		err = fmt.Errorf("unknown command %q", d.Cmd)
	}
	if err != nil {
		return "", err
	}
	if c.out.Len() == 0 {
		return "ok\n", nil
	}
	return c.out.String(), nil
}

func (c *cluster) node(name string) (*node, error) {
	n := c.nodes[name]
	if n == nil {
		return nil, fmt.Errorf("no node %q", name)
	}
	return n, nil
}

func (c *cluster) two(names []string) (*node, *node, error) {
	if len(names) != 2 || names[0] == names[1] {
		return nil, nil, fmt.Errorf("want two distinct nodes, got %v", names)
	}
	a, err := c.node(names[0])
	if err != nil {
		return nil, nil, err
	}
	b, err := c.node(names[1])
	return a, b, err
}

func duration(opts map[string]string, key string) (time.Duration, error) {
	v, ok := opts[key]
	if !ok {
		return 0, nil
	}
	return time.ParseDuration(v)
}

func number(opts map[string]string, key string, def uint64) (uint64, error) {
	v, ok := opts[key]
	if !ok {
		return def, nil
	}
	return strconv.ParseUint(v, 10, 64)
}

func (c *cluster) peer(names []string, opts map[string]string) error {
	cfg := protocol.Config{Rand: func() float64 { return 0 }}
	inflight, err := number(opts, "inflight", 0)
	if err != nil {
		return err
	}
	cfg.MaxInflight = int(inflight)
	if cfg.MaxBatchEntries, err = number(opts, "batch", 0); err != nil {
		return err
	}
	for key, d := range map[string]*time.Duration{"timeout": &cfg.RequestTimeout,
		"reject-hold": &cfg.RejectHold, "retry-hold": &cfg.RetryHold} {
		if *d, err = duration(opts, key); err != nil {
			return err
		}
	}
	for _, name := range names {
		if c.nodes[name] != nil {
			return fmt.Errorf("node %q exists", name)
		}
		author := name
		if x, ok := opts["clone"]; ok {
			author = x
		}
		seed := sha256.Sum256([]byte(author))
		feeds := memfeed.New(ed25519.NewKeyFromSeed(seed[:]), nil)
		if _, ok := c.names[feeds.Self()]; !ok {
			c.names[feeds.Self()] = author
		}
		nc := cfg
		nc.Self = feeds.Self()
		n := &node{name: name, feeds: feeds, m: protocol.New(nc), batch: cfg.MaxBatchEntries}
		if n.batch == 0 {
			n.batch = 4096
		}
		c.nodes[name] = n
		heads, _ := feeds.Heads()
		for _, h := range heads {
			n.m.LocalHead(c.now, h)
		}
		c.process(n)
	}
	return nil
}

func (c *cluster) append(names []string, opts map[string]string) error {
	if len(names) != 1 {
		return fmt.Errorf("append one node, got %v", names)
	}
	n, err := c.node(names[0])
	if err != nil {
		return err
	}
	count, err := number(opts, "n", 1)
	if err != nil {
		return err
	}
	held := n.feeds.Len(n.feeds.Self())
	var entries [][]byte
	for i := range count {
		entries = append(entries, fmt.Appendf(nil, "%s entry %d", n.name, held+i))
	}
	h := n.feeds.Append(entries...)
	n.m.LocalHead(c.now, h)
	c.process(n)
	return nil
}

func (c *cluster) connect(names []string) error {
	a, b, err := c.two(names)
	if err != nil {
		return err
	}
	if c.links[pair(a.name, b.name)] {
		return fmt.Errorf("%s and %s already connected", a.name, b.name)
	}
	c.links[pair(a.name, b.name)] = true
	a.m.PeerUp(c.now, protocol.PeerID(b.name))
	b.m.PeerUp(c.now, protocol.PeerID(a.name))
	c.process(a)
	c.process(b)
	return nil
}

func (c *cluster) disconnect(names []string) error {
	a, b, err := c.two(names)
	if err != nil {
		return err
	}
	if !c.links[pair(a.name, b.name)] {
		return fmt.Errorf("%s and %s not connected", a.name, b.name)
	}
	c.cut(a, b)
	return nil
}

// cut ends the session of a and b and drops the messages between them.
func (c *cluster) cut(a, b *node) {
	delete(c.links, pair(a.name, b.name))
	lost := 0
	c.queue = slices.DeleteFunc(c.queue, func(e envelope) bool {
		if pair(e.from, e.to) == pair(a.name, b.name) {
			lost++
			return true
		}
		return false
	})
	if lost > 0 {
		c.printf("%s-%s: session ended, lost %d queued", a.name, b.name, lost)
	}
	a.m.PeerDown(c.now, protocol.PeerID(b.name))
	b.m.PeerDown(c.now, protocol.PeerID(a.name))
	c.process(a)
	c.process(b)
}

func matches(e envelope, opts map[string]string) bool {
	if f, ok := opts["from"]; ok && e.from != f {
		return false
	}
	if to, ok := opts["to"]; ok && e.to != to {
		return false
	}
	return true
}

// deliver delivers (or, with lose, drops) the queued messages matching opts.
func (c *cluster) deliver(opts map[string]string, lose bool) error {
	limit, err := number(opts, "n", uint64(len(c.queue)))
	if err != nil {
		return err
	}
	var picked []envelope
	rest := c.queue[:0:0]
	for _, e := range c.queue {
		if uint64(len(picked)) < limit && matches(e, opts) {
			picked = append(picked, e)
		} else {
			rest = append(rest, e)
		}
	}
	c.queue = rest
	for _, e := range picked {
		if lose {
			c.printf("%s->%s: lost %s", e.from, e.to, c.describe(e.payload))
			continue
		}
		c.receive(e)
	}
	return nil
}

// receive hands one message to its addressee, as Node.handleEvent does.
func (c *cluster) receive(e envelope) {
	n := c.nodes[e.to]
	from := protocol.PeerID(e.from)
	msg, err := wire.Decode(e.payload)
	if err != nil {
		c.printf("%s: undecodable message from %s: %v", n.name, e.from, err)
		return
	}
	if hs, ok := msg.(*wire.Heads); ok {
		var verified []wire.Head
		for _, h := range hs.Heads {
			v, err := n.feeds.VerifyHead(h)
			switch {
			case err == nil:
				verified = append(verified, v)
			case errors.Is(err, crowsync.ErrFork):
				n.m.HeadForked(c.now, from, h.Feed, err)
			default:
				c.printf("%s: head %s from %s failed verification: %v", n.name, c.head(h), e.from, err)
			}
		}
		n.m.PeerHeads(c.now, from, verified)
	} else {
		n.m.Receive(c.now, from, msg)
	}
	c.process(n)
}

func (c *cluster) tamper(opts map[string]string) error {
	for i, e := range c.queue {
		if !matches(e, opts) {
			continue
		}
		msg, err := wire.Decode(e.payload)
		if err != nil {
			return err
		}
		d, ok := msg.(*wire.Data)
		if !ok || len(d.Entries) == 0 || len(d.Entries[0]) == 0 {
			continue
		}
		d.Entries[0][0] ^= 0xff
		c.queue[i].payload = wire.Encode(d)
		c.printf("%s->%s: tampered with %s", e.from, e.to, c.describe(c.queue[i].payload))
		return nil
	}
	return fmt.Errorf("no queued Data matching %v", opts)
}

func (c *cluster) failNext(names []string, opts map[string]string) error {
	if len(names) != 1 {
		return fmt.Errorf("fail one node, got %v", names)
	}
	n, err := c.node(names[0])
	if err != nil {
		return err
	}
	switch opts["outcome"] {
	case "stale":
		n.fail = protocol.Stale
	case "failed":
		n.fail = protocol.Failed
	default:
		return fmt.Errorf("outcome=stale|failed, got %q", opts["outcome"])
	}
	return nil
}

func (c *cluster) tick(opts map[string]string) error {
	d, err := duration(opts, "d")
	if err != nil {
		return err
	}
	if d == 0 {
		d = time.Second
	}
	c.now = c.now.Add(d)
	c.printf("t=%s", c.now.Sub(t0))
	for _, name := range c.sorted() {
		c.nodes[name].m.Tick(c.now)
		c.process(c.nodes[name])
	}
	return nil
}

func (c *cluster) sorted() []string {
	names := make([]string, 0, len(c.nodes))
	for name := range c.nodes {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// process carries out n's output in the contract's order until none is left.
func (c *cluster) process(n *node) {
	for n.m.HasReady() {
		out := n.m.Ready()
		for _, s := range out.Store {
			res := c.store(n, s)
			c.printf("%s: store %s from %s: %s", n.name, c.rng(s.Range), s.Peer, c.outcome(res))
			n.m.Stored(c.now, s.Peer, s.ReqID, res)
		}
		for _, s := range out.Serve {
			c.serve(n, s)
		}
		for _, o := range out.Send {
			c.send(n.name, string(o.Peer), o.Msg)
		}
		for _, p := range out.Disconnect {
			c.printf("%s: disconnect %s", n.name, p)
			if other := c.nodes[string(p)]; other != nil && c.links[pair(n.name, other.name)] {
				c.cut(n, other)
			}
		}
		for _, p := range out.Dial {
			c.printf("%s: dial %s", n.name, p)
		}
		for _, ev := range out.Events {
			line := fmt.Sprintf("%s: event %s peer=%s", n.name, ev.Kind, ev.Peer)
			if ev.Feed != (wire.FeedKey{}) {
				line += " feed=" + c.feed(ev.Feed)
			}
			if ev.Detail != "" {
				line += fmt.Sprintf(" detail=%q", ev.Detail)
			}
			c.printf("%s", line)
		}
	}
}

// store verifies and stores a range as Node.store does.
func (c *cluster) store(n *node, s protocol.Store) protocol.StoreResult {
	if n.fail != protocol.Stored {
		o := n.fail
		n.fail = protocol.Stored
		return protocol.StoreResult{Outcome: o, Err: errors.New("injected")}
	}
	head, err := n.feeds.VerifyAndStore(s.Range)
	switch {
	case err == nil:
		return protocol.StoreResult{Outcome: protocol.Stored, Head: head}
	case errors.Is(err, crowsync.ErrFork):
		return protocol.StoreResult{Outcome: protocol.Forked, Err: err}
	case errors.Is(err, crowsync.ErrRejected), errors.Is(err, crowsync.ErrUnknownFeed):
		return protocol.StoreResult{Outcome: protocol.Rejected, Err: err}
	default:
		return protocol.StoreResult{Outcome: protocol.Failed, Err: err}
	}
}

func (c *cluster) outcome(res protocol.StoreResult) string {
	switch res.Outcome {
	case protocol.Stored:
		return "stored, now " + c.head(res.Head)
	case protocol.Rejected:
		return "rejected"
	case protocol.Forked:
		return "forked"
	case protocol.Stale:
		return "stale"
	}
	return "failed"
}

// serve answers a request as Node.serve does.
func (c *cluster) serve(n *node, s protocol.Serve) {
	req := s.Request
	to := string(s.Peer)
	end := min(req.End, req.Start+n.batch)
	if req.End <= req.Start {
		c.send(n.name, to, &wire.Error{ReqID: req.ReqID, Code: wire.CodeBadRequest, Message: "empty range"})
		return
	}
	r, err := n.feeds.ReadRange(req.Feed, req.Start, end, 1<<20)
	if err != nil {
		c.send(n.name, to, &wire.Error{ReqID: req.ReqID, Code: wire.CodeNotFound, Message: "range not held"})
		return
	}
	if c.send(n.name, to, &wire.Data{ReqID: req.ReqID, Range: r}) {
		n.m.Served(s.Peer, len(r.Entries))
	}
}

func (c *cluster) send(from, to string, msg wire.Message) bool {
	b := wire.Encode(msg)
	if !c.links[pair(from, to)] {
		c.printf("%s->%s: %s (not connected: dropped)", from, to, c.describe(b))
		return false
	}
	c.queue = append(c.queue, envelope{from: from, to: to, payload: b})
	c.printf("%s->%s: %s", from, to, c.describe(b))
	return true
}

func (c *cluster) describe(payload []byte) string {
	msg, err := wire.Decode(payload)
	if err != nil {
		return fmt.Sprintf("undecodable (%v)", err)
	}
	switch m := msg.(type) {
	case *wire.Heads:
		hs := make([]string, 0, len(m.Heads))
		for _, h := range m.Heads {
			hs = append(hs, c.head(h))
		}
		return "heads " + strings.Join(hs, " ")
	case *wire.Request:
		return fmt.Sprintf("request#%d %s[%d,%d)", m.ReqID, c.feed(m.Feed), m.Start, m.End)
	case *wire.Data:
		return fmt.Sprintf("data#%d %s proven by %s", m.ReqID, c.rng(m.Range), c.head(m.Head))
	case *wire.Error:
		return fmt.Sprintf("error#%d %s %q", m.ReqID, m.Code, m.Message)
	}
	return fmt.Sprintf("%T", msg)
}

func (c *cluster) feed(k wire.FeedKey) string {
	if name, ok := c.names[k]; ok {
		return name
	}
	return k.Short()
}

func (c *cluster) rng(r wire.Range) string {
	return fmt.Sprintf("%s[%d,%d)", c.feed(r.Head.Feed), r.Start, r.End())
}

// head prints feed:length, and /signed when memfeed's signed head (magic ‖
// feed ‖ length u64 ‖ ...) covers more than the held length.
func (c *cluster) head(h wire.Head) string {
	s := fmt.Sprintf("%s:%d", c.feed(h.Feed), h.Length)
	const at = len("memfeed1") + 32
	if len(h.Signed) >= at+8 {
		if signed := binary.BigEndian.Uint64(h.Signed[at:]); signed != h.Length {
			s += fmt.Sprintf("/%d", signed)
		}
	}
	return s
}

func (c *cluster) status(names []string) error {
	if len(names) != 1 {
		return fmt.Errorf("status of one node, got %v", names)
	}
	n, err := c.node(names[0])
	if err != nil {
		return err
	}
	heads, _ := n.feeds.Heads()
	slices.SortFunc(heads, func(a, b wire.Head) int { return strings.Compare(c.feed(a.Feed), c.feed(b.Feed)) })
	var hs []string
	for _, h := range heads {
		local, _ := n.m.Local(h.Feed)
		s := c.head(h)
		if local.Length != h.Length {
			s += fmt.Sprintf(" (machine: %d)", local.Length)
		}
		hs = append(hs, s)
	}
	c.printf("%s: holds %s", n.name, strings.Join(hs, " "))
	for _, ps := range n.m.Status() {
		state := "down"
		if ps.Connected {
			state = "up"
		}
		seen := "never"
		if !ps.LastSeen.IsZero() {
			seen = ps.LastSeen.Sub(t0).String()
		}
		c.printf("  %s: %s seen=%s inflight=%d received=%d sent=%d", ps.Peer, state,
			seen, ps.Inflight, ps.EntriesReceived, ps.EntriesSent)
		fs := slices.Clone(ps.Feeds)
		slices.SortFunc(fs, func(a, b protocol.FeedStatus) int { return strings.Compare(c.feed(a.Feed), c.feed(b.Feed)) })
		for _, f := range fs {
			line := fmt.Sprintf("    %s local=%d peer=%d lag=%d", c.feed(f.Feed), f.Local, f.Peer, f.Lag)
			if f.Stopped {
				line += " stopped (fork)"
			}
			c.printf("%s", line)
		}
	}
	return nil
}
