package app

import (
	"context"
	"errors"

	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/memory/exchange"
)

// The export and import of memories as files (docs/EXCHANGE.md; the formats are package
// memory/exchange's, the import's rules memory.Service.Import's).

// MemoryExportIn is the input of memory.export.
type MemoryExportIn struct {
	Project string `json:"project,omitempty" in:"query" maxlen:"128" desc:"Only memories of this project."`
	Limit   int    `json:"limit,omitempty" in:"query" min:"1" max:"1000" desc:"Memories in this page, 1-1000 (default 500)."`
	Cursor  string `json:"cursor,omitempty" in:"query" desc:"The next_cursor of the previous page; omit for the first page (which alone carries total)."`
}

// ExportPage is a page of an export, oldest memory first.
type ExportPage struct {
	// Format and Version are the crow format's header (exchange.Header).
	Format   string            `json:"format"`
	Version  int               `json:"version"`
	Memories []exchange.Record `json:"memories"`
	// NextCursor fetches the next page; "" when this is the last.
	NextCursor string `json:"next_cursor"`
	// Total is how many memories the export holds (first page only), for a progress bar.
	Total *int `json:"total,omitempty"`
}

// MemoryImportIn is the input of memory.import.
type MemoryImportIn struct {
	Memories []exchange.Item `json:"memories" required:"true" maxitems:"1000" desc:"The memories of one batch, each {line, memory} with memory a crow export line (exchange.Record); line is reported in errors."`
	Project  string          `json:"project,omitempty" maxlen:"128" desc:"Import every memory into this project instead of its own."`
	DryRun   bool            `json:"dry_run,omitempty" desc:"Validate and count, write nothing."`
	Source   string          `json:"source,omitempty" maxlen:"64" desc:"The source of memories that name none (default \"api\"; the CLI sends \"cli\")."`
}

var (
	MemoryExport = define(&Def[MemoryExportIn, ExportPage]{
		Spec: Spec{Name: "memory.export", Method: "GET", Path: "/v1/memories/export",
			Tag: "memories", Summary: "Export memories as crow JSONL records, oldest first, a page at a time",
			Description: "Every field of each live memory (number and event_hash where home has numbered it), oldest first; " +
				"pass next_cursor as cursor for the next page. The first page carries total. A client writes the header " +
				"{format, version} and then one record a line: the file crow memory import reads.",
			ReadOnly: true, Idempotent: true},
		Impl: (*App).memoryExport,
	})
	MemoryImport = define(&Def[MemoryImportIn, exchange.Result]{
		Spec: Spec{Name: "memory.import", Method: "POST", Path: "/v1/memories/import",
			Tag: "memories", Summary: "Import a batch of memories (crow export records), all or none",
			Description: "Validates every record of the batch first: one bad record (named by its line) refuses the batch and " +
				"writes nothing. Memories keep their id and times; an id live here already is a duplicate and left as it is, " +
				"an id deleted or forgotten here is refused (never revived); the rest are written in one transaction. " +
				"Returns the counts and the outcome of each line.",
			Idempotent: true},
		Impl: (*App).memoryImport,
	})
)

func (a *App) memoryExport(ctx context.Context, in MemoryExportIn) (ExportPage, error) {
	svc, err := a.memories()
	if err != nil {
		return ExportPage{}, err
	}
	if in.Limit == 0 {
		in.Limit = 500
	}
	page, err := svc.List(ctx, memory.ListOptions{Filter: memory.Filter{Project: in.Project}, Cursor: in.Cursor, Limit: in.Limit, Oldest: true})
	if err != nil {
		return ExportPage{}, err
	}
	out := ExportPage{Format: exchange.FormatName, Version: exchange.Version, NextCursor: page.NextCursor,
		Memories: make([]exchange.Record, len(page.Memories))}
	for i, m := range page.Memories {
		out.Memories[i] = exchange.FromMemory(m)
	}
	if in.Cursor == "" {
		c, err := svc.Count(ctx)
		if err != nil {
			return ExportPage{}, err
		}
		total := c.Total
		if in.Project != "" {
			total = c.Projects[in.Project]
		}
		out.Total = &total
	}
	return out, nil
}

func (a *App) memoryImport(ctx context.Context, in MemoryImportIn) (exchange.Result, error) {
	svc, err := a.memories()
	if err != nil {
		return exchange.Result{}, err
	}
	for i := range in.Memories {
		if in.Memories[i].Line == 0 {
			in.Memories[i].Line = i + 1 // no line given: its place in the batch
		}
	}
	src := in.Source
	if src == "" {
		src = memory.SourceAPI
	}
	recs, err := exchange.Import(in.Memories, in.Project, src)
	if err != nil {
		return exchange.Result{}, Wrap(KindInvalid, err, err.Error()+": nothing of this batch was written")
	}
	outs, err := svc.Import(ctx, recs, in.DryRun)
	var ie *memory.ImportError
	if errors.As(err, &ie) {
		return exchange.Result{}, Wrap(KindInvalid, err, (&exchange.LineError{Line: in.Memories[ie.Index].Line, Msg: ie.Err.Error()}).Error()+
			": nothing of this batch was written")
	}
	if err != nil {
		return exchange.Result{}, err
	}
	res := exchange.Outcomes(in.Memories, outs)
	res.DryRun = in.DryRun
	return res, nil
}
