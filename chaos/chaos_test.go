package chaos

import (
	"context"
	"flag"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/chaos/proxy"
	"github.com/crow-sync/crow/client"
)

var (
	duration = flag.Duration("chaos.duration", 45*time.Second, "how long the chaos phase runs (a long run: 20m)")
	seed     = flag.Uint64("chaos.seed", 0, "seed of the run (0: from the clock; printed)")
)

// cluster is home and satellites with a proxy on every sync path: x dials
// y through paths[x][y] (pinned by CROW_SYNC_DIAL), and y announces
// paths[home][y] (CROW_SYNC_ANNOUNCE).
type cluster struct {
	t     *testing.T
	all   []*daemon // all[0] is home
	paths map[string]map[string]*proxy.Proxy
	stats *stats
	kills int // kill loops run
}

func (c *cluster) proxies() []*proxy.Proxy {
	var out []*proxy.Proxy
	for _, m := range c.paths {
		for _, p := range m {
			out = append(out, p)
		}
	}
	return out
}

// partition cuts every path to and from d (or heals them).
func (c *cluster) partition(d *daemon, on bool) {
	for x, m := range c.paths {
		for y, p := range m {
			if x == d.name || y == d.name {
				p.Partition(on)
			}
		}
	}
}

func setup(t *testing.T, rng *mrand.Rand, st *stats, sats ...string) *cluster {
	t.Helper()
	home := newDaemon(t, "home")
	home.cli("init", "--name", "home")
	home.readKey()
	home.start()
	all := []*daemon{home}
	for _, name := range sats {
		out := strings.TrimSpace(home.cli("instance", "invite", "--name", name))
		lines := strings.Split(out, "\n")
		s := newDaemon(t, name)
		s.cli("init", "--name", name, "--join", strings.TrimSpace(lines[len(lines)-1]))
		s.readKey()
		s.start()
		all = append(all, s)
	}
	for _, d := range all {
		h, err := call(d, app.InstanceHealth, app.HealthIn{})
		if err != nil {
			t.Fatalf("%s: health: %v", d.name, err)
		}
		d.id = h.InstanceID
	}
	eventually(t, 2*time.Minute, "every instance to list every other", func() bool {
		for _, d := range all {
			page, err := call(d, app.InstancesList, app.NoInput{})
			if err != nil || len(page.Instances) != len(all) {
				return false
			}
		}
		return true
	})
	// A proxy on every path, then every daemon restarted pinned to them.
	c := &cluster{t: t, all: all, paths: map[string]map[string]*proxy.Proxy{}, stats: st}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	for _, x := range all {
		c.paths[x.name] = map[string]*proxy.Proxy{}
		for _, y := range all {
			if x == y {
				continue
			}
			p, err := proxy.New(proxy.Config{Target: fmt.Sprintf("127.0.0.1:%d", y.syncPort), Seed: rng.Uint64()})
			if err != nil {
				t.Fatal(err)
			}
			c.paths[x.name][y.name] = p
			wg.Add(1)
			go func() { defer wg.Done(); _ = p.Serve(ctx) }()
		}
	}
	for _, x := range all {
		var dial []string
		for _, y := range all {
			if x != y {
				dial = append(dial, fmt.Sprintf("%s=/ip4/127.0.0.1/tcp/%d", y.id, c.paths[x.name][y.name].Port()))
			}
		}
		env := []string{"CROW_SYNC_DIAL=" + strings.Join(dial, ";")}
		if x != home {
			env = append(env, fmt.Sprintf("CROW_SYNC_ANNOUNCE=/ip4/127.0.0.1/tcp/%d", c.paths[home.name][x.name].Port()))
		}
		x.setEnv(env...)
		x.stop()
		x.start()
	}
	// What a satellite announces is what its registry row tells peers.
	for _, s := range all[1:] {
		want := fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", c.paths[home.name][s.name].Port())
		eventually(t, 2*time.Minute, s.name+"'s announced address in home's registry", func() bool {
			page, err := call(home, app.InstancesList, app.NoInput{})
			if err != nil {
				return false
			}
			for _, in := range page.Instances {
				if in.ID == s.id {
					return slices.Equal(in.SyncAddrs, []string{want})
				}
			}
			return false
		})
	}
	return c
}

// firstSteps are the first actions of a run (see the switch in TestChaos):
// the four kinds of kill, a partition, a fault burst, a full disk.
var firstSteps = []int{0, 3, 5, 8, 0, 0, 0}

