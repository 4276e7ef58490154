package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/crow-sync/crow/anchor"
	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/client"
	"github.com/crow-sync/crow/conflicts"
	"github.com/crow-sync/crow/home"
	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/store"
)

func init() {
	register("demo", "start a home and two satellites on loopback and walk through the whole story", runDemo)
}

// demoPassphrase protects the demo's throw-away identity export.
const demoPassphrase = "crow-demo"

// demoNode is one daemon of the demo: a real `crow serve` process.
type demoNode struct {
	name    string
	dir     string
	gwPort  int
	syncPrt int
	cmd     *exec.Cmd
	done    chan error
	c       *client.Client
	id      string
	invite  string // the invite it joined with (satellites)
}

// demo runs the story against three daemons started from this binary.
type demo struct {
	g     *globals
	bin   string
	dir   string
	nodes []*demoNode
	step  int
}

func runDemo(ctx context.Context, g *globals, args []string) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	g.bind(fs)
	dir := fs.String("dir", "", "directory for the three instances (default: a new temporary directory)")
	keep := fs.Bool("keep", false, "keep the directory (data and logs) afterwards")
	serve := fs.Bool("serve", false, "after the story, leave the three daemons running (URLs, keys and web UI links printed) until Ctrl-C")
	if _, err := parseArgs(fs, args); err != nil {
		return err
	}
	bin, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the crow binary: %w", err)
	}
	if *dir == "" {
		if *dir, err = os.MkdirTemp("", "crow-demo-"); err != nil {
			return err
		}
	} else if err := os.MkdirAll(*dir, 0o700); err != nil {
		return err
	}
	d := &demo{g: g, bin: bin, dir: *dir}
	defer func() {
		d.stopAll()
		if *keep {
			fmt.Fprintf(g.stdout, "\nData and logs kept in %s\n", d.dir)
		} else {
			os.RemoveAll(d.dir)
		}
	}()
	storyCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	start := time.Now()
	if err := d.run(storyCtx); err != nil {
		fmt.Fprintf(g.stdout, "\nThe demo stopped: %v\nDaemon logs are in %s (kept).\n", err, d.dir)
		*keep = true
		return err
	}
	fmt.Fprintf(g.stdout, "\nDone in %.1fs: three instances, one identity, nothing lost.\n", time.Since(start).Seconds())
	if *serve {
		return d.serve(ctx, *keep)
	}
	return nil
}

// serve prints how to reach the running daemons and waits for ctx (Ctrl-C,
// SIGTERM); the caller then stops them. A daemon that exits on its own
// ends the wait with an error.
func (d *demo) serve(ctx context.Context, keep bool) error {
	crowCmd := d.bin
	if p, err := exec.LookPath("crow"); err == nil && sameFile(p, d.bin) {
		crowCmd = "crow"
	}
	fmt.Fprintln(d.g.stdout, "\nThe three daemons keep running. In the web UI, paste the instance's API key when asked.")
	for _, n := range d.nodes {
		key, err := os.ReadFile(home.PathsOf(n.dir).APIKeyFile())
		keyText := strings.TrimSpace(string(key))
		if err != nil || keyText == "" {
			keyText = "(not on disk: crow apikey rotate makes one)"
		}
		note := ""
		if n.name == "vps" {
			note = " (revoked in the story: the others refuse it)"
		}
		fmt.Fprintf(d.g.stdout, "\n%s%s\n", n.name, note)
		fmt.Fprintf(d.g.stdout, "  gateway  %s\n", n.baseURL())
		fmt.Fprintf(d.g.stdout, "  web UI   %s/ui/  %s/ui/memories  %s/ui/instances  %s/ui/conflicts  %s/ui/projects\n",
			n.baseURL(), n.baseURL(), n.baseURL(), n.baseURL(), n.baseURL())
		fmt.Fprintf(d.g.stdout, "  API key  %s\n", keyText)
		fmt.Fprintf(d.g.stdout, "  try      CROW_HOME=%s %s memory list\n", n.dir, crowCmd)
		fmt.Fprintf(d.g.stdout, "           CROW_HOME=%s %s sync status --watch\n", n.dir, crowCmd)
	}
	what := "stops them and removes " + d.dir
	if keep {
		what = "stops them; " + d.dir + " is kept"
	}
	fmt.Fprintf(d.g.stdout, "\nPress Ctrl-C to stop (%s).\n", what)
	exited := make(chan string, len(d.nodes))
	for _, n := range d.nodes {
		go func() {
			select {
			case err := <-n.done:
				n.done <- err // stop reads it
				exited <- fmt.Sprintf("%s exited on its own: %v (see %s)", n.name, err, filepath.Join(n.dir, "serve.log"))
			case <-ctx.Done():
			}
		}()
	}
	select {
	case <-ctx.Done():
		fmt.Fprintln(d.g.stdout, "\nStopping the three daemons.")
		return nil
	case msg := <-exited:
		return errors.New(msg)
	}
}

