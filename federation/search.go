package federation

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/crow-sync/crow/clock"
)

// SearchTool is the tool Search calls on peers.
const SearchTool = "crow_search_memories"

// DefaultSearchLimit is the number of merged results Search keeps when the
// arguments give no limit (crow_search_memories's own default).
const DefaultSearchLimit = 20

// Statuses of an instance in a SearchResult.
const (
	StatusOK             = "ok"
	StatusTimeout        = "timeout" // no answer by the deadline
	StatusError          = "error"   // unknown instance, refused, failed, or a malformed answer
	StatusSkippedOffline = "skipped_offline"
)

// Hit is one memory in a federated search result.
type Hit struct {
	// Instance is the instance whose copy is in Memory: the one that scored
	// it best (on a tie, the first in SearchResult.Instances order).
	Instance string  `json:"instance"`
	ID       string  `json:"id"`
	Score    float64 `json:"score"`
	// Memory is the result object exactly as Instance returned it (memory
	// fields and its score).
	Memory json.RawMessage `json:"memory"`
	// FoundOn lists every instance that returned the memory, in
	// SearchResult.Instances order.
	FoundOn []string `json:"found_on"`
}

// InstanceStatus says how one instance's part of a search went.
type InstanceStatus struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Status    string `json:"status"` // one of the Status constants
	Error     string `json:"error,omitempty"`
	Results   int    `json:"results"` // results it returned, before merging
	ElapsedMS int64  `json:"elapsed_ms"`
}

// SearchResult is the merged answer of a federated search.
type SearchResult struct {
	Results   []Hit            `json:"results"`
	Instances []InstanceStatus `json:"instances"`
	// Partial is true when any instance searched or asked for did not answer
	// ok (timeout, error, or skipped because offline): results from it may
	// be missing.
	Partial bool `json:"partial"`
}

// Search runs crow_search_memories with args (its arguments as a JSON
// object; instance_id and instances are removed, so a peer searches only
// itself) on each instance in targets, and this instance's search through
// local unless local is nil, in parallel, and merges the answers.
//
// targets nil means every current peer; this instance's id in targets is
// ignored (local searches it). An unknown id gets status error and an
// offline peer skipped_offline, without a call. Each call runs under its own
// timeout of deadline; Search returns by then whatever has not answered:
// an instance without an answer is a timeout, and its call is abandoned (it
// ends by its own timeout; Close waits for it).
//
// Merging: results are de-duplicated by "id" (a replicated memory is found
// on several instances), keeping the best score and listing every instance
// in FoundOn; then ranked by score, highest first, then id; then cut to the
// limit in args (DefaultSearchLimit if none). An answer that is not
// {"results": [{"id": string, "score": number, ...}, ...]} counts as an
// error of that instance. local returns such result objects directly.
func (c *Client) Search(ctx context.Context, targets []string, args json.RawMessage, deadline time.Duration,
	local func(ctx context.Context) ([]json.RawMessage, error)) SearchResult {
	clk := c.cfg.Clock
	// The deadline of the whole search starts before the calls, so a test
	// on a fake clock sees it pending once the last call has started.
	timer := clk.NewTimer(deadline)
	defer timer.Stop()
	start := clk.Now()
	statuses, calls := c.plan(targets, local != nil)
	args, limit, err := searchArgs(args)
	if err != nil {
		for _, i := range calls {
			statuses[i].Status, statuses[i].Error = StatusError, err.Error()
		}
		calls = nil
	}

	type answer struct {
		i       int
		status  InstanceStatus
		results []json.RawMessage
	}
	// Buffered for every call, so an abandoned call never blocks its send.
	answers := make(chan answer, len(calls))
	for _, i := range calls {
		st := statuses[i]
		run := func(ctx context.Context) ([]json.RawMessage, error) {
			return c.SearchMemories(ctx, st.ID, args)
		}
		if st.ID == c.cfg.Self {
			run = local
		}
		callCtx, cancel := clock.WithTimeout(ctx, clk, deadline)
		started := c.goTracked(func() {
			defer cancel()
			results, err := run(callCtx)
			if err == nil {
				err = checkResults(results)
			}
			st.ElapsedMS = clk.Since(start).Milliseconds()
			switch {
			case err == nil:
				st.Status, st.Results = StatusOK, len(results)
			case errors.Is(callCtx.Err(), context.DeadlineExceeded):
				st.Status, st.Error = StatusTimeout, fmt.Sprintf("no answer within %s", deadline)
				results = nil
			default:
				st.Status, st.Error = StatusError, err.Error()
				results = nil
			}
			answers <- answer{i, st, results}
		})
		if !started {
			cancel()
			statuses[i].Status, statuses[i].Error = StatusError, ErrClosed.Error()
		}
	}

	perInstance := make([][]json.RawMessage, len(statuses))
	pending := 0 // calls started: their status is still ""
	for _, i := range calls {
		if statuses[i].Status == "" {
			pending++
		}
	}
wait:
	for ; pending > 0; pending-- {
		select {
		case a := <-answers:
			statuses[a.i], perInstance[a.i] = a.status, a.results
		case <-timer.C():
			break wait
		case <-ctx.Done():
			break wait
		}
	}
	// Answers that came in by the deadline count, whichever case select
	// picked when both were ready.
drain:
	for ; pending > 0; pending-- {
		select {
		case a := <-answers:
			statuses[a.i], perInstance[a.i] = a.status, a.results
		default:
			break drain
		}
	}
	for _, i := range calls {
		if statuses[i].Status != "" {
			continue
		}
		statuses[i].ElapsedMS = clk.Since(start).Milliseconds()
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			statuses[i].Status, statuses[i].Error = StatusError, fmt.Sprintf("search canceled: %v", ctx.Err())
		} else {
			statuses[i].Status, statuses[i].Error = StatusTimeout, fmt.Sprintf("no answer within %s", deadline)
		}
	}

	out := SearchResult{Results: mergeHits(statuses, perInstance, limit), Instances: statuses}
	for _, st := range statuses {
		if st.Status != StatusOK {
			out.Partial = true
		}
	}
	return out
}

