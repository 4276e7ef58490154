package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/client"
	"github.com/crow-sync/crow/state"
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
	until := new(int64)
	*until = -1
	if sub == "apply" {
		fs.Int64Var(until, "until", -1, "consolidated_until_event: the highest memory number reviewed (default: keep the current mark)")
	}
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := checkArgs(fs.Name(), pos); err != nil {
		return err
	}
	c, err := newClient(g)
	if err != nil {
		return err
	}
	switch sub {
	case "projects":
		doc, printed, err := call(ctx, g, c, app.ProjectsList, app.NoInput{})
		if err != nil || printed {
			return err
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
		raw, err := client.DoRaw(ctx, c, app.ProjectStateGet, app.ProjectName{Project: pos[0]})
		if err != nil {
			return err
		}
		return printJSON(g.stdout, raw)
	case "apply":
		var data []byte
		if pos[1] == "-" {
			data, err = io.ReadAll(g.stdin)
		} else {
			data, err = os.ReadFile(pos[1])
		}
		if err != nil {
			return fmt.Errorf("reading ops: %w", err)
		}
		in := app.ConsolidateIn{Project: pos[0]}
		if json.Unmarshal(data, &in.Ops) != nil {
			var doc app.ConsolidateIn // the file holds the body: ops and consolidated_until_event
			if err := json.Unmarshal(data, &doc); err != nil || doc.Ops == nil {
				return fmt.Errorf("%s: want a JSON array of ops or an object with \"ops\"", pos[1])
			}
			in.Ops, in.ConsolidatedUntilEvent = doc.Ops, doc.ConsolidatedUntilEvent
		}
		if *until >= 0 {
			u := uint64(*until)
			in.ConsolidatedUntilEvent = &u
		}
		res, err := client.Do(ctx, c, app.ProjectConsolidate, in)
		if err != nil {
			return err
		}
		if g.json {
			raw, err := json.Marshal(res)
			if err != nil {
				return err
			}
			if err := printJSON(g.stdout, raw); err != nil {
				return err
			}
		} else {
			if res.Unchanged {
				fmt.Fprintf(g.stdout, "no op applied: %s stays at version %d\n", pos[0], res.Version)
			} else {
				fmt.Fprintf(g.stdout, "%s version %d (%d ops applied): %s\n", pos[0], res.Version, res.AppliedCount, res.StateHash)
			}
			for _, r := range res.Rejected {
				fmt.Fprintf(g.stdout, "  op %d rejected: %s\n", r.Index, r.Error)
			}
		}
		return rejectedOps(res.Rejected)
	default:
		return usagef("unknown state command %q: %s", sub, stateUsage)
	}
}

// rejectedOps is the error of an apply that rejected ops (exit 1): how many,
// and each one's index, op and reason.
func rejectedOps(rejected []state.Rejection) error {
	if len(rejected) == 0 {
		return nil
	}
	msg := fmt.Sprintf("%d of the ops were rejected", len(rejected))
	for _, r := range rejected {
		msg += fmt.Sprintf("; op %d %s: %s", r.Index, compactJSON(r.Op), r.Error)
	}
	return errors.New(msg)
}

// compactJSON is raw on one line.
func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}
