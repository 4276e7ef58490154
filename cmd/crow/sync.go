package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/crow-sync/crow/app"
)

func init() {
	register("sync", "replication state and control (status|pause|resume)", runSync)
}

func runSync(ctx context.Context, g *globals, args []string) error {
	if len(args) == 0 || (args[0] != "status" && args[0] != "pause" && args[0] != "resume") {
		return usagef("usage: crow sync status [--watch [--interval 1s]] [--json] | crow sync pause|resume [ID|NAME] [--json]")
	}
	fs := flag.NewFlagSet("sync "+args[0], flag.ContinueOnError)
	g.bind(fs)
	var watch *bool
	var interval *time.Duration
	if args[0] == "status" {
		watch = fs.Bool("watch", false, "redraw every --interval until Ctrl-C: per feed rate and ETA, per peer rates, pending anchors (--json: one JSON object per line)")
		interval = fs.Duration("interval", time.Second, "time between two polls with --watch")
	}
	pos, err := parseArgs(fs, args[1:])
	if err != nil {
		return err
	}
	if args[0] != "status" {
		return runSyncPause(ctx, g, args[0], pos)
	}
	if len(pos) != 0 {
		return usagef("crow sync status takes no arguments")
	}
	if *interval < 100*time.Millisecond {
		return usagef("--interval must be at least 100ms, got %s", *interval)
	}
	c, err := newClient(g)
	if err != nil {
		return err
	}
	if *watch {
		return watchSync(ctx, g, c, *interval)
	}
	doc, printed, err := call(ctx, g, c, app.SyncStatusOp, app.NoInput{})
	if err != nil || printed {
		return err
	}
	if doc.Paused {
		fmt.Fprintln(g.stdout, "sync is PAUSED with every peer (crow sync resume)")
	}
	if doc.Forked != nil {
		fmt.Fprintln(g.stdout, "status: FORKED:", doc.Forked.Error)
	}
	if r := doc.Reenroll; r != nil {
		fmt.Fprintf(g.stdout, "reenrolled from %s: %s (rows replayed=%d skipped=%d)\n", r.OldInstanceID, r.Phase, r.Replayed, r.Skipped)
	}
	fmt.Fprintln(g.stdout, "feeds held here:")
	for _, f := range doc.Feeds {
		name := f.Name
		if name == "" {
			name = "(unregistered)"
		}
		fmt.Fprintf(g.stdout, "  %-14s %s…  length=%d\n", name, f.Feed[:16], f.Length)
	}
	fmt.Fprintln(g.stdout, "peers:")
	if len(doc.Peers) == 0 {
		fmt.Fprintln(g.stdout, "  (none registered)")
	}
	for _, p := range doc.Peers {
		state := "disconnected"
		if p.Connected {
			state = "connected"
		}
		seen := p.LastSeen
		if seen == "" {
			seen = "never"
		}
		if p.Paused {
			state += ",paused"
		}
		fmt.Fprintf(g.stdout, "  %-14s %-19s lag=%d received=%d sent=%d last_seen=%s\n",
			p.Name, state, p.Lag, p.EntriesReceived, p.EntriesSent, seen)
	}
	return nil
}

// runSyncPause is `crow sync pause|resume [ID|NAME]`: every peer, or the
// one instance named (by id, or by its name when unique).
func runSyncPause(ctx context.Context, g *globals, verb string, pos []string) error {
	if len(pos) > 1 {
		return usagef("crow sync %s takes at most one instance id or name", verb)
	}
	in := app.SyncPauseIn{}
	if len(pos) == 1 {
		in.ID = pos[0]
	}
	c, err := newClient(g)
	if err != nil {
		return err
	}
	op := app.SyncPause
	if verb == "resume" {
		op = app.SyncResume
	}
	res, printed, err := call(ctx, g, c, op, in)
	if err != nil || printed {
		return err
	}
	switch {
	case in.ID == "":
		fmt.Fprintf(g.stdout, "sync %sd with every peer\n", verb)
	default:
		fmt.Fprintf(g.stdout, "sync %sd with %s\n", verb, in.ID)
	}
	switch {
	case res.Paused:
		fmt.Fprintln(g.stdout, "paused now: every peer (crow sync resume)")
	case len(res.PausedPeers) > 0:
		fmt.Fprintf(g.stdout, "paused now: %s (crow sync resume ID)\n", strings.Join(res.PausedPeers, ", "))
	default:
		fmt.Fprintln(g.stdout, "paused now: none")
	}
	return nil
}
