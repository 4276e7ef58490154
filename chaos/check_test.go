package chaos

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/chaos/proxy"
	"github.com/crow-sync/crow/memory"
)

// stats records what the run did and every acknowledged write.
type stats struct {
	mu                   sync.Mutex
	acks                 map[string]string          // guarded by mu; memory id -> content acknowledged by a create
	attempts             map[string]bool            // guarded by mu; every content a create was sent with
	edits                map[string]map[string]bool // guarded by mu; shared row id -> every content sent to it
	kills                map[string]int             // guarded by mu; by moment
	channel              map[string]float64         // guarded by mu; crow_sync_channel_errors_total by kind, summed over runs
	rejected             map[string]float64         // guarded by mu; crow_sync_rejected_total by kind
	faults               map[string]int64           // proxy faults by kind (set at the end)
	editCount            atomic.Int64
	refused              atomic.Int64 // writes refused with 507 (disk full)
	failed               atomic.Int64 // writes not acknowledged (daemon down, connection cut)
	partitions, diskFull atomic.Int64
}

func newStats() *stats {
	return &stats{acks: map[string]string{}, attempts: map[string]bool{}, edits: map[string]map[string]bool{},
		kills: map[string]int{}, channel: map[string]float64{}, rejected: map[string]float64{}, faults: map[string]int64{}}
}

func (s *stats) attempt(content string) { s.mu.Lock(); s.attempts[content] = true; s.mu.Unlock() }

func (s *stats) acked(id, content string) {
	s.mu.Lock()
	s.acks[id] = content
	s.attempts[content] = true
	s.mu.Unlock()
}

func (s *stats) edit(id, content string) {
	s.mu.Lock()
	if s.edits[id] == nil {
		s.edits[id] = map[string]bool{}
	}
	s.edits[id][content] = true
	s.mu.Unlock()
}

func (s *stats) kill(why string) { s.mu.Lock(); s.kills[why]++; s.mu.Unlock() }

// scrape adds d's sync counters of its current run (they restart at 0
// with the process).
func (s *stats) scrape(d *daemon) {
	text := d.metrics()
	s.mu.Lock()
	defer s.mu.Unlock()
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		for name, into := range map[string]map[string]float64{
			"crow_sync_channel_errors_total{": s.channel, "crow_sync_rejected_total{": s.rejected,
		} {
			if !strings.HasPrefix(line, name) {
				continue
			}
			_, rest, _ := strings.Cut(line, `kind="`)
			kind, rest, _ := strings.Cut(rest, `"`)
			v, err := strconv.ParseFloat(strings.TrimSpace(rest[strings.LastIndex(rest, " ")+1:]), 64)
			if err == nil {
				into[kind] += v
			}
		}
	}
}

// result is the final check.
type result struct {
	instances                   int
	checked, rows               int // acknowledged creates checked on every instance; rows per instance
	lost, duplicated, corrupted int
	identical                   bool // same memory digest and conflict records everywhere
	conflicts                   int
	digest, conflictDigest      string
	channelErrors               float64
	converge                    time.Duration
	problems                    []string
}

// snapshot is what one instance serves.
type snapshot struct {
	rows      map[string]memory.Memory
	digest    string
	conflicts string
	nconf     int
	numbered  bool
}