// plan lists the instances of a search in report order (self first when
// searching locally, then targets in the order given, or the peers sorted
// by id), with the status of those settled without a call, and the indexes
// of those to call.
func (c *Client) plan(targets []string, searchLocal bool) (statuses []InstanceStatus, calls []int) {
	peers := c.peerList()
	byID := make(map[string]Peer, len(peers))
	for _, p := range peers {
		if p.ID != c.cfg.Self {
			byID[p.ID] = p
		}
	}
	if targets == nil {
		for _, p := range peers {
			if p.ID != c.cfg.Self {
				targets = append(targets, p.ID)
			}
		}
		slices.Sort(targets)
	}
	if searchLocal {
		statuses = append(statuses, InstanceStatus{ID: c.cfg.Self, Name: c.selfName(peers)})
		calls = append(calls, 0)
	}
	seen := map[string]bool{c.cfg.Self: true}
	for _, id := range targets {
		if seen[id] {
			continue
		}
		seen[id] = true
		p, ok := byID[id]
		st := InstanceStatus{ID: id, Name: p.Name}
		switch {
		case !ok:
			st.Status, st.Error = StatusError, ErrUnknownInstance.Error()
		case !p.Online:
			st.Status = StatusSkippedOffline
		default:
			calls = append(calls, len(statuses))
		}
		statuses = append(statuses, st)
	}
	return statuses, calls
}

// selfName is this instance's name if Peers lists it (it should not).
func (c *Client) selfName(peers []Peer) string {
	for _, p := range peers {
		if p.ID == c.cfg.Self {
			return p.Name
		}
	}
	return c.cfg.SelfName
}

// goTracked runs f on a goroutine Close waits for; false once closed.
func (c *Client) goTracked(f func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.wg.Go(f)
	return true
}

// searchArgs returns args without instance_id and instances, and the
// result limit they ask for.
func searchArgs(args json.RawMessage) (json.RawMessage, int, error) {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(args, &m); err != nil || m == nil {
		return nil, 0, fmt.Errorf("search arguments are not a JSON object")
	}
	delete(m, "instance_id")
	delete(m, "instances")
	limit := DefaultSearchLimit
	if raw, ok := m["limit"]; ok {
		if err := json.Unmarshal(raw, &limit); err != nil || limit < 1 {
			return nil, 0, fmt.Errorf("search limit must be a positive whole number, got %s", raw)
		}
	}
	out, err := json.Marshal(m)
	return out, limit, err
}

// structured returns a tool result's structured content as JSON, falling
// back to its first text content.
func structured(res *mcp.CallToolResult) (json.RawMessage, error) {
	if len(res.RawStructuredContent) > 0 {
		return res.RawStructuredContent, nil
	}
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return nil, fmt.Errorf("re-encoding structured content: %w", err)
		}
		return b, nil
	}
	for _, content := range res.Content {
		if t, ok := mcp.AsTextContent(content); ok && json.Valid([]byte(t.Text)) {
			return json.RawMessage(t.Text), nil
		}
	}
	return nil, fmt.Errorf("answer has neither structured nor JSON text content")
}

// toolText returns the text of a tool result, for error messages.
func toolText(res *mcp.CallToolResult) string {
	for _, content := range res.Content {
		if t, ok := mcp.AsTextContent(content); ok {
			return t.Text
		}
	}
	return "(no text)"
}

// resultKey is what merging needs of a result object.
type resultKey struct {
	ID    string   `json:"id"`
	Score *float64 `json:"score"`
}

func parseResult(raw json.RawMessage) (resultKey, error) {
	var k resultKey
	if err := json.Unmarshal(raw, &k); err != nil {
		return k, fmt.Errorf("result is not a JSON object with an id and a score: %s", truncate(raw))
	}
	if k.ID == "" || k.Score == nil {
		return k, fmt.Errorf("result has no id or no score: %s", truncate(raw))
	}
	return k, nil
}

// checkResults reports the first malformed result.
func checkResults(results []json.RawMessage) error {
	for _, r := range results {
		if _, err := parseResult(r); err != nil {
			return err
		}
	}
	return nil
}

func truncate(raw json.RawMessage) string {
	if len(raw) > 80 {
		return string(raw[:80]) + "…"
	}
	return string(raw)
}

// mergeHits de-duplicates the instances' results (already checked) by id,
// ranks them and keeps the first limit.
func mergeHits(statuses []InstanceStatus, perInstance [][]json.RawMessage, limit int) []Hit {
	hits := []Hit{}
	byID := map[string]int{}
	for i, results := range perInstance {
		inst := statuses[i].ID
		for _, raw := range results {
			k, _ := parseResult(raw)
			j, ok := byID[k.ID]
			if !ok {
				byID[k.ID] = len(hits)
				hits = append(hits, Hit{Instance: inst, ID: k.ID, Score: *k.Score, Memory: raw, FoundOn: []string{inst}})
				continue
			}
			h := &hits[j]
			if !slices.Contains(h.FoundOn, inst) {
				h.FoundOn = append(h.FoundOn, inst)
			}
			if *k.Score > h.Score {
				h.Instance, h.Score, h.Memory = inst, *k.Score, raw
			}
		}
	}
	slices.SortStableFunc(hits, func(a, b Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	if len(hits) > limit {
		hits = hits[:limit]
	}
	return hits
}
