package cluster_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/client"
	records "github.com/crow-sync/crow/conflicts"
	"github.com/crow-sync/crow/daemon/cluster"
	memories "github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/store"
)

// TestScenarios runs the scripts in testdata/*.txt against an in-process
// cluster of real daemons (cluster.New), through the typed client, as a user
// of each node would. Regenerate the expected output with
//
//	go test ./daemon/cluster -run TestScenarios -rewrite
//
// and read the diff: it is the behaviour change. One file is one cluster.
//
// Commands (nodes are named by the script; "all" means every node):
//
//	cluster a b c            start the nodes (the first is home) and sync;
//	                         instance ids are fixed and ordered as the names
//	write a key=x [text=T] [importance=N]
//	                         create a memory on a, remembered as x (the text
//	                         is T, or the command's input)
//	edit b key=x [text=T] [importance=N]
//	                         update it on b (text as for write)
//	delete b key=x           delete it on b
//	put a table=notes row=r [data=JSON]
//	                         put a row of a generic table (data, or the input)
//	get a|all table=notes row=r
//	                         the row's data, or absent/deleted
//	read a|all key=x         the memory's text, or absent
//	partition a | b c        cut replication between the groups (nodes in no
//	                         group form one more); replaces the previous one
//	heal                     undo the partition
//	sync [a b ...]           wait until the nodes (default all) hold the same
//	                         feeds at the same lengths, have applied them, and
//	                         that stayed so for a moment (writes the daemons
//	                         make on their own are done)
//	conflicts a|all          a's conflict records, numbered (the numbers keep
//	                         and restore take); all: syncs every node, waits
//	                         until every node lists the same, prints them once
//	keep a conflict=N        resolve a's N-th conflict by keeping the winner
//	restore a conflict=N     ... by restoring the loser
//	notifications a|all      a's notifications (all: the same on every node)
//
// Which of two concurrent versions wins is decided by Lamport timestamp,
// then instance id. After a sync the node that wrote last has the lowest
// clock (every other node applied its write: max(local, remote)+1), so a
// scenario that wants a fixed winner makes the loser write last before the
// partition.
//
// "all" forms wait (up to the cluster's timeout) for the nodes to agree, and
// fail printing what each node said if they do not. Output never carries ids
// or times: memory ids print as their key, instance ids as the node's name.
// A failed operation prints "error: <status> <kind>: <message>".
//
// Quoting: datadriven splits arguments at spaces, so text="two words" is
// reassembled here; a value may also come as the command's input.
func TestScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("starts clusters of daemons")
	}
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		s := &scenario{t: t, keys: map[string]string{}}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out, err := s.run(d)
			if err != nil {
				d.Fatalf(t, "%v", err)
			}
			if out == "" {
				return "ok\n"
			}
			return out
		})
	})
}

const wait = 30 * time.Second

type scenario struct {
	t     *testing.T
	c     *cluster.Cluster
	names []string          // node names, in order
	keys  map[string]string // memory key → id
	norm  *strings.Replacer // ids → names
	out   strings.Builder
}

func (s *scenario) printf(format string, args ...any) {
	fmt.Fprintf(&s.out, format+"\n", args...)
}

// args is a command's arguments: bare words in order, key=value options.
type args struct {
	words []string
	opts  map[string]string
}

// parseArgs re-reads the command's arguments with double-quoted values
// (datadriven's parser has no quoting: text="a b" arrives as two args).
func parseArgs(d *datadriven.TestData) (args, error) {
	var toks []string
	for _, a := range d.CmdArgs {
		switch len(a.Vals) {
		case 0:
			toks = append(toks, a.Key)
		case 1:
			toks = append(toks, a.Key+"="+a.Vals[0])
		default:
			toks = append(toks, a.Key+"=("+strings.Join(a.Vals, ", ")+")")
		}
	}
	line := strings.Join(toks, " ")
	res := args{opts: map[string]string{}}
	for line = strings.TrimSpace(line); line != ""; line = strings.TrimSpace(line) {
		var tok string
		if i := strings.IndexAny(line, " \""); i == -1 {
			tok, line = line, ""
		} else if line[i] == ' ' {
			tok, line = line[:i], line[i:]
		} else {
			// A quoted value: up to the closing quote.
			j := strings.IndexByte(line[i+1:], '"')
			if j == -1 {
				return res, fmt.Errorf("unterminated quote in %q", line)
			}
			end := i + 1 + j + 1
			unq, err := strconv.Unquote(line[i:end])
			if err != nil {
				return res, fmt.Errorf("bad quoted value %s: %v", line[i:end], err)
			}
			tok, line = line[:i]+unq, line[end:]
			if k, _, ok := strings.Cut(tok, "="); ok {
				res.opts[k] = tok[len(k)+1:]
				continue
			}
		}
		if k, v, ok := strings.Cut(tok, "="); ok {
			res.opts[k] = v
		} else {
			res.words = append(res.words, tok)
		}
	}
	return res, nil
}

