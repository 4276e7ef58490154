package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/schollz/progressbar/v3"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/client"
	"github.com/crow-sync/crow/home"
	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/memory/exchange"
)

// Pages and batches of crow memory export and import: small enough that a bar moves and a
// request stays under the gateway's body cap, large enough to be quick.
const (
	exportPage       = 500
	importBatch      = 200
	importBatchBytes = 192 << 10
)

// runMemoryExport is `crow memory export [--out FILE] [--project P] [--json]`: the crow JSONL
// of every live memory, on stdout or written to FILE (whole or not at all).
func runMemoryExport(ctx context.Context, g *globals, args []string) error {
	fs := flag.NewFlagSet("memory export", flag.ContinueOnError)
	g.bind(fs)
	out := fs.String("out", "", "write the export to FILE (default: stdout)")
	project := fs.String("project", "", "only memories of this project")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("usage: crow memory export [--out FILE] [--project P] [--json]")
	}
	c, err := newClient(g)
	if err != nil {
		return err
	}
	w, commit, abort := io.Writer(g.stdout), func() error { return nil }, func() {}
	if *out != "" {
		f, err := home.CreateAtomic(*out)
		if err != nil {
			return err
		}
		w, commit, abort = f, f.Commit, f.Abort
	}
	n, err := exportTo(ctx, g, c, w, *project)
	if err != nil {
		abort()
		return err
	}
	if err := commit(); err != nil {
		return err
	}
	// The summary goes to stdout when the export went to a file, else to stderr.
	sum := g.stderr
	if *out != "" {
		sum = g.stdout
	}
	if g.json {
		raw, _ := json.Marshal(map[string]any{"exported": n, "out": *out, "format": exchange.FormatName, "version": exchange.Version})
		return printJSON(sum, raw)
	}
	where := "stdout"
	if *out != "" {
		where = *out
	}
	fmt.Fprintf(sum, "exported %d memories to %s\n", n, where)
	return nil
}

// exportTo writes the header and every page of the export to w.
func exportTo(ctx context.Context, g *globals, c *client.Client, w io.Writer, project string) (int, error) {
	if err := exchange.WriteHeader(w); err != nil {
		return 0, err
	}
	in := app.MemoryExportIn{Project: project, Limit: exportPage}
	var bar *progressbar.ProgressBar
	defer func() {
		if bar != nil {
			_ = bar.Clear()
		}
	}()
	n := 0
	for {
		page, err := client.Do(ctx, c, app.MemoryExport, in)
		if err != nil {
			return n, err
		}
		if page.Total != nil {
			bar = newCountBar(g.stderr, int64(*page.Total), "exporting", "memories", g.json)
		}
		for _, r := range page.Memories {
			if err := exchange.WriteRecord(w, r); err != nil {
				return n, err
			}
		}
		n += len(page.Memories)
		if bar != nil {
			_ = bar.Add(len(page.Memories))
		}
		if page.NextCursor == "" {
			return n, nil
		}
		in.Cursor = page.NextCursor
	}
}

// runMemoryImport is `crow memory import FILE [--format F] [--project P] [--dry-run]`. The
// whole file is read and checked first (by the daemon, in dry-run batches): a bad line stops
// the import before anything is written. Then it imports batch by batch; a failure then
// (daemon gone, disk full) leaves the earlier batches imported, and running it again imports
// the rest (the imported ones are duplicates).
func runMemoryImport(ctx context.Context, g *globals, args []string) error {
	fs := flag.NewFlagSet("memory import", flag.ContinueOnError)
	g.bind(fs)
	format := fs.String("format", exchange.Auto, "file format: "+strings.Join(exchange.Formats, "|"))
	project := fs.String("project", "", "import every memory into this project")
	dryRun := fs.Bool("dry-run", false, "check the file and count what would be imported, write nothing")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("usage: crow memory import FILE [--format %s] [--project P] [--dry-run]", strings.Join(exchange.Formats, "|"))
	}
	file := pos[0]
	var r io.Reader = g.stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return fmt.Errorf("opening %s: %w", file, err)
		}
		defer f.Close()
		r = f
	}
	parsed, err := exchange.Parse(r, *format)
	if errors.Is(err, exchange.ErrUnknownFormat) {
		return usagef("%s: %v", file, err)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	c, err := newClient(g)
	if err != nil {
		return err
	}
	batches := exchange.Batches(parsed.Items, importBatch, importBatchBytes)
	in := app.MemoryImportIn{Project: *project, Source: memory.SourceCLI}
	pass := func(dry bool, what string) (exchange.Result, error) {
		var res exchange.Result
		bar := newCountBar(g.stderr, int64(len(parsed.Items)), what, "memories", g.json)
		defer func() {
			if bar != nil {
				_ = bar.Clear()
			}
		}()
		for _, b := range batches {
			in.Memories, in.DryRun = b, dry
			out, err := client.Do(ctx, c, app.MemoryImport, in)
			if err != nil && !strings.HasPrefix(err.Error(), "line ") { // not about one line: name the batch's
				return res, fmt.Errorf("%s, lines %d-%d: %w", file, b[0].Line, b[len(b)-1].Line, err)
			}
			if err != nil {
				return res, fmt.Errorf("%s: %w", file, err)
			}
			res.Add(out)
			if bar != nil {
				_ = bar.Add(len(b))
			}
		}
		res.DryRun = dry
		return res, nil
	}
	res, err := pass(true, "checking")
	if err == nil && !*dryRun {
		res, err = pass(false, "importing")
	}
	if err != nil {
		return err
	}
	if g.json {
		raw, err := json.Marshal(res)
		if err != nil {
			return err
		}
		return printJSON(g.stdout, raw)
	}
	verb := "imported"
	if res.DryRun {
		verb = "dry run: would import"
	}
	fmt.Fprintf(g.stdout, "%s %d memories from %s (%s), skipped %d as duplicates, refused %d (deleted or forgotten here)\n",
		verb, res.Imported, file, parsed.Format, res.Duplicates, res.Refused)
	return nil
}
