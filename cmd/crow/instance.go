package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/registry"
)

func init() {
	register("instance", "register, list and revoke instances (add URL|list|revoke ID)", runInstance)
}

// instanceLine is what the CLI prints of an instance; self is this
// instance's id ("" if unknown).
func instanceLine(in registry.Instance, self string) string {
	seen := "never"
	if in.LastSeen > 0 {
		seen = time.Unix(in.LastSeen, 0).UTC().Format(time.RFC3339)
	}
	me := ""
	if in.ID == self {
		me = " (this instance)"
	}
	return fmt.Sprintf("%s  %-12s %-9s %-8s %-28s last_seen=%s%s", in.ID, in.Name, in.Role, in.Status, in.GatewayURL, seen, me)
}

func runInstance(ctx context.Context, g *globals, args []string) error {
	if len(args) == 0 {
		return usagef("usage: crow instance add URL | list | revoke ID")
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("instance "+sub, flag.ContinueOnError)
	g.bind(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	c, err := newClient(g)
	if err != nil {
		return err
	}
	var (
		in      registry.Instance
		printed bool
	)
	switch sub {
	case "add":
		if len(pos) != 1 {
			return usagef("usage: crow instance add GATEWAY_URL (e.g. http://100.64.0.2:3001)")
		}
		var reg app.Registered
		reg, printed, err = call(ctx, g, c, app.InstancesRegister, app.RegisterIn{GatewayURL: pos[0]})
		if err != nil {
			return err // the daemon's error names the URL and the step that failed
		}
		in = reg.Instance
	case "revoke":
		if len(pos) != 1 {
			return usagef("usage: crow instance revoke ID")
		}
		if in, printed, err = call(ctx, g, c, app.InstancesRevoke, app.InstanceID{ID: pos[0]}); err != nil {
			return err
		}
	case "list":
		if len(pos) != 0 {
			return usagef("usage: crow instance list")
		}
		page, printed, err := call(ctx, g, c, app.InstancesList, app.NoInput{})
		if err != nil || printed {
			return err
		}
		for _, in := range page.Instances {
			fmt.Fprintln(g.stdout, instanceLine(in, page.Self))
		}
		return nil
	default:
		return usagef("unknown instance command %q: use add, list or revoke", sub)
	}
	if !printed {
		fmt.Fprintln(g.stdout, instanceLine(in, ""))
	}
	return nil
}
