package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/crow-sync/crow/app"
)

// runInstancePromote is `crow instance promote [--force]`: home failover on
// a satellite that holds the master seed (crow init --import).
func runInstancePromote(ctx context.Context, g *globals, args []string) error {
	var in app.PromoteIn
	fs := flag.NewFlagSet("instance promote", flag.ContinueOnError)
	g.bind(fs)
	fs.BoolVar(&in.Force, "force", false, "promote even though the current home still answers")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("usage: crow instance promote [--force]")
	}
	c, err := newClient(g)
	if err != nil {
		return err
	}
	p, printed, err := call(ctx, g, c, app.InstancePromote, in)
	if err != nil || printed {
		return err
	}
	prev := ""
	if p.PreviousHome != "" {
		prev = ", replacing " + p.PreviousHome
	}
	fmt.Fprintf(g.stdout, "%s (%s) is home from epoch %d%s; it numbers from #%d on. The daemon restarts as home now.\n",
		p.Name, p.InstanceID, p.Epoch, prev, p.Base+1)
	return nil
}
