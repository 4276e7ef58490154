// Package proxy is a loopback TCP forwarder that injects faults between two
// crow instances: it cuts connections, delays, reorders and duplicates chunks,
// truncates them and flips bits, at configured rates drawn from a seeded RNG,
// and counts every fault it injects. It also partitions: while partitioned
// it closes every connection and refuses new ones.
//
// It is a test tool: it listens on and forwards to loopback addresses only
// (127.0.0.0/8, ::1), and refuses any other.
package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	stdsync "sync"
	"sync/atomic"
	"time"
)

// Fault kinds, as counted by Counts.
const (
	Cut       = "cut"       // both ends closed before a chunk
	Delay     = "delay"     // a chunk held back (order kept)
	Reorder   = "reorder"   // a chunk sent after the next one
	Duplicate = "duplicate" // a chunk sent twice
	Truncate  = "truncate"  // part of a chunk sent, then both ends closed
	Flip      = "flip"      // one bit of a chunk inverted
	Refused   = "refused"   // a connection refused or closed by a partition
)

// Kinds lists the fault kinds in a stable order.
var Kinds = []string{Cut, Delay, Reorder, Duplicate, Truncate, Flip, Refused}

// Faults are per-chunk probabilities (0..1) of each fault; a chunk is what
// one read from a side returned (at most 16 KiB). At most one fault is
// applied to a chunk, tried in the order of the fields.
type Faults struct {
	Cut, Truncate, Flip, Duplicate, Reorder, Delay float64
	// MaxDelay bounds a delay (default 50ms).
	MaxDelay time.Duration
}

// ErrNotLoopback is returned by New for an address outside loopback.
var ErrNotLoopback = errors.New("proxy: not a loopback address")

// Config configures a Proxy.
type Config struct {
	Listen string // host:port to listen on (default "127.0.0.1:0")
	Target string // host:port to forward to
	Seed   uint64 // seeds the fault RNG
	Faults Faults
}

// Proxy forwards connections from its address to the target.
type Proxy struct {
	ln     net.Listener
	target string

	mu          stdsync.Mutex
	faults      Faults                   // guarded by mu
	rng         *rand.Rand               // guarded by mu
	partitioned bool                     // guarded by mu
	conns       map[*pair]struct{}       // guarded by mu
	counts      map[string]*atomic.Int64 // fixed at New
	bytes       atomic.Int64
	wg          stdsync.WaitGroup
}

// New listens on cfg.Listen. Serve forwards.
func New(cfg Config) (*Proxy, error) {
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	for _, a := range []string{cfg.Listen, cfg.Target} {
		if err := checkLoopback(a); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("proxy: listening: %w", err)
	}
	p := &Proxy{ln: ln, target: cfg.Target, faults: cfg.Faults,
		rng:    rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		conns:  map[*pair]struct{}{},
		counts: map[string]*atomic.Int64{}}
	for _, k := range Kinds {
		p.counts[k] = &atomic.Int64{}
	}
	return p, nil
}

func checkLoopback(hostport string) error {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return fmt.Errorf("proxy: address %q: %w", hostport, err)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.IsLoopback() {
		return fmt.Errorf("%w: %q", ErrNotLoopback, hostport)
	}
	return nil
}

// Addr is the address the proxy listens on (host:port).
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Port is the port the proxy listens on.
func (p *Proxy) Port() int { return p.ln.Addr().(*net.TCPAddr).Port }

// SetFaults replaces the fault rates (for new chunks).
func (p *Proxy) SetFaults(f Faults) {
	p.mu.Lock()
	p.faults = f
	p.mu.Unlock()
}

// Partition cuts every connection and refuses new ones while on.
func (p *Proxy) Partition(on bool) {
	p.mu.Lock()
	p.partitioned = on
	var cut []*pair
	if on {
		for c := range p.conns {
			cut = append(cut, c)
		}
	}
	p.mu.Unlock()
	for _, c := range cut {
		p.counts[Refused].Add(1)
		c.close()
	}
}

// Counts returns the faults injected so far by kind.
func (p *Proxy) Counts() map[string]int64 {
	out := make(map[string]int64, len(p.counts))
	for k, n := range p.counts {
		out[k] = n.Load()
	}
	return out
}

// Bytes is the number of bytes forwarded (both directions).
func (p *Proxy) Bytes() int64 { return p.bytes.Load() }

