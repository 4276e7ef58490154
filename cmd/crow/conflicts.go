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
	register("conflicts", "sync conflicts and their recovery (list|show ID|keep ID|restore ID|resolve-all)", runConflicts)
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
	Resolution        string          `json:"resolution"`
	ResolvedAt        string          `json:"resolved_at"`
	CreatedAt         string          `json:"created_at"`
}

// state is the record's resolution in words.
func (cv conflictView) state() string {
	if !cv.Resolved {
		return "unresolved"
	}
	if cv.Resolution != "" {
		return "resolved (" + cv.Resolution + ")"
	}
	return "resolved"
}

const conflictsUsage = "usage: crow conflicts list [--table T] [--unresolved] | show ID | keep ID | restore ID | resolve-all [--table T]"

func runConflicts(ctx context.Context, g *globals, args []string) error {
	if len(args) == 0 {
		return usagef(conflictsUsage)
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
			fmt.Fprintf(g.stdout, "%s  %-7s %-12s %-28s %s  kept %s@%d, lost %s@%d\n", cv.ID, cv.Op, cv.TableName, cv.RowID, cv.state(),
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
		fmt.Fprintf(g.stdout, "conflict %s (%s of %s/%s, created %s, %s)\n", cv.ID, cv.Op, cv.TableName, cv.RowID, cv.CreatedAt, cv.state())
		fmt.Fprintf(g.stdout, "kept (live)  from %s lamport %d:\n", cv.WinningInstanceID, cv.WinningLamportTS)
		if err := printJSON(g.stdout, cv.WinningData); err != nil {
			return err
		}
		fmt.Fprintf(g.stdout, "overwritten  from %s lamport %d:\n", cv.LosingInstanceID, cv.LosingLamportTS)
		return printJSON(g.stdout, cv.LosingData)
	case "keep", "restore":
		if len(pos) != 1 {
			return usagef("usage: crow conflicts %s ID", sub)
		}
		if err := c.do(ctx, "POST", "/v1/sync/conflicts/"+url.PathEscape(pos[0])+"/"+sub, nil, nil, &raw); err != nil {
			return err
		}
		if g.json {
			return printJSON(g.stdout, raw)
		}
		if sub == "keep" {
			fmt.Fprintf(g.stdout, "conflict %s resolved: the live version is kept\n", pos[0])
			return nil
		}
		var res struct {
			Row struct {
				Table   string `json:"table"`
				RowID   string `json:"row_id"`
				Deleted bool   `json:"deleted"`
			} `json:"row"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			return fmt.Errorf("decoding answer: %w", err)
		}
		what := "written back"
		if res.Row.Deleted {
			what = "deleted again (the overwritten version was a delete)"
		}
		fmt.Fprintf(g.stdout, "conflict %s resolved: %s/%s %s as a new edit; it replicates to every instance\n", pos[0], res.Row.Table, res.Row.RowID, what)
		return nil
	case "resolve-all":
		if len(pos) != 0 {
			return usagef("usage: crow conflicts resolve-all [--table T]")
		}
		body := map[string]string{}
		setIfMap(body, "table", *table)
		if err := c.do(ctx, "POST", "/v1/sync/conflicts/resolve-all", nil, body, &raw); err != nil {
			return err
		}
		if g.json {
			return printJSON(g.stdout, raw)
		}
		var res struct {
			Resolved int `json:"resolved"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			return fmt.Errorf("decoding answer: %w", err)
		}
		fmt.Fprintf(g.stdout, "%d conflicts resolved (live versions kept)\n", res.Resolved)
		return nil
	default:
		return usagef("unknown conflicts command %q: %s", sub, conflictsUsage)
	}
}

func setIfMap(m map[string]string, k, v string) {
	if v != "" {
		m[k] = v
	}
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