func (s *scenario) run(d *datadriven.TestData) (string, error) {
	s.out.Reset()
	a, err := parseArgs(d)
	if err != nil {
		return "", err
	}
	if d.Cmd != "cluster" && s.c == nil {
		return "", fmt.Errorf("%s before cluster", d.Cmd)
	}
	switch d.Cmd {
	case "cluster":
		err = s.start(a)
	case "write", "edit":
		err = s.writeMemory(d, a)
	case "delete":
		err = s.deleteMemory(a)
	case "put":
		err = s.put(d, a)
	case "get":
		err = s.agree(a, func(n *cluster.Node) (string, error) { return s.get(n, a) })
	case "read":
		err = s.agree(a, func(n *cluster.Node) (string, error) { return s.read(n, a) })
	case "partition":
		err = s.partition(a)
	case "heal":
		s.c.Heal()
	case "sync":
		names := a.words
		if len(names) == 0 {
			names = s.names
		}
		err = s.sync(names)
	case "conflicts":
		err = s.agree(a, func(n *cluster.Node) (string, error) {
			lines, err := s.conflicts(n)
			if err == nil && len(lines) == 0 {
				return "(no conflicts)\n", nil
			}
			return strings.Join(lines, ""), err
		})
	case "keep", "restore":
		err = s.resolve(d.Cmd, a)
	case "notifications":
		err = s.agree(a, s.notifications)
	default:
		err = fmt.Errorf("unknown command %q", d.Cmd)
	}
	if err != nil {
		return "", err
	}
	return s.out.String(), nil
}

func (s *scenario) start(a args) error {
	if s.c != nil {
		return fmt.Errorf("the cluster is running")
	}
	if len(a.words) == 0 {
		return fmt.Errorf("cluster needs node names")
	}
	s.names = a.words
	var ids []string
	for i := range s.names {
		ids = append(ids, fmt.Sprintf("00000000-0000-4000-8000-%012d", i+1))
	}
	s.c = cluster.New(s.t, len(s.names), cluster.Options{Names: s.names, InstanceIDs: ids, Timeout: wait, NoNumbering: true})
	var pairs []string
	for i, n := range s.c.Nodes {
		pairs = append(pairs, ids[i], n.Name)
	}
	s.norm = strings.NewReplacer(pairs...)
	if err := s.sync(s.names); err != nil { // the registry rows of the start, settled
		return err
	}
	return s.levelLamport()
}

// levelLamport sets every node's Lamport clock to one value above the
// highest: how many registry entries each node applied during the start,
// and in which order, depends on scheduling, and a scenario pins which of
// two concurrent versions wins (the higher Lamport, then the higher
// instance id). From a level start, the steps alone decide.
func (s *scenario) levelLamport() error {
	var top uint64
	for _, n := range s.c.Nodes {
		if err := n.DB().View(func(txn *store.Txn) error {
			l, err := txn.Lamport()
			top = max(top, l)
			return err
		}); err != nil {
			return err
		}
	}
	for _, n := range s.c.Nodes {
		cx, cancel := ctx()
		err := n.DB().Update(cx, func(txn *store.Txn) error {
			_, err := txn.ObserveLamport(top)
			return err
		})
		cancel()
		if err != nil {
			return err
		}
	}
	return nil
}

// normalise replaces instance and memory ids by names.
func (s *scenario) normalise(text string) string {
	pairs := []string{}
	for k, id := range s.keys {
		pairs = append(pairs, id, k)
	}
	text = strings.NewReplacer(pairs...).Replace(s.norm.Replace(text))
	text = conflictID.ReplaceAllString(text, "<id>")
	return timestamp.ReplaceAllString(text, "<time>")
}