// TestChaos runs the chaos suite: see the package doc.
func TestChaos(t *testing.T) {
	s := *seed
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("chaos seed %d, duration %v", s, *duration)
	rng := mrand.New(mrand.NewPCG(s, 1))
	st := newStats()
	c := setup(t, rng, st, "laptop", "vps")
	home := c.all[0]

	// Shared rows, edited concurrently on both sides of partitions.
	var shared []string
	for i := range 4 {
		m, err := call(home, app.MemoryCreate, app.MemoryCreateIn{Content: fmt.Sprintf("shared row %d original", i), Project: "chaos"})
		if err != nil {
			t.Fatal(err)
		}
		st.acked(m.ID, m.Content)
		st.edit(m.ID, m.Content)
		shared = append(shared, m.ID)
	}

	ctx, stop := context.WithCancel(context.Background())
	var writers sync.WaitGroup
	for _, d := range c.all {
		writers.Add(1)
		go func() { defer writers.Done(); write(ctx, d, st) }()
	}

	end := time.Now().Add(*duration)
	for step := 0; time.Now().Before(end); step++ {
		a := rng.IntN(10)
		if step < len(firstSteps) {
			a = firstSteps[step] // every kind of action at least once, even in a short run
		}
		switch {
		case a < 3:
			c.killLoop(rng, shared)
		case a < 5:
			c.partitionWithEdits(rng, shared)
		case a < 8:
			c.faultBurst(rng)
		case a < 9:
			c.diskFull(rng)
		default:
			c.editShared(rng, shared, c.all[rng.IntN(len(c.all))])
			time.Sleep(time.Second)
		}
	}
	stop()
	writers.Wait()

	// Heal everything and check.
	for _, p := range c.proxies() {
		p.SetFaults(proxy.Faults{})
		p.Partition(false)
	}
	for _, d := range c.all {
		d.setEnv(d.envWithout("CROW_MIN_FREE_MB")...)
		if !d.running() {
			d.start()
		}
	}
	for _, p := range c.proxies() {
		for k, n := range p.Counts() {
			st.faults[k] += n
		}
	}
	res := c.verify(shared, 10*time.Minute)
	t.Logf("\n%s", st.report(res, *duration, s))
	for _, d := range c.all {
		t.Logf("%s: security log lines: %s", d.name, d.securityLines())
	}
	if res.lost != 0 || res.duplicated != 0 || res.corrupted != 0 || !res.identical {
		t.Fatalf("chaos run failed: lost %d, duplicated %d, corrupted %d, identical digests and conflicts %v",
			res.lost, res.duplicated, res.corrupted, res.identical)
	}
	// Pinning held: the sync traffic of every pair went through its proxies.
	for x, m := range c.paths {
		for y, p := range m {
			t.Logf("proxy %s -> %s: %d bytes", x, y, p.Bytes())
			if x < y && p.Bytes()+c.paths[y][x].Bytes() == 0 {
				t.Errorf("no sync traffic between %s and %s went through their proxies", x, y)
			}
		}
	}
	if st.faults[proxy.Flip]+st.faults[proxy.Truncate]+st.faults[proxy.Duplicate]+st.faults[proxy.Reorder] > 0 && res.channelErrors == 0 {
		t.Fatalf("bytes were tampered with on the wire but no daemon counted a channel error")
	}
}

