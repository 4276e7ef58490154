package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/registry"
)

func init() {
	register("instance", "enroll, register, list, revoke, promote and reenroll instances (invite --name NAME|add URL|list|revoke ID|promote [--force]|reenroll --join INVITE)", runInstance)
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
		return usagef("usage: crow instance invite --name NAME [--ttl 1h] | add URL | list | revoke ID | promote [--force]")
	}
	sub, args := args[0], args[1:]
	if sub == "reenroll" {
		return runReenroll(ctx, g, args)
	}
	if sub == "promote" {
		return runInstancePromote(ctx, g, args) // promote.go
	}
	fs := flag.NewFlagSet("instance "+sub, flag.ContinueOnError)
	g.bind(fs)
	var inv app.InviteIn
	if sub == "invite" {
		fs.StringVar(&inv.Name, "name", "", "name of the machine to enroll (required; its crow init --name must match)")
		fs.StringVar(&inv.TTL, "ttl", "1h", "how long the invite stays valid (1m to 168h)")
	}
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := checkArgs(fs.Name(), pos); err != nil {
		return err
	}
	if sub == "invite" && inv.Name == "" {
		return usagef("crow instance invite needs --name NAME (the name the new machine's crow init --name gives)")
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
	case "invite":
		made, printed, err := call(ctx, g, c, app.InstancesInvite, inv)
		if err != nil || printed {
			return err
		}
		// The invite is the last line of stdout (SPEC §12): scripts take it
		// with tail -n 1.
		fmt.Fprintf(g.stdout, "invite for %q, single use, valid until %s. It is secret: anyone holding it can enroll one machine.\n", made.Name, made.ExpiresAt)
		fmt.Fprintf(g.stdout, "on the new machine: crow init --name %s --join INVITE, then crow serve\n", shellQuote(made.Name))
		fmt.Fprintln(g.stdout, made.Invite)
		return nil
	case "add":
		var reg app.Registered
		reg, printed, err = call(ctx, g, c, app.InstancesRegister, app.RegisterIn{GatewayURL: pos[0]})
		if err != nil {
			return err // the daemon's error names the URL and the step that failed
		}
		in = reg.Instance
		if reg.Warning != "" {
			fmt.Fprintln(g.stderr, "warning:", reg.Warning)
		}
	case "revoke":
		if in, printed, err = call(ctx, g, c, app.InstancesRevoke, app.InstanceID{ID: pos[0]}); err != nil {
			return err
		}
	case "list":
		page, printed, err := call(ctx, g, c, app.InstancesList, app.NoInput{})
		if err != nil || printed {
			return err
		}
		for _, in := range page.Instances {
			fmt.Fprintln(g.stdout, instanceLine(in, page.Self))
		}
		return nil
	default:
		return usagef("unknown instance command %q: use invite, add, list, revoke or promote", sub)
	}
	if !printed {
		fmt.Fprintln(g.stdout, instanceLine(in, ""))
	}
	return nil
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r == '-' || r == '_' || r == '.' || r == '/' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
