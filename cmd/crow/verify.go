package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"time"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/client"
)

func init() {
	register("verify", "check a project's state versions against the chain (NAME [--url GATEWAY])", runVerify)
}

func runVerify(ctx context.Context, g *globals, args []string) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	g.bind(fs)
	gw := fs.String("url", "", "a gateway to ask (public endpoint, no key); default: the local daemon")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("usage: crow verify NAME [--url http://HOST:PORT]")
	}
	var c *client.Client
	if *gw != "" {
		c = client.New(*gw, "")
	} else if c, err = newClient(g); err != nil {
		return err
	}
	c = c.WithKey("") // a public endpoint: no key
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	raw, err := client.DoRaw(ctx, c, app.ProjectVerify, app.ProjectName{Project: pos[0]})
	if err != nil {
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			return fmt.Errorf("asking %s: %w", c.Base(), ue)
		}
		return err
	}
	var doc app.Verification
	if err := json.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("decoding answer: %w", err)
	}
	if g.json {
		if err := printJSON(g.stdout, raw); err != nil {
			return err
		}
	} else {
		if doc.Chain != nil {
			fmt.Fprintf(g.stdout, "chain %d (%s), contract %s, project id %s\n", doc.Chain.ChainID, doc.Chain.Kind, doc.Chain.Contract, doc.ProjectID)
		} else {
			fmt.Fprintf(g.stdout, "this gateway reads no chain: the statuses are home's replicated records (project id %s)\n", doc.ProjectID)
		}
		for _, v := range doc.Versions {
			fmt.Fprintf(g.stdout, "v%-4d %-10s %s", v.Version, v.Status, v.StateHash)
			if v.RootID > 0 {
				fmt.Fprintf(g.stdout, "  root #%d block %d", v.RootID, v.BlockNumber)
			}
			fmt.Fprintln(g.stdout)
		}
	}
	for _, v := range doc.Versions {
		if v.Contradicted() {
			return fmt.Errorf("version %d does NOT match the chain (%s)", v.Version, v.Status)
		}
	}
	if !g.json {
		switch {
		case doc.Verified:
			fmt.Fprintln(g.stdout, "verified: every version is anchored and matches")
		case doc.Chain == nil:
			fmt.Fprintln(g.stdout, "not verified here: this instance reads no chain; run crow verify on home, or --url its gateway")
		default:
			fmt.Fprintln(g.stdout, "not fully verified yet: some versions are pending (anchoring runs every few seconds on home)")
		}
	}
	return nil
}
