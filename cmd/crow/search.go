package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/crow-sync/crow/app"
)

func init() {
	register("search", "one full-text search across memories, notes, sources, contacts, settings, blog posts and context (WORDS… [--tables T,T] [--limit N] [--json])", runSearch)
}

func runSearch(ctx context.Context, g *globals, args []string) error {
	fs := flag.NewFlagSet("search", flag.ContinueOnError)
	g.bind(fs)
	tables := fs.String("tables", "", "only these tables, comma-separated (memories, notes, sources, contacts, settings, blog_posts, crow_context)")
	limit := fs.Int("limit", 20, "maximum number of results, 1-1000")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("usage: crow search WORDS… [--tables notes,contacts] [--limit N] [--json]")
	}
	in := app.SearchAllIn{Query: strings.Join(pos, " "), Limit: *limit}
	for _, t := range strings.Split(*tables, ",") {
		if t = strings.TrimSpace(t); t != "" {
			in.Tables = append(in.Tables, t)
		}
	}
	c, err := newClient(g)
	if err != nil {
		return err
	}
	res, printed, err := call(ctx, g, c, app.SearchAll, in)
	if err != nil || printed {
		return err
	}
	if len(res.Results) == 0 {
		fmt.Fprintln(g.stdout, "no results")
		return nil
	}
	for _, h := range res.Results {
		fmt.Fprintf(g.stdout, "%-12s %s  %.3f  %s\n", h.Table, h.ID, h.Score, h.Title)
		if h.Snippet != "" && h.Snippet != h.Title {
			fmt.Fprintf(g.stdout, "    %s\n", h.Snippet)
		}
	}
	return nil
}
