package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
)

func init() {
	register("state", "a project's consolidated state (show NAME | apply NAME FILE|- [--until N] | projects)", runState)
}

const stateUsage = "usage: crow state show NAME | apply NAME FILE|- [--until N] | projects"

func runState(ctx context.Context, g *globals, args []string) error {
	if len(args) == 0 {
		return usagef(stateUsage)
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("state "+sub, flag.ContinueOnError)
	g.bind(fs)
	until := fs.Int64("until", -1, "consolidated_until_event: the highest memory number reviewed (default: keep the current mark)")
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
	case "projects":
		if len(pos) != 0 {
			return usagef("usage: crow state projects")
		}
		if err := c.do(ctx, "GET", "/v1/projects", nil, nil, &raw); err != nil {
			return err
		}
		if g.json {
			return printJSON(g.stdout, raw)
		}
		var doc struct {
			Projects []struct {
				Name         string `json:"name"`
				Memories     int    `json:"memories"`
				StateVersion uint64 `json:"state_version"`
				StateHash    string `json:"state_hash"`
			} `json:"projects"`
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			return fmt.Errorf("decoding answer: %w", err)
		}
		for _, p := range doc.Projects {
			v := "no state yet"
			if p.StateVersion > 0 {
				v = fmt.Sprintf("state v%d %s", p.StateVersion, p.StateHash)
			}
			fmt.Fprintf(g.stdout, "%-24s memories=%-6d %s\n", p.Name, p.Memories, v)
		}
		return nil
	case "show":
		if len(pos) != 1 {
			return usagef("usage: crow state show NAME")
		}
		if err := c.do(ctx, "GET", "/v1/project/"+url.PathEscape(pos[0])+"/state", nil, nil, &raw); err != nil {
			return err
		}
		return printJSON(g.stdout, raw)
	case "apply":
		if len(pos) != 2 {
			return usagef("usage: crow state apply NAME FILE|- [--until N]  (FILE: a JSON array of ops, or {\"ops\": [...]})")
		}
		var in []byte
		if pos[1] == "-" {
			in, err = io.ReadAll(g.stdin)
		} else {
			in, err = os.ReadFile(pos[1])
		}
		if err != nil {
			return fmt.Errorf("reading ops: %w", err)
		}
		body := map[string]any{}
		var ops []json.RawMessage
		if json.Unmarshal(in, &ops) != nil {
			var doc struct {
				Ops   []json.RawMessage `json:"ops"`
				Until *uint64           `json:"consolidated_until_event"`
			}
			if err := json.Unmarshal(in, &doc); err != nil || doc.Ops == nil {
				return fmt.Errorf("%s: want a JSON array of ops or an object with \"ops\"", pos[1])
			}
			ops = doc.Ops
			if doc.Until != nil {
				body["consolidated_until_event"] = *doc.Until
			}
		}
		body["ops"] = ops
		if *until >= 0 {
			body["consolidated_until_event"] = *until
		}
		if err := c.do(ctx, "POST", "/v1/project/"+url.PathEscape(pos[0])+"/state/ops", nil, body, &raw); err != nil {
			return err
		}
		if g.json {
			return printJSON(g.stdout, raw)
		}
		var res struct {
			Version      uint64 `json:"version"`
			StateHash    string `json:"state_hash"`
			Unchanged    bool   `json:"unchanged"`
			AppliedCount int    `json:"applied_count"`
			Rejected     []struct {
				Index int    `json:"index"`
				Error string `json:"error"`
			} `json:"rejected"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			return fmt.Errorf("decoding answer: %w", err)
		}
		if res.Unchanged {
			fmt.Fprintf(g.stdout, "no op applied: %s stays at version %d\n", pos[0], res.Version)
		} else {
			fmt.Fprintf(g.stdout, "%s version %d (%d ops applied): %s\n", pos[0], res.Version, res.AppliedCount, res.StateHash)
		}
		for _, r := range res.Rejected {
			fmt.Fprintf(g.stdout, "  op %d rejected: %s\n", r.Index, r.Error)
		}
		if len(res.Rejected) > 0 {
			return fmt.Errorf("%d of the ops were rejected", len(res.Rejected))
		}
		return nil
	default:
		return usagef("unknown state command %q: %s", sub, stateUsage)
	}
}
