package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/client"
	"github.com/crow-sync/crow/doctor"
)

func init() {
	register("doctor", "check this instance and its peers; say what to fix (exit 1 on a problem)", runDoctor)
}

// runDoctor prints the findings of doctor.run (with --json the report as
// the daemon wrote it) and fails when one is a problem.
func runDoctor(ctx context.Context, g *globals, args []string) error {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	g.bind(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("crow doctor takes no arguments")
	}
	c, err := newClient(g)
	if err != nil {
		return err
	}
	raw, err := client.DoRaw(ctx, c, app.DoctorRun, app.NoInput{})
	if err != nil {
		return err
	}
	var rep app.DoctorReport
	if err := json.Unmarshal(raw, &rep); err != nil {
		return fmt.Errorf("decoding the doctor's report: %w", err)
	}
	if g.json {
		if err := printJSON(g.stdout, raw); err != nil {
			return err
		}
	} else {
		printDoctor(g, rep)
	}
	if rep.Status == doctor.Problem {
		return fmt.Errorf("doctor: %d problem(s), %d warning(s) on %s", rep.Problems, rep.Warnings, rep.Name)
	}
	return nil
}

func printDoctor(g *globals, rep app.DoctorReport) {
	w := g.stdout
	fmt.Fprintf(w, "crow doctor: %s (%s, %s)\n", rep.Name, rep.Role, rep.InstanceID)
	for _, f := range rep.Findings {
		mark := "OK  "
		switch f.Status {
		case doctor.Warn:
			mark = "WARN"
		case doctor.Problem:
			mark = "FAIL"
		}
		check := f.Check
		if f.Subject != "" {
			check += " " + f.Subject
		}
		fmt.Fprintf(w, "%s  %-22s %s\n", mark, check, f.Message)
		if f.Fix != "" {
			fmt.Fprintf(w, "      %-22s → %s\n", "", f.Fix)
		}
	}
	fmt.Fprintf(w, "%d problem(s), %d warning(s)\n", rep.Problems, rep.Warnings)
}