func take(d *daemon) (snapshot, error) {
	s := snapshot{rows: map[string]memory.Memory{}, numbered: true}
	cursor := ""
	for {
		page, err := call(d, app.MemoryList, app.MemoryListIn{Limit: 1000, Cursor: cursor, Order: "oldest"})
		if err != nil {
			return s, err
		}
		for _, m := range page.Memories {
			if _, dup := s.rows[m.ID]; dup {
				return s, fmt.Errorf("%s lists memory %s twice", d.name, m.ID)
			}
			s.rows[m.ID] = m
			if m.Number == nil {
				s.numbered = false
			}
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	ids := make([]string, 0, len(s.rows))
	for id := range s.rows {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	h := sha256.New()
	for _, id := range ids {
		m := s.rows[id]
		num, ev := "-", "-"
		if m.Number != nil {
			num = strconv.FormatUint(*m.Number, 10)
		}
		if m.EventHash != nil {
			ev = *m.EventHash
		}
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%d\x00%v\x00%s\x00%s\x00%s\x00%s\n", m.ID, m.Content, m.Project, m.Category,
			m.Importance, m.Tags, m.Origin, num, ev, m.UpdatedAt.UTC().Format(time.RFC3339Nano))
	}
	s.digest = hex.EncodeToString(h.Sum(nil))[:16]
	list, err := call(d, app.ConflictsList, app.ConflictListIn{})
	if err != nil {
		return s, err
	}
	var lines []string
	for _, c := range list.Conflicts {
		lines = append(lines, fmt.Sprintf("%s\x00%s\x00%s\x00%s\x00%s\x00%d\x00%d\x00%s\x00%v\x00%s\x00%s",
			c.ID, c.TableName, c.RowID, c.WinningInstanceID, c.LosingInstanceID, c.WinningLamportTS, c.LosingLamportTS,
			c.Op, c.Resolved, c.WinningData, c.LosingData))
	}
	slices.Sort(lines)
	ch := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	s.conflicts, s.nconf = hex.EncodeToString(ch[:])[:16], len(lines)
	return s, nil
}

// verify waits until every instance serves the same rows (all numbered) and
// the same conflict records, then checks them against what was
// acknowledged.
func (c *cluster) verify(shared []string, timeout time.Duration) result {
	start := time.Now()
	var snaps []snapshot
	res := result{instances: len(c.all)}
	for {
		snaps = snaps[:0]
		ok := true
		for _, d := range c.all {
			s, err := take(d)
			if err != nil {
				ok = false
				break
			}
			snaps = append(snaps, s)
		}
		if ok {
			same := true
			for _, s := range snaps {
				same = same && s.numbered && s.digest == snaps[0].digest && s.conflicts == snaps[0].conflicts
			}
			if same {
				res.identical = true
				break
			}
		}
		if time.Since(start) > timeout {
			for i, s := range snaps {
				res.problems = append(res.problems, fmt.Sprintf("%s: %d rows, numbered %v, digest %s, %d conflicts %s",
					c.all[i].name, len(s.rows), s.numbered, s.digest, s.nconf, s.conflicts))
			}
			break
		}
		time.Sleep(2 * time.Second)
	}
	res.converge = time.Since(start)
	for _, d := range c.all {
		c.stats.scrape(d)
	}
	st := c.stats
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, v := range st.channel {
		res.channelErrors += v
	}
	if len(snaps) == 0 {
		res.problems = append(res.problems, "no instance answered")
		return res
	}
	res.digest, res.conflictDigest, res.conflicts, res.rows = snaps[0].digest, snaps[0].conflicts, snaps[0].nconf, len(snaps[0].rows)
	isShared := map[string]bool{}
	for _, id := range shared {
		isShared[id] = true
	}
	for id, content := range st.acks {
		if isShared[id] {
			continue
		}
		res.checked++
		for i, s := range snaps {
			m, ok := s.rows[id]
			if !ok || m.Content != content {
				res.lost++
				res.problems = append(res.problems, fmt.Sprintf("%s: acknowledged write %s %q missing or changed", c.all[i].name, id, content))
				break
			}
		}
	}
	for i, s := range snaps {
		seen := map[string]string{}
		for id, m := range s.rows {
			if isShared[id] {
				if !st.edits[id][m.Content] {
					res.corrupted++
					res.problems = append(res.problems, fmt.Sprintf("%s: shared row %s holds %q, never written", c.all[i].name, id, m.Content))
				}
				continue
			}
			if !st.attempts[m.Content] {
				res.corrupted++
				res.problems = append(res.problems, fmt.Sprintf("%s: row %s holds %q, never written", c.all[i].name, id, m.Content))
			}
			if other, dup := seen[m.Content]; dup {
				res.duplicated++
				res.problems = append(res.problems, fmt.Sprintf("%s: %q stored twice (%s, %s)", c.all[i].name, m.Content, other, id))
			}
			seen[m.Content] = id
		}
	}
	return res
}

// report prints the figures of a run.
func (s *stats) report(r result, d time.Duration, seed uint64) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "CHAOS RUN seed=%d chaos=%v instances=%d (home + %d satellites), proxies on %d sync paths\n",
		seed, d, r.instances, r.instances-1, r.instances*(r.instances-1))
	var total int64
	fmt.Fprintf(&b, "faults injected:")
	for _, k := range proxy.Kinds {
		fmt.Fprintf(&b, " %s=%d", k, s.faults[k])
		total += s.faults[k]
	}
	fmt.Fprintf(&b, " (total %d)\n", total)
	var kills int
	var ks []string
	for k, n := range s.kills {
		kills += n
		ks = append(ks, fmt.Sprintf("%s=%d", k, n))
	}
	slices.Sort(ks)
	fmt.Fprintf(&b, "kill -9: %d (%s); partitions: %d; disk-full phases: %d\n", kills, strings.Join(ks, ", "), s.partitions.Load(), s.diskFull.Load())
	fmt.Fprintf(&b, "writes acknowledged: %d (creates) + %d shared-row edits; refused 507: %d; not acknowledged (daemon down / cut): %d\n",
		len(s.acks), s.editCount.Load(), s.refused.Load(), s.failed.Load())
	fmt.Fprintf(&b, "checked on every instance: %d; lost: %d; duplicated: %d; corrupted applies: %d\n", r.checked, r.lost, r.duplicated, r.corrupted)
	fmt.Fprintf(&b, "identical on every instance: %v (memories digest %s over %d rows; %d conflict records, digest %s); converged %v after healing\n",
		r.identical, r.digest, r.rows, r.conflicts, r.conflictDigest, r.converge.Round(time.Second))
	fmt.Fprintf(&b, "channel errors counted: %v; rejected by verification: %v\n", s.channel, s.rejected)
	for _, p := range r.problems {
		fmt.Fprintf(&b, "PROBLEM: %s\n", p)
	}
	return b.String()
}
