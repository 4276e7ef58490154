package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/crow-sync/crow/app"
)

func init() {
	register("sync", "replication state and control (status|pause|resume)", runSync)
}

func runSync(ctx context.Context, g *globals, args []string) error {
	if len(args) == 0 || (args[0] != "status" && args[0] != "pause" && args[0] != "resume") {
		return usagef("usage: crow sync status|pause|resume [--json]")
	}
	fs := flag.NewFlagSet("sync "+args[0], flag.ContinueOnError)
	g.bind(fs)
	pos, err := parseArgs(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("crow sync %s takes no arguments", args[0])
	}
	c, err := newClient(g)
	if err != nil {
		return err
	}
	if args[0] != "status" {
		op := app.SyncPause
		if args[0] == "resume" {
			op = app.SyncResume
		}
		if _, printed, err := call(ctx, g, c, op, app.NoInput{}); err != nil || printed {
			return err
		}
		fmt.Fprintf(g.stdout, "sync %sd\n", args[0])
		return nil
	}
	doc, printed, err := call(ctx, g, c, app.SyncStatusOp, app.NoInput{})
	if err != nil || printed {
		return err
	}
	if doc.Paused {
		fmt.Fprintln(g.stdout, "sync is PAUSED (crow sync resume)")
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
		fmt.Fprintf(g.stdout, "  %-14s %-12s lag=%d received=%d sent=%d last_seen=%s\n",
			p.Name, state, p.Lag, p.EntriesReceived, p.EntriesSent, seen)
	}
	return nil
}
