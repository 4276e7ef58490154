package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"strconv"
)

func init() {
	register("conflicts", "sync conflicts for the recovery view (list|show ID)", runConflicts)
}

type conflictView struct {
	ID                string          `json:"id"`
	TableName         string          `json:"table_name"`
	RowID             string          `json:"row_id"`
	Op                string          `json:"op"`
	WinningInstanceID string          `json:"winning_instance_id"`
	LosingInstanceID  string          `json:"losing_instance_id"`
	WinningLamportTS  uint64          `json:"winning_lamport_ts"`
	LosingLamportTS   uint64          `json:"losing_lamport_ts"`
	WinningData       json.RawMessage `json:"winning_data"`
	LosingData        json.RawMessage `json:"losing_data"`
	Resolved          bool            `json:"resolved"`
	CreatedAt         string          `json:"created_at"`
}

func runConflicts(ctx context.Context, g *globals, args []string) error {
	if len(args) == 0 {
		return usagef("usage: crow conflicts list [--table T] [--unresolved] | show ID")
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("conflicts "+sub, flag.ContinueOnError)
	g.bind(fs)
	table := fs.String("table", "", "only conflicts of this table")
	unresolved := fs.Bool("unresolved", false, "only unresolved conflicts")
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
	case "list":
		if len(pos) != 0 {
			return usagef("usage: crow conflicts list [--table T] [--unresolved]")
		}
		q := url.Values{}
		setIf(q, "table", *table)
		if *unresolved {
			q.Set("unresolved", strconv.FormatBool(true))
		}
		if err := c.do(ctx, "GET", "/v1/sync/conflicts", q, nil, &raw); err != nil {
			return err
		}
		if g.json {
			return printJSON(g.stdout, raw)
		}
		var page struct {
			Conflicts []conflictView `json:"conflicts"`
		}
		if err := json.Unmarshal(raw, &page); err != nil {
			return fmt.Errorf("decoding answer: %w", err)
		}
		if len(page.Conflicts) == 0 {
			fmt.Fprintln(g.stdout, "(no conflicts)")
		}
		for _, cv := range page.Conflicts {
			state := "unresolved"
			if cv.Resolved {
				state = "resolved"
			}
			fmt.Fprintf(g.stdout, "%s  %-7s %-12s %-28s %s  kept %s@%d, lost %s@%d\n", cv.ID, cv.Op, cv.TableName, cv.RowID, state,
				short(cv.WinningInstanceID), cv.WinningLamportTS, short(cv.LosingInstanceID), cv.LosingLamportTS)
		}
		return nil
	case "show":
		if len(pos) != 1 {
			return usagef("usage: crow conflicts show ID")
		}
		if err := c.do(ctx, "GET", "/v1/sync/conflicts/"+url.PathEscape(pos[0]), nil, nil, &raw); err != nil {
			return err
		}
		if g.json {
			return printJSON(g.stdout, raw)
		}
		var cv conflictView
		if err := json.Unmarshal(raw, &cv); err != nil {
			return fmt.Errorf("decoding answer: %w", err)
		}
		fmt.Fprintf(g.stdout, "conflict %s (%s of %s/%s, created %s, resolved=%v)\n", cv.ID, cv.Op, cv.TableName, cv.RowID, cv.CreatedAt, cv.Resolved)
		fmt.Fprintf(g.stdout, "kept (live)  from %s lamport %d:\n", cv.WinningInstanceID, cv.WinningLamportTS)
		if err := printJSON(g.stdout, cv.WinningData); err != nil {
			return err
		}
		fmt.Fprintf(g.stdout, "overwritten  from %s lamport %d:\n", cv.LosingInstanceID, cv.LosingLamportTS)
		return printJSON(g.stdout, cv.LosingData)
	default:
		return usagef("unknown conflicts command %q: use list or show", sub)
	}
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