var (
	// conflictID matches a conflict record's id (32 hex digits).
	conflictID = regexp.MustCompile(`\b[0-9a-f]{32}\b`)
	timestamp  = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)
)

func (s *scenario) node(name string) (*cluster.Node, error) {
	if !slices.Contains(s.names, name) {
		return nil, fmt.Errorf("no node %q", name)
	}
	return s.c.Node(name), nil
}

// one is the single node a command names.
func (s *scenario) one(a args) (*cluster.Node, error) {
	if len(a.words) != 1 {
		return nil, fmt.Errorf("want one node, got %v", a.words)
	}
	return s.node(a.words[0])
}

func cl(n *cluster.Node) *client.Client { return client.New(n.URL, n.APIKey) }

func ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), wait)
}

// failed prints an operation's error.
func (s *scenario) failed(err error) {
	s.printf("error: %d %s: %s", client.StatusOf(err), client.KindOf(err), s.normalise(err.Error()))
}

// text is the text option, or the input.
func text(d *datadriven.TestData, a args) (string, bool) {
	if t, ok := a.opts["text"]; ok {
		return t, true
	}
	if in := strings.TrimSpace(d.Input); in != "" {
		return in, true
	}
	return "", false
}

func (s *scenario) writeMemory(d *datadriven.TestData, a args) error {
	n, err := s.one(a)
	if err != nil {
		return err
	}
	key := a.opts["key"]
	if key == "" {
		return fmt.Errorf("%s needs key=", d.Cmd)
	}
	txt, hasText := text(d, a)
	var imp *int
	if v, ok := a.opts["importance"]; ok {
		i, err := strconv.Atoi(v)
		if err != nil {
			return err
		}
		imp = &i
	}
	cx, cancel := ctx()
	defer cancel()
	if d.Cmd == "write" {
		if _, ok := s.keys[key]; ok {
			return fmt.Errorf("key %q exists", key)
		}
		m, err := client.Do(cx, cl(n), app.MemoryCreate, app.MemoryCreateIn{Content: txt, Project: "crow", Importance: imp})
		if err != nil {
			s.failed(err)
			return nil
		}
		s.keys[key] = m.ID
		return nil
	}
	id, ok := s.keys[key]
	if !ok {
		return fmt.Errorf("no memory %q", key)
	}
	in := app.MemoryUpdateIn{ID: id, Importance: imp}
	if hasText {
		in.Content = &txt
	}
	if _, err := client.Do(cx, cl(n), app.MemoryUpdate, in); err != nil {
		s.failed(err)
	}
	return nil
}

func (s *scenario) deleteMemory(a args) error {
	n, err := s.one(a)
	if err != nil {
		return err
	}
	id, ok := s.keys[a.opts["key"]]
	if !ok {
		return fmt.Errorf("no memory %q", a.opts["key"])
	}
	cx, cancel := ctx()
	defer cancel()
	if _, err := client.Do(cx, cl(n), app.MemoryDelete, app.MemoryID{ID: id}); err != nil {
		s.failed(err)
	}
	return nil
}

func (s *scenario) put(d *datadriven.TestData, a args) error {
	n, err := s.one(a)
	if err != nil {
		return err
	}
	raw, ok := a.opts["data"]
	if !ok {
		raw = d.Input
	}
	var data map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &data); err != nil {
		return fmt.Errorf("data %q: %v", raw, err)
	}
	cx, cancel := ctx()
	defer cancel()
	if _, err := client.Do(cx, cl(n), app.TablesPut, app.RowPutIn{Table: a.opts["table"], RowID: a.opts["row"], Data: data}); err != nil {
		s.failed(err)
	}
	return nil
}

func (s *scenario) get(n *cluster.Node, a args) (string, error) {
	cx, cancel := ctx()
	defer cancel()
	row, err := client.Do(cx, cl(n), app.TablesGet, app.RowIn{Table: a.opts["table"], RowID: a.opts["row"], Deleted: true})
	switch {
	case client.StatusOf(err) == 404:
		return "absent\n", nil
	case err != nil:
		return "", err
	case row.Deleted:
		return "deleted\n", nil
	}
	return canonical(row.Data) + "\n", nil
}