// sameFile reports whether paths a and b name one file.
func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

func (d *demo) say(format string, a ...any) {
	d.step++
	fmt.Fprintf(d.g.stdout, "\n%d. %s\n", d.step, fmt.Sprintf(format, a...))
}

func (d *demo) detail(format string, a ...any) {
	fmt.Fprintf(d.g.stdout, "   %s\n", fmt.Sprintf(format, a...))
}

func (d *demo) run(ctx context.Context) error {
	d.say("Three instances of one identity in %s: home, laptop, vps", d.dir)
	homeNode, err := d.initNode(ctx, "home", "")
	if err != nil {
		return err
	}
	if err := d.start(ctx, homeNode); err != nil {
		return err
	}
	d.detail("%-6s instance %s  gateway http://127.0.0.1:%d (holds the master seed)", homeNode.name, homeNode.id, homeNode.gwPort)

	d.say("Enroll the satellites by one-time invite: each makes its own key, home certifies it; the seed stays on home")
	var sats []*demoNode
	for _, name := range []string{"laptop", "vps"} {
		inv, err := client.Do(ctx, homeNode.c, app.InstancesInvite, app.InviteIn{Name: name, TTL: "15m"})
		if err != nil {
			return fmt.Errorf("inviting %s: %w", name, err)
		}
		n, err := d.initNode(ctx, name, inv.Invite)
		if err != nil {
			return err
		}
		n.invite = inv.Invite
		if err := d.start(ctx, n); err != nil {
			return err
		}
		if err := d.waitEnrolled(ctx, homeNode, n); err != nil {
			return err
		}
		sats = append(sats, n)
		d.detail("%-6s instance %s  gateway http://127.0.0.1:%d  joined with invite %s… (single use)", n.name, n.id, n.gwPort, inv.InviteID[:12])
	}
	laptop, vps := sats[0], sats[1]
	if err := d.until(ctx, "the satellites to know each other", func() (bool, error) {
		for _, n := range d.nodes {
			page, err := client.Do(ctx, n.c, app.InstancesList, app.NoInput{})
			if err != nil || len(page.Instances) != len(d.nodes) {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		return err
	}
	d.detail("every instance lists all three (the registry replicated from home); no satellite holds the seed")
	again := exec.CommandContext(ctx, d.bin, "init", "--name", "laptop", "--join", laptop.invite)
	again.Env = append(os.Environ(), "CROW_HOME="+filepath.Join(d.dir, "laptop-copy"))
	if out, err := again.CombinedOutput(); err == nil {
		return fmt.Errorf("a used invite was accepted twice")
	} else {
		d.detail("the laptop's invite used a second time is refused: %s", firstLine(strings.TrimSpace(string(out))))
	}

	d.say("Write a memory on each instance; watch them replicate (signed feeds over libp2p + Noise)")
	t0 := time.Now()
	ids := map[string]string{}
	for _, n := range d.nodes {
		id, err := d.addMemory(ctx, n, fmt.Sprintf("%s: the %s machine keeps its notes in crow", n.name, n.name), "demo")
		if err != nil {
			return err
		}
		ids[n.name] = id
	}
	if err := d.waitCount(ctx, 3); err != nil {
		return err
	}
	d.detail("all three instances hold all 3 memories after %d ms", time.Since(t0).Milliseconds())

	d.say("Take the vps offline, keep writing on the laptop, bring the vps back")
	if err := d.waitFeedsEqual(ctx); err != nil {
		return err
	}
	// Paused first (the pause outlives the restart), so nothing home appends
	// after the count reaches the vps before it stops: the catch-up's count
	// is exactly what it missed.
	if _, err := client.Do(ctx, vps.c, app.SyncPause, app.SyncPauseIn{}); err != nil {
		return err
	}
	before, err := d.feedTotal(ctx, vps)
	if err != nil {
		return err
	}
	if err := d.stop(vps); err != nil {
		return err
	}
	for i := 1; i <= 2; i++ {
		if _, err := d.addMemory(ctx, laptop, fmt.Sprintf("written while the vps was offline (%d)", i), "demo"); err != nil {
			return err
		}
	}
	if err := d.start(ctx, vps); err != nil {
		return err
	}
	t0 = time.Now()
	if _, err := client.Do(ctx, vps.c, app.SyncResume, app.SyncPauseIn{}); err != nil {
		return err
	}
	if err := d.waitCount(ctx, 5); err != nil {
		return err
	}
	if err := d.waitFeedsEqual(ctx); err != nil {
		return err
	}
	elapsed := time.Since(t0)
	after, err := d.feedTotal(ctx, vps)
	if err != nil {
		return err
	}
	status, err := client.Do(ctx, vps.c, app.SyncStatusOp, app.NoInput{})
	if err != nil {
		return err
	}
	var received uint64
	for _, p := range status.Peers {
		received += p.EntriesReceived
	}
	d.detail("the vps caught up in %d ms: it was missing %d feed entries (the laptop's writes, home's numbering), and %d crossed the wire",
		elapsed.Milliseconds(), after-before, received)

	d.say("A conflict: the laptop and the vps edit the same memory while cut off from each other")
	for _, n := range []*demoNode{laptop, vps} {
		if _, err := client.Do(ctx, n.c, app.SyncPause, app.SyncPauseIn{}); err != nil {
			return err
		}
	}
	target := ids["home"]
	for _, n := range []*demoNode{laptop, vps} {
		text := fmt.Sprintf("home's memory, as the %s remembers it", n.name)
		if _, err := client.Do(ctx, n.c, app.MemoryUpdate, app.MemoryUpdateIn{ID: target, Content: &text}); err != nil {
			return err
		}
	}
	for _, n := range []*demoNode{laptop, vps} {
		if _, err := client.Do(ctx, n.c, app.SyncResume, app.SyncPauseIn{}); err != nil {
			return err
		}
	}
	var conflictID, lost string
	err = d.until(ctx, "the conflict to reach every instance", func() (bool, error) {
		for _, n := range d.nodes {
			yes := true
			page, err := client.Do(ctx, n.c, app.ConflictsList, app.ConflictListIn{Unresolved: &yes})
			if err != nil {
				return false, err
			}
			if len(page.Conflicts) != 1 {
				return false, nil
			}
			var m memory.Memory // the losing data is a memories row
			if err := json.Unmarshal(page.Conflicts[0].LosingData, &m); err != nil {
				return false, fmt.Errorf("reading the overwritten memory: %w", err)
			}
			conflictID, lost = page.Conflicts[0].ID, m.Content
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	d.detail("the same conflict record %s on all three; the overwritten text is kept: %q", conflictID, lost)
	d.detail("a notification points to the recovery view: http://127.0.0.1:%d/ui/conflicts", homeNode.gwPort)

	d.say("Restore the overwritten version from home (a new edit that replicates)")
	if _, err := client.Do(ctx, homeNode.c, app.ConflictsRestore, app.ConflictID{ID: conflictID}); err != nil {
		return err
	}
	err = d.until(ctx, "the restored text and the resolution everywhere", func() (bool, error) {
		for _, n := range d.nodes {
			m, err := client.Do(ctx, n.c, app.MemoryGet, app.MemoryID{ID: target})
			if err != nil {
				return false, err
			}
			c, err := client.Do(ctx, n.c, app.ConflictsGet, app.ConflictID{ID: conflictID})
			if err != nil {
				return false, err
			}
			if m.Content != lost || c.Resolution != conflicts.ActionRestore {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	d.detail("every instance reads %q, and the conflict is resolved everywhere", lost)

	d.say("A federated search from the laptop across all instances (signed 5-minute tokens, per-instance deadline)")
	res, err := client.Do(ctx, laptop.c, app.MemorySearch, app.MemorySearchIn{Query: "offline", Instances: "all"})
	if err != nil {
		return err
	}
	var st []string
	for _, in := range res.Instances {
		st = append(st, in.Name+"="+in.Status)
	}
	on := 0
	for _, r := range res.Results {
		on = max(on, len(r.FoundOn))
	}
	d.detail("%d results, merged (found on up to %d instances each); statuses: %s; partial=%v",
		len(res.Results), on, strings.Join(st, " "), res.Partial)

	d.say("Consolidate the project's state from the laptop: home numbers memories and builds the version")
	var numbers []uint64
	err = d.until(ctx, "home's numbers on the laptop", func() (bool, error) {
		page, err := client.Do(ctx, laptop.c, app.MemoryList, app.MemoryListIn{MemoryFilter: app.MemoryFilter{Project: "demo"}, Order: "oldest"})
		if err != nil {
			return false, err
		}
		numbers = numbers[:0]
		for _, m := range page.Memories {
			if m.Number == nil || m.EventHash == nil {
				return false, nil
			}
			numbers = append(numbers, *m.Number)
		}
		return len(numbers) == 5, nil
	})
	if err != nil {
		return err
	}
	highest := slices.Max(numbers)
	ops, err := jsonOps(
		map[string]any{"op": "set_phase", "phase": "demo"},
		map[string]any{"op": "add_decision", "title": "Keep notes in crow", "statement": "every machine writes its notes to crow",
			"evidence_memory_ids": numbers[:3]},
		map[string]any{"op": "add_risk", "title": "A machine may be offline for weeks", "severity": "med",
			"evidence_memory_ids": numbers[3:]},
	)
	if err != nil {
		return err
	}
	cons, err := client.Do(ctx, laptop.c, app.ProjectConsolidate, app.ConsolidateIn{Project: "demo", Ops: ops, ConsolidatedUntilEvent: &highest})
	if err != nil {
		return err
	}
	d.detail("memories numbered #%d..#%d by home; the laptop's request was forwarded to home: version %d, %d ops applied",
		slices.Min(numbers), highest, cons.Version, cons.AppliedCount)
	err = d.until(ctx, "the state version on every instance", func() (bool, error) {
		for _, n := range d.nodes {
			v, err := client.Do(ctx, n.c, app.ProjectStateGet, app.ProjectName{Project: "demo"})
			if err != nil {
				return false, nil
			}
			if v.StateHash != cons.StateHash {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	d.detail("state_hash %s (SHA3-256 of the canonical state), the same on all three", cons.StateHash)

	d.say("Home anchors the state hash on its embedded Ethereum chain; anyone can verify it (public endpoint)")
	var ver app.Verification
	public := client.New(homeNode.baseURL(), "") // a public endpoint: no key
	err = d.until(ctx, "the state version to be anchored", func() (bool, error) {
		ver, err = client.Do(ctx, public, app.ProjectVerify, app.ProjectName{Project: "demo"})
		if err != nil {
			return false, err
		}
		return ver.Verified, nil
	})
	if err != nil {
		return err
	}
	v := ver.Versions[0]
	d.detail("version %d is %s: Merkle root %s… (root #%d) in block %d of chain %d, contract %s", v.Version, v.Status, v.Root[:18], v.RootID, v.BlockNumber, ver.Chain.ChainID, ver.Chain.Contract)
	if v.Packet == nil {
		return fmt.Errorf("version %d has no verification packet", v.Version)
	}
	// A third party needs only the packet and a JSON-RPC endpoint of the
	// chain: home's public, read-only /v1/chain/rpc.
	verdict := anchor.VerifyPacket(ctx, *v.Packet, v.Packet.RPCURL, "")
	if verdict.Verdict != anchor.VerdictVerified {
		return fmt.Errorf("verifying the packet from the chain alone: %s (%v)", verdict.Verdict, verdict.Checks)
	}
	d.detail("verified from the packet and the chain alone (%d checks, over %s): the proof leads from (project id, version, state hash) to that root; the chain knows the project only as %s…",
		len(verdict.Checks), v.Packet.RPCURL, ver.ProjectID[:18])
	var anchored, versions int
	err = d.until(ctx, "the memories' event hashes on chain", func() (bool, error) {
		rows, err := client.Do(ctx, vps.c, app.TablesRows, app.RowsIn{Table: store.TableAnchors, Limit: 1000})
		if err != nil {
			return false, err
		}
		memories := map[string]bool{} // a memory edited has a version (a number) per edit
		versions = 0
		var numbers []uint64 // anchored under batch rows (one row per root), which name versions by number
		for _, r := range rows.Rows {
			var rec anchor.Record
			if err := json.Unmarshal(r.Data, &rec); err != nil {
				return false, fmt.Errorf("reading anchor record %s: %w", r.RowID, err)
			}
			if rec.Kind == anchor.RecordMemory && rec.Root != "" {
				memories[rec.MemoryID] = true
				versions++
			}
			var rr anchor.RootRecord
			if rec.Kind == anchor.RecordRoot && json.Unmarshal(r.Data, &rr) == nil && rr.Leaves == anchor.RecordMemory {
				recs, err := anchor.BatchRecords(rr)
				if err != nil {
					return false, fmt.Errorf("reading anchor record %s: %w", r.RowID, err)
				}
				for _, br := range recs {
					numbers = append(numbers, br.Number)
				}
			}
		}
		if len(numbers) > 0 {
			vrows, err := client.Do(ctx, vps.c, app.TablesRows, app.RowsIn{Table: store.TableMemoryVersions, Limit: 1000})
			if err != nil {
				return false, err
			}
			ids := map[string]string{} // number (row id, 20 digits) → memory id
			for _, r := range vrows.Rows {
				var v struct {
					MemoryID string `json:"memory_id"`
				}
				if json.Unmarshal(r.Data, &v) == nil {
					ids[r.RowID] = v.MemoryID
				}
			}
			for _, n := range numbers {
				if id, ok := ids[memory.VersionRowID(n)]; ok {
					memories[id] = true
					versions++
				}
			}
		}
		anchored = len(memories)
		return anchored == 5, nil
	})
	if err != nil {
		return err
	}
	d.detail("the %d memories' event hashes are on chain too (%d numbered versions: an edit is numbered anew), content encrypted; the vps sees the anchor records replicated from home", anchored, versions)

	d.say("The vps is stolen: revoke it on home (a root-signed revocation that replicates)")
	if _, err := client.Do(ctx, homeNode.c, app.InstancesRevoke, app.InstanceID{ID: vps.id}); err != nil {
		return err
	}
	if err := d.until(ctx, "the laptop to hear of the revocation", func() (bool, error) {
		in, err := client.Do(ctx, laptop.c, app.InstancesList, app.NoInput{})
		if err != nil {
			return false, err
		}
		for _, i := range in.Instances {
			if i.ID == vps.id {
				return i.Revoked(), nil
			}
		}
		return false, nil
	}); err != nil {
		return err
	}
	if _, err := d.addMemory(ctx, vps, "written by the thief on the stolen vps", "demo"); err != nil {
		return err
	}
	time.Sleep(2 * time.Second) // time the thief's entry would need to travel
	for _, n := range []*demoNode{homeNode, laptop} {
		page, err := client.Do(ctx, n.c, app.MemorySearch, app.MemorySearchIn{Query: "thief"})
		if err != nil {
			return err
		}
		if len(page.Results) != 0 {
			return fmt.Errorf("%s took a memory from the revoked vps", n.name)
		}
	}
	d.detail("home and the laptop dropped the vps and refuse its key under any id: its new memory reached neither")
	return nil
}

// initNode creates an instance's directory with `crow init` (joining by
// invite for a satellite).
func (d *demo) initNode(ctx context.Context, name, invite string) (*demoNode, error) {
	n := &demoNode{name: name, dir: filepath.Join(d.dir, name)}
	args := []string{"init", "--name", name}
	if invite != "" {
		args = append(args, "--join", invite)
	}
	if err := d.crow(ctx, n.dir, args...); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(home.PathsOf(n.dir).InstanceIDFile())
	if err != nil {
		return nil, err
	}
	n.id = strings.TrimSpace(string(b))
	if n.gwPort, err = freeLoopbackPort(); err != nil {
		return nil, err
	}
	if n.syncPrt, err = freeLoopbackPort(); err != nil {
		return nil, err
	}
	d.nodes = append(d.nodes, n)
	return n, nil
}

// waitEnrolled waits until home and n list each other (n's first start
// registers home and home registers it back).
func (d *demo) waitEnrolled(ctx context.Context, homeNode, n *demoNode) error {
	return d.until(ctx, n.name+" to be enrolled", func() (bool, error) {
		return lists(ctx, homeNode, n.id) && lists(ctx, n, homeNode.id), nil
	})
}

func lists(ctx context.Context, n *demoNode, id string) bool {
	page, err := client.Do(ctx, n.c, app.InstancesList, app.NoInput{})
	if err != nil {
		return false
	}
	for _, in := range page.Instances {
		if in.ID == id {
			return true
		}
	}
	return false
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// crow runs a crow command on dir, quietly unless it fails.
func (d *demo) crow(ctx context.Context, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, d.bin, args...)
	cmd.Env = append(os.Environ(), "CROW_HOME="+dir, "CROW_PASSPHRASE="+demoPassphrase)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("crow %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (n *demoNode) baseURL() string { return fmt.Sprintf("http://127.0.0.1:%d", n.gwPort) }

// start runs `crow serve` for n, logging to n.dir/serve.log, and waits for
// its gateway.
func (d *demo) start(ctx context.Context, n *demoNode) error {
	logf, err := os.OpenFile(filepath.Join(n.dir, "serve.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	n.cmd = exec.Command(d.bin, "serve", "--listen", fmt.Sprintf("127.0.0.1:%d", n.gwPort),
		"--sync-listen", fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", n.syncPrt))
	n.cmd.Env = append(os.Environ(), "CROW_HOME="+n.dir)
	n.cmd.Stdout, n.cmd.Stderr = logf, logf
	if err := n.cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("starting %s: %w", n.name, err)
	}
	n.done = make(chan error, 1)
	go func() { n.done <- n.cmd.Wait(); logf.Close() }()
	err = d.until(ctx, n.name+"'s gateway", func() (bool, error) {
		select {
		case err := <-n.done:
			n.done <- err
			return false, fmt.Errorf("%s exited: %v (see %s)", n.name, err, filepath.Join(n.dir, "serve.log"))
		default:
		}
		if _, err := home.PathsOf(n.dir).ReadGatewayAddr(); err != nil {
			return false, nil
		}
		_, err := client.Do(ctx, client.New(n.baseURL(), ""), app.InstanceHealth, app.HealthIn{})
		return err == nil, nil
	})
	if err != nil {
		return err
	}
	n.c, err = newClient(&globals{home: n.dir})
	return err
}

// stop sends SIGTERM and waits for a clean exit.
func (d *demo) stop(n *demoNode) error {
	if n.cmd == nil {
		return nil
	}
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-n.done:
		n.cmd = nil
		if err != nil {
			return fmt.Errorf("%s did not stop cleanly: %w", n.name, err)
		}
	case <-time.After(30 * time.Second):
		_ = n.cmd.Process.Kill()
		n.cmd = nil
		return fmt.Errorf("%s did not stop within 30s", n.name)
	}
	return nil
}

func (d *demo) stopAll() {
	for _, n := range d.nodes {
		if err := d.stop(n); err != nil {
			fmt.Fprintf(d.g.stderr, "crow demo: %v\n", err)
		}
	}
}

func (d *demo) addMemory(ctx context.Context, n *demoNode, content, project string) (string, error) {
	m, err := client.Do(ctx, n.c, app.MemoryCreate, app.MemoryCreateIn{Content: content, Project: project})
	if err != nil {
		return "", fmt.Errorf("writing on %s: %w", n.name, err)
	}
	return m.ID, nil
}

func (d *demo) feeds(ctx context.Context, n *demoNode) (map[string]uint64, error) {
	st, err := client.Do(ctx, n.c, app.SyncStatusOp, app.NoInput{})
	if err != nil {
		return nil, err
	}
	out := map[string]uint64{}
	for _, f := range st.Feeds {
		out[f.Feed] = f.Length
	}
	return out, nil
}

// feedTotal is the number of feed entries n holds, all feeds together.
func (d *demo) feedTotal(ctx context.Context, n *demoNode) (uint64, error) {
	fs, err := d.feeds(ctx, n)
	var total uint64
	for _, l := range fs {
		total += l
	}
	return total, err
}

// waitFeedsEqual waits until every instance holds the same feeds at the same lengths.
func (d *demo) waitFeedsEqual(ctx context.Context) error {
	return d.until(ctx, "every feed at the same length everywhere", func() (bool, error) {
		first, err := d.feeds(ctx, d.nodes[0])
		if err != nil {
			return false, err
		}
		for _, n := range d.nodes[1:] {
			other, err := d.feeds(ctx, n)
			if err != nil {
				return false, err
			}
			if fmt.Sprint(other) != fmt.Sprint(first) {
				return false, nil
			}
		}
		return true, nil
	})
}

// waitCount waits until every running instance lists want memories.
func (d *demo) waitCount(ctx context.Context, want int) error {
	return d.until(ctx, fmt.Sprintf("%d memories on every instance", want), func() (bool, error) {
		for _, n := range d.nodes {
			page, err := client.Do(ctx, n.c, app.MemoryList, app.MemoryListIn{Limit: 1000})
			if err != nil {
				return false, err
			}
			if len(page.Memories) != want {
				return false, nil
			}
		}
		return true, nil
	})
}

// jsonOps encodes state ops for a consolidation.
func jsonOps(ops ...any) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, len(ops))
	for i, op := range ops {
		b, err := json.Marshal(op)
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

// until polls cond every 20 ms for up to 30 s.
func (d *demo) until(ctx context.Context, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out waiting for %s", what)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// freeLoopbackPort asks the kernel for a free loopback TCP port.
func freeLoopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
