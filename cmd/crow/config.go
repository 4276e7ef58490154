package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"text/tabwriter"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/client"
	"github.com/crow-sync/crow/home"
)

func init() {
	register("config", "the daemon's configuration: show [--json] (values and where they came from), set KEY VALUE, unset KEY", runConfig)
}

func runConfig(ctx context.Context, g *globals, args []string) error {
	const usage = "usage: crow config show [--json] | crow config set KEY VALUE | crow config unset KEY"
	if len(args) == 0 {
		return usagef(usage)
	}
	switch args[0] {
	case "show":
		return runConfigShow(ctx, g, args[1:])
	case "set", "unset":
		return runConfigSet(g, args[0], args[1:])
	}
	return usagef("unknown config command %q; %s", args[0], usage)
}

func runConfigShow(ctx context.Context, g *globals, args []string) error {
	fs := flag.NewFlagSet("config show", flag.ContinueOnError)
	g.bind(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("crow config show takes no arguments")
	}
	dir := home.Resolve(g.home)
	var (
		shown app.ConfigShown
		note  string
	)
	// The running daemon knows its flags; without one, what crow serve
	// would use from the environment, the file and the defaults.
	c, err := client.FromHome(dir)
	if err == nil {
		shown, err = client.Do(ctx, c, app.ConfigShow, app.NoInput{})
		if err != nil && client.StatusOf(err) == 0 {
			note = fmt.Sprintf("the daemon at %s does not answer: computed from the environment, %s and the defaults; flags of crow serve are not known", c.Base(), home.PathsOf(dir).ConfigFile())
			err = errNoDaemon
		}
	} else if errors.Is(err, client.ErrNoDaemon) {
		note = fmt.Sprintf("no daemon is running: computed from the environment, %s and the defaults (what crow serve would use without flags)", home.PathsOf(dir).ConfigFile())
		err = errNoDaemon
	}
	if errors.Is(err, errNoDaemon) {
		cfg, src, lerr := home.LoadConfigSources(dir, os.LookupEnv)
		if lerr != nil {
			return lerr
		}
		shown, err = app.ConfigShown{File: home.PathsOf(dir).ConfigFile(), Settings: home.Settings(cfg, src)}, nil
	}
	if err != nil {
		return err
	}
	if note != "" && g.json {
		fmt.Fprintln(g.stderr, "note:", note)
	}
	if g.json {
		enc := json.NewEncoder(g.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(shown.Settings)
	}
	tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tVALUE\tSOURCE")
	for _, s := range shown.Settings {
		v := s.Value
		if v == "" {
			v = `""`
		}
		if s.Resolved != "" {
			v += " (" + s.Resolved + ")"
		}
		src := string(s.Source)
		if s.Source == home.SourceEnv {
			src += " " + s.Env
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Key, v, src)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(g.stdout, "file:", shown.File)
	if note != "" {
		fmt.Fprintln(g.stdout, "note:", note)
	}
	return nil
}

var errNoDaemon = errors.New("no daemon")

func runConfigSet(g *globals, verb string, args []string) error {
	fs := flag.NewFlagSet("config "+verb, flag.ContinueOnError)
	g.bind(fs)
	// A negative number is a VALUE (min_free_mb -1), not a flag: it goes
	// after "--" (keys never start with "-").
	var flags, negative []string
	for _, a := range args {
		if len(a) > 1 && a[0] == '-' && a[1] >= '0' && a[1] <= '9' {
			negative = append(negative, a)
		} else {
			flags = append(flags, a)
		}
	}
	if len(negative) > 0 && !slices.Contains(args, "--") {
		args = append(append(flags, "--"), negative...)
	}
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	var key, value string
	switch {
	case verb == "set" && len(pos) == 2:
		key, value = pos[0], pos[1]
	case verb == "unset" && len(pos) == 1:
		key = pos[0]
	case verb == "set":
		return usagef("usage: crow config set KEY VALUE (an empty VALUE, or crow config unset KEY, removes the key)")
	default:
		return usagef("usage: crow config unset KEY")
	}
	dir := home.Resolve(g.home)
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("%s: %w (run crow init first, or name the data directory with --home)", dir, err)
	}
	path, err := home.SetConfigValue(dir, key, value)
	if errors.Is(err, home.ErrUnknownKey) {
		return usagef("%v", err)
	}
	if err != nil {
		return err
	}
	if value == "" {
		fmt.Fprintf(g.stdout, "%s removed from %s (the default applies)\n", key, path)
	} else {
		fmt.Fprintf(g.stdout, "%s = %s written to %s\n", key, value, path)
	}
	if _, err := home.PathsOf(dir).ReadGatewayAddr(); err == nil {
		fmt.Fprintln(g.stdout, "restart the daemon (crow serve) for it to take effect")
	} else {
		fmt.Fprintln(g.stdout, "crow serve reads it when it starts")
	}
	return nil
}