func canonical(data json.RawMessage) string {
	c, err := records.Canonical(data)
	if err != nil {
		return string(data)
	}
	return string(c)
}

func (s *scenario) read(n *cluster.Node, a args) (string, error) {
	id, ok := s.keys[a.opts["key"]]
	if !ok {
		return "", fmt.Errorf("no memory %q", a.opts["key"])
	}
	cx, cancel := ctx()
	defer cancel()
	m, err := client.Do(cx, cl(n), app.MemoryGet, app.MemoryID{ID: id})
	switch {
	case client.StatusOf(err) == 404:
		return "absent\n", nil
	case err != nil:
		return "", err
	}
	return fmt.Sprintf("%q importance=%d\n", m.Content, m.Importance), nil
}

// agree runs show on the node named, or with "all" on every node (after a
// sync) until all print the same, and prints that once.
func (s *scenario) agree(a args, show func(*cluster.Node) (string, error)) error {
	if len(a.words) != 1 || a.words[0] != "all" {
		n, err := s.one(a)
		if err != nil {
			return err
		}
		out, err := show(n)
		s.out.WriteString(s.normalise(out))
		return err
	}
	if err := s.sync(s.names); err != nil {
		return err
	}
	var outs []string
	err := eventually("every node to agree", func() (bool, string) {
		outs = outs[:0]
		for _, n := range s.c.Nodes {
			out, err := show(n)
			if err != nil {
				return false, err.Error()
			}
			outs = append(outs, s.normalise(out))
		}
		var diff strings.Builder
		for i, o := range outs {
			fmt.Fprintf(&diff, "---- %s:\n%s", s.names[i], o)
		}
		for _, o := range outs[1:] {
			if o != outs[0] {
				return false, diff.String()
			}
		}
		return true, ""
	})
	if err != nil {
		return err
	}
	s.out.WriteString(outs[0])
	return nil
}