// write creates memories on d until ctx ends, recording every acknowledged
// one (and every attempt, which may or may not have been applied).
func write(ctx context.Context, d *daemon, st *stats) {
	for n := 0; ctx.Err() == nil; n++ {
		content := fmt.Sprintf("chaos %s write %d", d.name, n)
		st.attempt(content)
		m, err := call(d, app.MemoryCreate, app.MemoryCreateIn{Content: content, Project: "chaos"})
		switch {
		case err == nil:
			st.acked(m.ID, content)
		case client.StatusOf(err) == 507:
			st.refused.Add(1)
			sleep(ctx, 200*time.Millisecond)
		default:
			st.failed.Add(1)
			sleep(ctx, 200*time.Millisecond)
		}
		sleep(ctx, 30*time.Millisecond)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// securityLines summarises d's "security:" log lines: count by message,
// with the first of each.
func (d *daemon) securityLines() string {
	d.mu.Lock()
	text := d.log.String()
	d.mu.Unlock()
	count := map[string]int{}
	first := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		_, msg, ok := strings.Cut(line, "msg=\"security: ")
		if !ok {
			continue
		}
		msg, _, _ = strings.Cut(msg, "\"")
		if count[msg]++; count[msg] == 1 {
			first[msg] = tail(line, 400)
		}
	}
	var out []string
	for msg, n := range count {
		out = append(out, fmt.Sprintf("\n  %d × %q, first: %s", n, msg, first[msg]))
	}
	slices.Sort(out)
	return strings.Join(out, "")
}

func (d *daemon) envWithout(key string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, kv := range d.env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// kill9 kills d with SIGKILL, first reading its counters.
func (c *cluster) kill9(d *daemon, why string) {
	c.stats.scrape(d)
	d.kill()
	c.stats.kill(why)
}

// anchoringLine is what home's anchor worker logs as it sends a root.
const anchoringLine = `msg="anchoring memories"`

// killLoop: kill -9 a daemon at a moment chosen to hit it mid-apply (a
// satellite while a burst from home arrives), mid-numbering (home while a
// burst from a satellite arrives), mid-anchor (home within 60 ms of logging
// that it sends a root, before or while it records it) or at random, then
// restart it.
func (c *cluster) killLoop(rng *mrand.Rand, shared []string) {
	home := c.all[0]
	sat := c.all[1+rng.IntN(len(c.all)-1)]
	kind := rng.IntN(4)
	if c.kills < 4 {
		kind = c.kills // each kind once first
	}
	c.kills++
	switch kind {
	case 0: // mid-apply on a satellite
		c.burst(home, 40)
		time.Sleep(time.Duration(rng.IntN(800)) * time.Millisecond)
		c.kill9(sat, "mid-apply (satellite)")
		time.Sleep(time.Duration(rng.IntN(2000)) * time.Millisecond)
		sat.start()
	case 1: // mid-numbering (and anchoring) on home
		c.burst(sat, 40)
		time.Sleep(time.Duration(rng.IntN(800)) * time.Millisecond)
		c.kill9(home, "mid-numbering (home)")
		time.Sleep(time.Duration(rng.IntN(2000)) * time.Millisecond)
		home.start()
	case 3: // mid-anchor on home: as soon as it logs that it sends a root
		before := home.logCount(anchoringLine)
		c.burst(sat, 40)
		deadline := time.Now().Add(20 * time.Second)
		for home.logCount(anchoringLine) == before && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		why := "mid-anchor (home)"
		if home.logCount(anchoringLine) == before {
			why = "mid-anchor (home), no round seen in 20 s"
		}
		time.Sleep(time.Duration(rng.IntN(60)) * time.Millisecond)
		c.kill9(home, why)
		time.Sleep(time.Duration(rng.IntN(2000)) * time.Millisecond)
		home.start()
	default:
		d := c.all[rng.IntN(len(c.all))]
		time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond)
		c.kill9(d, "random")
		time.Sleep(time.Duration(rng.IntN(2000)) * time.Millisecond)
		d.start()
	}
	time.Sleep(time.Second)
}

// burst writes n memories on d as fast as it takes them.
func (c *cluster) burst(d *daemon, n int) {
	for i := 0; i < n; i++ {
		content := fmt.Sprintf("chaos burst %s %d %d", d.name, time.Now().UnixNano(), i)
		c.stats.attempt(content)
		m, err := call(d, app.MemoryCreate, app.MemoryCreateIn{Content: content, Project: "chaos"})
		if err != nil {
			c.stats.failed.Add(1)
			return
		}
		c.stats.acked(m.ID, content)
	}
}

// partitionWithEdits isolates one instance, edits the shared rows on both
// sides, holds the partition a while, then heals.
func (c *cluster) partitionWithEdits(rng *mrand.Rand, shared []string) {
	d := c.all[rng.IntN(len(c.all))]
	others := slices.DeleteFunc(slices.Clone(c.all), func(x *daemon) bool { return x == d })
	c.partition(d, true)
	c.stats.partitions.Add(1)
	for range 1 + rng.IntN(3) {
		// the same row on both sides: a conflict to record, the same everywhere
		id := shared[rng.IntN(len(shared))]
		c.editRow(id, d)
		c.editRow(id, others[rng.IntN(len(others))])
	}
	time.Sleep(time.Duration(2000+rng.IntN(3000)) * time.Millisecond)
	c.partition(d, false)
	time.Sleep(time.Second)
}

// editShared updates one shared row on d.
func (c *cluster) editShared(rng *mrand.Rand, shared []string, d *daemon) {
	c.editRow(shared[rng.IntN(len(shared))], d)
}

// editRow updates shared row id on d.
func (c *cluster) editRow(id string, d *daemon) {
	content := fmt.Sprintf("shared edit on %s at %d", d.name, time.Now().UnixNano())
	c.stats.edit(id, content)
	if _, err := call(d, app.MemoryUpdate, app.MemoryUpdateIn{ID: id, Content: &content}); err != nil {
		c.stats.failed.Add(1)
		return
	}
	c.stats.editCount.Add(1)
}

// faultBurst sets fault rates on every proxy for a few seconds.
func (c *cluster) faultBurst(rng *mrand.Rand) {
	r := func(max float64) float64 { return rng.Float64() * max }
	f := proxy.Faults{Cut: r(0.01), Truncate: r(0.01), Flip: r(0.02), Duplicate: r(0.01), Reorder: r(0.01), Delay: r(0.2),
		MaxDelay: 100 * time.Millisecond}
	for _, p := range c.proxies() {
		p.SetFaults(f)
	}
	time.Sleep(time.Duration(2000+rng.IntN(4000)) * time.Millisecond)
	for _, p := range c.proxies() {
		p.SetFaults(proxy.Faults{})
	}
	time.Sleep(time.Second)
}

// diskFull restarts a satellite with a free-space floor above the disk's
// free space (the guard refuses its writes), holds it, then restarts it
// normally.
func (c *cluster) diskFull(rng *mrand.Rand) {
	d := c.all[1+rng.IntN(len(c.all)-1)]
	base := d.envWithout("CROW_MIN_FREE_MB")
	c.stats.scrape(d)
	d.stop()
	d.setEnv(append(base, "CROW_MIN_FREE_MB=1000000000")...)
	d.start()
	c.stats.diskFull.Add(1)
	time.Sleep(time.Duration(2000+rng.IntN(3000)) * time.Millisecond)
	c.stats.scrape(d)
	d.stop()
	d.setEnv(base...)
	d.start()
	time.Sleep(time.Second)
}
