package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/crow-sync/crow/app"
)

// runReenroll is `crow instance reenroll [--join INVITE]`: the running daemon
// of a forked copy takes a new identity by invite and restarts under it.
func runReenroll(ctx context.Context, g *globals, args []string) error {
	fs := flag.NewFlagSet("instance reenroll", flag.ContinueOnError)
	g.bind(fs)
	var in app.ReenrollIn
	fs.StringVar(&in.Invite, "join", "", "an invite made on home for this instance's name (crow instance invite --name NAME); not needed where the master seed is held (crow init --import)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("usage: crow instance reenroll [--join INVITE] (make the invite on home: crow instance invite --name NAME; an instance holding the master seed needs none)")
	}
	c, err := newClient(g)
	if err != nil {
		return err
	}
	out, printed, err := call(ctx, g, c, app.InstanceReenroll, in)
	if err != nil || printed {
		return err
	}
	fmt.Fprintf(g.stdout, "reenrolled: instance %s is now %s (this copy held %d entries of the old feed, peers %d)\n",
		out.OldInstanceID, out.NewInstanceID, out.ForkLength, out.PeerLength)
	fmt.Fprintln(g.stdout, out.Message)
	return nil
}