// Serve accepts and forwards until ctx ends, then closes every connection.
func (p *Proxy) Serve(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { _ = p.ln.Close() })
	defer stop()
	defer func() {
		p.Partition(true)
		p.wg.Wait()
	}()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("proxy: accepting: %w", err)
		}
		p.mu.Lock()
		refused := p.partitioned
		p.mu.Unlock()
		if refused {
			p.counts[Refused].Add(1)
			_ = c.Close()
			continue
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.forward(ctx, c)
		}()
	}
}

// pair is one proxied connection: the client side and the target side.
type pair struct {
	a, b net.Conn
	once stdsync.Once
}

func (c *pair) close() {
	c.once.Do(func() { _ = c.a.Close(); _ = c.b.Close() })
}

func (p *Proxy) forward(ctx context.Context, a net.Conn) {
	d := net.Dialer{Timeout: 5 * time.Second}
	b, err := d.DialContext(ctx, "tcp", p.target)
	if err != nil {
		_ = a.Close()
		return
	}
	c := &pair{a: a, b: b}
	p.mu.Lock()
	if p.partitioned {
		p.mu.Unlock()
		p.counts[Refused].Add(1)
		c.close()
		return
	}
	p.conns[c] = struct{}{}
	seed := p.rng.Uint64()
	p.mu.Unlock()
	var wg stdsync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.pump(c, a, b, seed) }()
	go func() { defer wg.Done(); p.pump(c, b, a, seed+1) }()
	wg.Wait()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// pump copies src to dst chunk by chunk, injecting faults; any end closes
// both sides.
func (p *Proxy) pump(c *pair, src, dst net.Conn, seed uint64) {
	defer c.close()
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	buf := make([]byte, 16<<10)
	var held []byte // a chunk being reordered
	for {
		if held != nil {
			_ = src.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		}
		n, err := src.Read(buf)
		if held != nil {
			_ = src.SetReadDeadline(time.Time{})
		}
		if n > 0 {
			chunk := append([]byte(nil), buf[:n]...)
			if held != nil {
				// the reordered chunk goes after this one
				if !p.write(dst, chunk) || !p.write(dst, held) {
					return
				}
				held = nil
				continue
			}
			if !p.inject(c, dst, chunk, rng, &held) {
				return
			}
		}
		if err != nil {
			var ne net.Error
			if held != nil && errors.As(err, &ne) && ne.Timeout() {
				if !p.write(dst, held) {
					return
				}
				held = nil
				continue
			}
			if held != nil {
				p.write(dst, held)
			}
			if errors.Is(err, io.EOF) {
				if tc, ok := dst.(*net.TCPConn); ok {
					_ = tc.CloseWrite()
					return
				}
			}
			return
		}
	}
}

// inject writes chunk with at most one fault; false when the pair is done.
func (p *Proxy) inject(c *pair, dst net.Conn, chunk []byte, rng *rand.Rand, held *[]byte) bool {
	p.mu.Lock()
	f := p.faults
	p.mu.Unlock()
	roll := func(rate float64) bool { return rate > 0 && rng.Float64() < rate }
	switch {
	case roll(f.Cut):
		p.counts[Cut].Add(1)
		c.close()
		return false
	case roll(f.Truncate):
		p.counts[Truncate].Add(1)
		p.write(dst, chunk[:rng.IntN(len(chunk))])
		c.close()
		return false
	case roll(f.Flip):
		p.counts[Flip].Add(1)
		chunk[rng.IntN(len(chunk))] ^= 1 << rng.IntN(8)
		return p.write(dst, chunk)
	case roll(f.Duplicate):
		p.counts[Duplicate].Add(1)
		return p.write(dst, chunk) && p.write(dst, chunk)
	case roll(f.Reorder):
		p.counts[Reorder].Add(1)
		*held = chunk
		return true
	case roll(f.Delay):
		p.counts[Delay].Add(1)
		maxD := f.MaxDelay
		if maxD <= 0 {
			maxD = 50 * time.Millisecond
		}
		time.Sleep(time.Duration(rng.Int64N(int64(maxD))))
		return p.write(dst, chunk)
	}
	return p.write(dst, chunk)
}

func (p *Proxy) write(dst net.Conn, b []byte) bool {
	if len(b) == 0 {
		return true
	}
	_ = dst.SetWriteDeadline(time.Now().Add(30 * time.Second))
	n, err := dst.Write(b)
	p.bytes.Add(int64(n))
	return err == nil
}