// eventually polls cond until it holds; the error carries cond's last word.
func eventually(what string, cond func() (bool, string)) error {
	deadline := time.Now().Add(wait)
	for {
		ok, why := cond()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v waiting for %s:\n%s", wait, what, why)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *scenario) partition(a args) error {
	var groups [][]string
	cur := []string{}
	for _, w := range append(a.words, "|") {
		if w != "|" {
			if _, err := s.node(w); err != nil {
				return err
			}
			cur = append(cur, w)
			continue
		}
		if len(cur) == 0 {
			return fmt.Errorf("empty group in partition %v", a.words)
		}
		groups = append(groups, cur)
		cur = []string{}
	}
	s.c.Partition(groups...)
	return nil
}

// sync waits until the nodes hold the same feeds at the same lengths and
// each has applied every feed but its own up to that length.
func (s *scenario) sync(names []string) error {
	var nodes []*cluster.Node
	for _, name := range names {
		n, err := s.node(name)
		if err != nil {
			return err
		}
		nodes = append(nodes, n)
	}
	// Quiet: the same heads on two looks settle apart, so writes the
	// daemons make on their own (home numbering memories, registry rows)
	// are done, and Lamport clocks are where the next scenario step
	// expects them.
	var last string
	var since time.Time
	return eventually(fmt.Sprintf("%v to sync", names), func() (bool, string) {
		ok, why, heads := s.synced(nodes)
		switch {
		case !ok:
			last = ""
			return false, why
		case heads != last:
			last, since = heads, time.Now()
			return false, why
		}
		return time.Since(since) >= settle, why
	})
}

// settle is how long the heads of synced nodes must stay put.
const settle = 250 * time.Millisecond

// synced reports whether nodes hold the same heads and have applied them,
// why not, and the heads.
func (s *scenario) synced(nodes []*cluster.Node) (bool, string, string) {
	{
		var first map[string]uint64
		var why strings.Builder
		ok := true
		for _, n := range nodes {
			cx, cancel := ctx()
			st, err := client.Do(cx, cl(n), app.SyncStatusOp, app.NoInput{})
			cancel()
			if err != nil {
				return false, err.Error(), ""
			}
			heads := map[string]uint64{}
			for _, f := range st.Feeds {
				heads[f.Feed] = f.Length
				if f.InstanceID == st.InstanceID {
					continue // its own feed is never applied
				}
				key, err := hex.DecodeString(f.Feed)
				if err != nil {
					return false, err.Error(), ""
				}
				var next uint64
				if err := n.DB().View(func(txn *store.Txn) error {
					next, err = txn.Applied(key)
					return err
				}); err != nil {
					return false, err.Error(), ""
				}
				if next < f.Length {
					ok = false
					fmt.Fprintf(&why, "%s: applied %s up to %d of %d\n", n.Name, s.normalise(f.InstanceID), next, f.Length)
				}
			}
			fmt.Fprintf(&why, "%s holds %v\n", n.Name, heads)
			if first == nil {
				first = heads
			} else if !maps.Equal(first, heads) {
				ok = false
			}
		}
		return ok, why.String(), fmt.Sprint(first)
	}
}

// conflicts lists n's conflict records in a stable order, numbered.
func (s *scenario) conflicts(n *cluster.Node) ([]string, error) {
	list, err := s.conflictList(n)
	if err != nil {
		return nil, err
	}
	lines := make([]string, len(list))
	for i, c := range list {
		lines[i] = fmt.Sprintf("%d. %s\n", i+1, s.describe(c))
	}
	return lines, nil
}

func (s *scenario) conflictList(n *cluster.Node) ([]records.Conflict, error) {
	cx, cancel := ctx()
	defer cancel()
	list, err := client.Do(cx, cl(n), app.ConflictsList, app.ConflictListIn{})
	if err != nil {
		return nil, err
	}
	cs := list.Conflicts
	slices.SortStableFunc(cs, func(x, y records.Conflict) int { return strings.Compare(s.describe(x), s.describe(y)) })
	return cs, nil
}

// describe is one conflict without ids or times: table, row, op, the
// winner's and the loser's instance and data, and its resolution.
func (s *scenario) describe(c records.Conflict) string {
	state := "unresolved"
	if c.Resolved {
		state = "resolved by " + string(c.Resolution)
	}
	return s.normalise(fmt.Sprintf("%s %s %s: %s %s over %s %s (%s)", c.TableName, c.RowID, c.Op,
		c.WinningInstanceID, version(c.TableName, c.WinningData, c.WinningDeleted),
		c.LosingInstanceID, version(c.TableName, c.LosingData, c.LosingDeleted), state))
}

// version prints a row's data: a memory's text, else its canonical JSON.
func version(table string, data json.RawMessage, deleted bool) string {
	if deleted {
		return "(deleted)"
	}
	if table == store.TableMemories {
		var m memories.Memory
		if err := json.Unmarshal(data, &m); err == nil {
			return strconv.Quote(m.Content)
		}
	}
	return canonical(data)
}

func (s *scenario) resolve(cmd string, a args) error {
	n, err := s.one(a)
	if err != nil {
		return err
	}
	i, err := strconv.Atoi(a.opts["conflict"])
	if err != nil {
		return fmt.Errorf("conflict=N: %v", err)
	}
	list, err := s.conflictList(n)
	if err != nil {
		return err
	}
	if i < 1 || i > len(list) {
		return fmt.Errorf("%s has %d conflicts, no %d", n.Name, len(list), i)
	}
	id := list[i-1].ID
	cx, cancel := ctx()
	defer cancel()
	var c records.Conflict
	if cmd == "keep" {
		c, err = client.Do(cx, cl(n), app.ConflictsKeep, app.ConflictID{ID: id})
	} else {
		var r app.Restored
		if r, err = client.Do(cx, cl(n), app.ConflictsRestore, app.ConflictID{ID: id}); err == nil {
			c = *r.Conflict
		}
	}
	if err != nil {
		s.failed(err)
		return nil
	}
	s.printf("%s", s.describe(c))
	return nil
}

func (s *scenario) notifications(n *cluster.Node) (string, error) {
	cx, cancel := ctx()
	defer cancel()
	list, err := client.Do(cx, cl(n), app.NotificationsList, app.PageIn{})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d unread\n", list.Unread)
	for _, x := range list.Notifications {
		read := "unread"
		if x.Read {
			read = "read"
		}
		fmt.Fprintf(&b, "%s %s %s %q: %s\n", read, x.Priority, x.Kind, x.Title, x.Body)
	}
	return b.String(), nil
}
