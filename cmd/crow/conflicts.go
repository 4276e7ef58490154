package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/conflicts"
	"github.com/crow-sync/crow/store"
)

func init() {
	register("conflicts", "sync conflicts and their recovery (list|show ID|keep ID|restore ID|resolve-all)", runConflicts)
}

// conflictState is the record's resolution in words.
func conflictState(cv conflicts.Conflict) string {
	if !cv.Resolved {
		return "unresolved"
	}
	if cv.Resolution != "" {
		return "resolved (" + string(cv.Resolution) + ")"
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
	var table string
	unresolved := new(bool)
	switch sub {
	case "list":
		fs.StringVar(&table, "table", "", "only conflicts of this table (e.g. memories)")
		fs.BoolVar(unresolved, "unresolved", false, "only unresolved conflicts")
	case "resolve-all":
		fs.StringVar(&table, "table", "", "only conflicts of this table (default: every table)")
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
	case "list":
		in := app.ConflictListIn{Table: table}
		if *unresolved {
			in.Unresolved = unresolved
		}
		page, printed, err := call(ctx, g, c, app.ConflictsList, in)
		if err != nil || printed {
			return err
		}
		if len(page.Conflicts) == 0 {
			fmt.Fprintln(g.stdout, "(no conflicts)")
		}
		for _, cv := range page.Conflicts {
			fmt.Fprintf(g.stdout, "%s  %-7s %-12s %-28s %s  kept %s@%d, lost %s@%d\n", cv.ID, cv.Op, cv.TableName, cv.RowID, conflictState(cv),
				short(cv.WinningInstanceID), cv.WinningLamportTS, short(cv.LosingInstanceID), cv.LosingLamportTS)
		}
		return nil
	case "show":
		cv, printed, err := call(ctx, g, c, app.ConflictsGet, app.ConflictID{ID: pos[0]})
		if err != nil || printed {
			return err
		}
		fmt.Fprintf(g.stdout, "conflict %s (%s of %s/%s, created %s, %s)\n", cv.ID, cv.Op, cv.TableName, cv.RowID,
			cv.CreatedAt.Format(time.RFC3339Nano), conflictState(cv))
		fmt.Fprintf(g.stdout, "kept (live)  from %s lamport %d:\n", cv.WinningInstanceID, cv.WinningLamportTS)
		if err := printJSON(g.stdout, cv.WinningData); err != nil {
			return err
		}
		fmt.Fprintf(g.stdout, "overwritten  from %s lamport %d:\n", cv.LosingInstanceID, cv.LosingLamportTS)
		return printJSON(g.stdout, cv.LosingData)
	case "keep":
		if _, printed, err := call(ctx, g, c, app.ConflictsKeep, app.ConflictID{ID: pos[0]}); err != nil || printed {
			return err
		}
		fmt.Fprintf(g.stdout, "conflict %s resolved: the live version is kept\n", pos[0])
		return nil
	case "restore":
		res, printed, err := call(ctx, g, c, app.ConflictsRestore, app.ConflictID{ID: pos[0]})
		if err != nil || printed {
			return err
		}
		var row store.Row
		if res.Row != nil {
			row = *res.Row
		}
		what := "written back"
		if row.Deleted {
			what = "deleted again (the overwritten version was a delete)"
		}
		fmt.Fprintf(g.stdout, "conflict %s resolved: %s/%s %s as a new edit; it replicates to every instance\n", pos[0], row.Table, row.RowID, what)
		return nil
	case "resolve-all":
		res, printed, err := call(ctx, g, c, app.ConflictsResolveAll, app.ResolveAllIn{Table: table})
		if err != nil || printed {
			return err
		}
		fmt.Fprintf(g.stdout, "%d conflicts resolved (live versions kept)\n", res.Resolved)
		return nil
	default:
		return usagef("unknown conflicts command %q: %s", sub, conflictsUsage)
	}
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
