package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/schollz/progressbar/v3"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/audit"
	"github.com/crow-sync/crow/client"
)

func init() {
	register("audit", "recompute every stored hash and check it against the chain ([PROJECT] [--page N] [--json])", runAudit)
}

// auditPage is the default page: items the daemon audits per request, so the
// bar moves and no request runs long on a large store.
const auditPage = 5000

func runAudit(ctx context.Context, g *globals, args []string) error {
	fs := flag.NewFlagSet("audit", flag.ContinueOnError)
	g.bind(fs)
	page := fs.Int("page", auditPage, "items (memory and state versions) the daemon audits per request")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 || *page < 1 {
		return usagef("usage: crow audit [PROJECT] [--page N] [--json]")
	}
	in := app.AuditIn{Limit: *page}
	if len(pos) == 1 {
		in.Project = pos[0]
	}
	c, err := newClient(g)
	if err != nil {
		return err
	}
	var rep app.AuditReport
	var bar *progressbar.ProgressBar
	for {
		out, err := client.Do(ctx, c, app.AuditRun, in)
		if err != nil {
			if bar != nil {
				_ = bar.Exit()
			}
			return err
		}
		if in.Cursor == "" {
			bar = newCountBar(g.stderr, int64(out.Total), "auditing", "items", g.json)
		}
		rep.Add(out)
		if bar != nil {
			_ = bar.Add64(int64(out.Done))
		}
		if out.Next == "" {
			break
		}
		in.Cursor = out.Next
	}
	if bar != nil {
		_ = bar.Finish()
		_ = bar.Clear()
	}
	if g.json {
		raw, err := json.Marshal(rep)
		if err != nil {
			return err
		}
		if err := printJSON(g.stdout, raw); err != nil {
			return err
		}
	} else {
		printAudit(g.stdout, rep)
	}
	if !rep.OK {
		return fmt.Errorf("audit failed: %d mismatches", rep.MismatchCount())
	}
	return nil
}

func printAudit(w io.Writer, r app.AuditReport) {
	what := "every project"
	if r.Project != "" {
		what = "project " + r.Project
	}
	chain := "home's anchor records only (no chain read here)"
	if r.Chain != "" {
		chain = "the " + r.Chain + " chain"
	}
	fmt.Fprintf(w, "audited %s: %d items from %s, anchors against %s\n", what, r.Done, r.Source, chain)
	fmt.Fprintf(w, "%-14s %9s %9s %10s %9s\n", "check", "checked", "ok", "mismatches", "skipped")
	for _, c := range r.Checks {
		fmt.Fprintf(w, "%-14s %9d %9d %10d %9d\n", c.Name, c.Checked, c.OK, c.Mismatches, c.Skipped)
	}
	if len(r.Skipped) > 0 {
		fmt.Fprintf(w, "skipped (not failures): %s; --json lists them\n", skipReasons(r))
	}
	for _, m := range r.Mismatches {
		fmt.Fprintln(w, "MISMATCH", m.String())
	}
	if r.MismatchesOmitted > 0 {
		fmt.Fprintf(w, "... and %d more mismatches\n", r.MismatchesOmitted)
	}
	if r.OK {
		fmt.Fprintln(w, "ok: every recomputed hash matches")
	}
}

// skipReasons counts the listed skips by reason, in the package's order.
func skipReasons(r app.AuditReport) string {
	n := map[string]int{}
	for _, s := range r.Skipped {
		n[s.Reason]++
	}
	out := ""
	for _, reason := range []string{audit.SkipPending, audit.SkipUnverified, audit.SkipForgotten, audit.SkipEdited, audit.SkipUnnumbered} {
		if n[reason] > 0 {
			if out != "" {
				out += ", "
			}
			out += fmt.Sprintf("%d %s", n[reason], reason)
		}
	}
	if r.SkippedOmitted > 0 {
		out += fmt.Sprintf(" (first %d listed of %d)", len(r.Skipped), uint64(len(r.Skipped))+r.SkippedOmitted)
	}
	return out
}
