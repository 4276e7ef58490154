package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"time"
)

func init() {
	register("instance", "register, list and revoke instances (add URL|list|revoke ID)", runInstance)
}

type instanceView struct {
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	Role       string   `json:"role"`
	GatewayURL string   `json:"gateway_url"`
	SyncAddrs  []string `json:"sync_addrs"`
	LastSeen   int64    `json:"last_seen"`
	Status     string   `json:"status"`
}

func (in instanceView) line(self string) string {
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
	var raw json.RawMessage
	switch sub {
	case "add":
		if len(pos) != 1 {
			return usagef("usage: crow instance add GATEWAY_URL (e.g. http://100.64.0.2:3001)")
		}
		if err := c.do(ctx, "POST", "/v1/instances", nil, map[string]string{"gateway_url": pos[0]}, &raw); err != nil {
			return err // the daemon's error names the URL and the step that failed
		}
	case "revoke":
		if len(pos) != 1 {
			return usagef("usage: crow instance revoke ID")
		}
		if err := c.do(ctx, "DELETE", "/v1/instances/"+url.PathEscape(pos[0]), nil, nil, &raw); err != nil {
			return err
		}
	case "list":
		if len(pos) != 0 {
			return usagef("usage: crow instance list")
		}
		if err := c.do(ctx, "GET", "/v1/instances", nil, nil, &raw); err != nil {
			return err
		}
		if g.json {
			return printJSON(g.stdout, raw)
		}
		var page struct {
			Self      string         `json:"self"`
			Instances []instanceView `json:"instances"`
		}
		if err := json.Unmarshal(raw, &page); err != nil {
			return fmt.Errorf("decoding answer: %w", err)
		}
		for _, in := range page.Instances {
			fmt.Fprintln(g.stdout, in.line(page.Self))
		}
		return nil
	default:
		return usagef("unknown instance command %q: use add, list or revoke", sub)
	}
	if g.json {
		return printJSON(g.stdout, raw)
	}
	var in instanceView
	if err := json.Unmarshal(raw, &in); err != nil {
		return fmt.Errorf("decoding answer: %w", err)
	}
	fmt.Fprintln(g.stdout, in.line(""))
	return nil
}
