package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/crow-sync/crow/anchor"
	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/client"
	"github.com/crow-sync/crow/memory"
)

func init() {
	register("memory", "add, get, list and search memories, prove one (add|get|list|search|update|delete|forget|proof|export|import)", runMemory)
}

// memoryLine is what the CLI prints of a memory.
func memoryLine(m memory.Memory) string {
	num := "-"
	if m.Number != nil {
		num = "#" + strconv.FormatUint(*m.Number, 10)
	}
	content := strings.ReplaceAll(m.Content, "\n", " ")
	if len(content) > 80 {
		content = content[:77] + "..."
	}
	line := fmt.Sprintf("%s  %-5s %-12s %-10s imp=%d  %s", m.ID, num, m.Project, m.Category, m.Importance, content)
	// A version read by number names its neighbours.
	if m.Supersedes != nil {
		line += fmt.Sprintf("  (supersedes #%d)", *m.Supersedes)
	}
	if m.SupersededBy != nil {
		line += fmt.Sprintf("  (superseded by #%d)", *m.SupersededBy)
	}
	if m.ForgottenAt != "" {
		line += "  (forgotten " + m.ForgottenAt + ")"
	}
	return line
}

// forgottenLine is what crow memory forget prints.
func forgottenLine(f memory.Forgotten) string {
	nums := make([]string, len(f.Numbers))
	for i, n := range f.Numbers {
		nums[i] = "#" + strconv.FormatUint(n, 10)
	}
	line := "forgot memory " + f.ID
	if len(nums) > 0 {
		line += " (" + strings.Join(nums, ", ") + ")"
	}
	return line + ": its content is being erased on every instance"
}

func runMemory(ctx context.Context, g *globals, args []string) error {
	if len(args) == 0 {
		return usagef("usage: crow memory add|get|list|search|update|delete|forget|proof|export|import ...")
	}
	sub, args := args[0], args[1:]
	switch sub { // their own flags (exchange.go)
	case "export":
		return runMemoryExport(ctx, g, args)
	case "import":
		return runMemoryImport(ctx, g, args)
	}
	fs := flag.NewFlagSet("memory "+sub, flag.ContinueOnError)
	g.bind(fs)
	var o memoryOpts
	o.bind(fs, sub)
	project, category, importance, tags := &o.project, &o.category, &o.importance, &o.tags
	limit, cursor, content, instances := &o.limit, &o.cursor, &o.content, &o.instances
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
	var filter app.MemoryFilter
	filter.Project, filter.Category = *project, *category
	if *tags != "" {
		filter.Tags = splitList(*tags)
	}
	if *importance != 0 {
		filter.MinImportance = importance
	}
	switch sub {
	case "add":
		text := pos[0]
		if text == "-" {
			// Read one byte past the daemon's limit: a longer text is
			// refused by the daemon with its own message, never cut here.
			b, err := io.ReadAll(io.LimitReader(g.stdin, memory.MaxContentBytes+1))
			if err != nil {
				return fmt.Errorf("reading content from stdin: %w", err)
			}
			text = string(b)
		}
		in := app.MemoryCreateIn{Content: text, Source: memory.SourceCLI, Project: *project, Category: *category, Tags: filter.Tags}
		if *importance != 0 {
			in.Importance = importance
		}
		m, printed, err := call(ctx, g, c, app.MemoryCreate, in)
		return printMemory(g, m, printed, err)
	case "get":
		m, printed, err := call(ctx, g, c, app.MemoryGet, app.MemoryID{ID: pos[0]})
		return printMemory(g, m, printed, err)
	case "update":
		in := app.MemoryUpdateIn{ID: pos[0]}
		if *content != "" {
			in.Content = content
		}
		if *project != "" {
			in.Project = project
		}
		if *category != "" {
			in.Category = category
		}
		if *importance != 0 {
			in.Importance = importance
		}
		if *tags != "" {
			in.Tags = &filter.Tags
		}
		if in.Validate() != nil {
			return usagef("nothing to update: give --content, --project, --category, --importance or --tags")
		}
		m, printed, err := call(ctx, g, c, app.MemoryUpdate, in)
		return printMemory(g, m, printed, err)
	case "delete":
		if _, printed, err := call(ctx, g, c, app.MemoryDelete, app.MemoryID{ID: pos[0]}); err != nil || printed {
			return err
		}
		fmt.Fprintln(g.stdout, "deleted", pos[0])
		return nil
	case "forget":
		f, printed, err := call(ctx, g, c, app.MemoryForget, app.MemoryForgetIn{ID: pos[0]})
		if err != nil || printed {
			return err
		}
		fmt.Fprintln(g.stdout, forgottenLine(f))
		return nil
	case "list":
		page, printed, err := call(ctx, g, c, app.MemoryList, app.MemoryListIn{MemoryFilter: filter, Limit: *limit, Cursor: *cursor})
		if err != nil || printed {
			return err
		}
		printMemories(g, page.Memories, page.NextCursor)
		return nil
	case "search":
		res, printed, err := call(ctx, g, c, app.MemorySearch, app.MemorySearchIn{Query: pos[0], Instances: *instances, MemoryFilter: filter, Limit: *limit})
		if err != nil || printed {
			return err
		}
		ms := make([]memory.Memory, len(res.Results))
		for i, r := range res.Results {
			ms[i] = r.Memory
		}
		printMemories(g, ms, "")
		return nil
	case "proof":
		return runMemoryProof(ctx, g, c, pos)
	default:
		return usagef("unknown memory command %q: use add, get, list, search, update, delete, forget, proof, export or import", sub)
	}
}

// memoryOpts are the flags of the memory subcommands; bind declares on fs
// only those of sub.
type memoryOpts struct {
	project, category, tags, cursor, content, instances string
	importance, limit                                   int
}

func (o *memoryOpts) bind(fs *flag.FlagSet, sub string) {
	switch sub {
	case "add":
		fs.StringVar(&o.project, "project", "", "project name (default: the daemon's, \"default\")")
		fs.StringVar(&o.category, "category", "", "category (default: the daemon's, \"general\")")
		fs.IntVar(&o.importance, "importance", 0, "importance 1-10 (default: the daemon's, 5)")
		fs.StringVar(&o.tags, "tags", "", "comma-separated tags")
	case "update":
		fs.StringVar(&o.project, "project", "", "new project name (default: unchanged)")
		fs.StringVar(&o.category, "category", "", "new category (default: unchanged)")
		fs.IntVar(&o.importance, "importance", 0, "new importance 1-10 (default: unchanged)")
		fs.StringVar(&o.tags, "tags", "", "new comma-separated tags (default: unchanged)")
	case "list", "search":
		fs.StringVar(&o.project, "project", "", "only memories of this project")
		fs.StringVar(&o.category, "category", "", "only memories of this category")
		fs.IntVar(&o.importance, "importance", 0, "only memories of at least this importance (1-10)")
		fs.StringVar(&o.tags, "tags", "", "only memories with these comma-separated tags")
		fs.IntVar(&o.limit, "limit", 0, "maximum results (0: the daemon's default)")
	}
	switch sub {
	case "update":
		fs.StringVar(&o.content, "content", "", "new content (default: unchanged)")
	case "list":
		fs.StringVar(&o.cursor, "cursor", "", "pagination cursor from a previous list")
	case "search":
		fs.StringVar(&o.instances, "instances", "", "where to search: local, all, or comma-separated instance ids (default: local)")
	}
}

// printMemories prints a list's or a search's memories, one a line.
func printMemories(g *globals, ms []memory.Memory, next string) {
	for _, m := range ms {
		fmt.Fprintln(g.stdout, memoryLine(m))
	}
	if len(ms) == 0 {
		fmt.Fprintln(g.stdout, "(none)")
	}
	if next != "" {
		fmt.Fprintln(g.stdout, "more: --cursor", next)
	}
}

// printMemory prints the memory an operation answered (unless --json
// printed it already).
func printMemory(g *globals, m memory.Memory, printed bool, err error) error {
	if err != nil || printed {
		return err
	}
	fmt.Fprintln(g.stdout, memoryLine(m))
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// runMemoryProof is `crow memory proof N [--json]`: the proof of memory
// number N, step by step. It exits non-zero on a mismatch.
func runMemoryProof(ctx context.Context, g *globals, c *client.Client, pos []string) error {
	if len(pos) != 1 {
		return usagef("usage: crow memory proof N [--json]")
	}
	n, err := strconv.ParseUint(strings.TrimPrefix(pos[0], "#"), 10, 64)
	if err != nil || n == 0 {
		return usagef("crow memory proof takes a memory number (1, 2, ...), got %q", pos[0])
	}
	p, printed, err := call(ctx, g, c, app.MemoryProof, app.MemoryNumber{Number: n})
	if err != nil {
		return err
	}
	if !printed {
		printProof(g, p)
	}
	if p.Status == anchor.StatusMismatch {
		return fmt.Errorf("memory #%d does NOT match: %s", n, strings.Join(p.Mismatch, ", "))
	}
	return nil
}

func printProof(g *globals, p app.MemoryProofDoc) {
	out := g.stdout
	yes := func(b bool) string {
		if b {
			return "matches"
		}
		return "DOES NOT MATCH"
	}
	fmt.Fprintf(out, "memory #%d (%s)\n", p.Number, p.MemoryID)
	e := p.Event
	fmt.Fprintln(out, "1. event record")
	if e.Record != "" {
		fmt.Fprintf(out, "   %s = %s(%q ‖ record)\n", e.Recomputed, "SHA3-256", e.Domain)
		fmt.Fprintf(out, "   record: %s\n", e.Record)
		fmt.Fprintf(out, "   recorded event hash %s: %s\n", e.EventHash, yes(e.Match))
	} else {
		fmt.Fprintf(out, "   recorded event hash %s (the record cannot be rebuilt here)\n", e.EventHash)
	}
	fmt.Fprintln(out, "2. anchor")
	if a := p.Anchor; a != nil {
		fmt.Fprintf(out, "   tx %s, block %d, chain %d, contract %s (%s)\n", a.TxHash, a.BlockNumber, a.ChainID, a.Contract, a.Encryption)
	} else {
		fmt.Fprintln(out, "   not anchored yet")
	}
	fmt.Fprintln(out, "3. on chain")
	switch o := p.Onchain; {
	case o == nil:
		fmt.Fprintln(out, "   not read here")
	case !o.Found:
		fmt.Fprintf(out, "   no MemoryAnchored event for this event hash on chain %d\n", o.ChainID)
	default:
		fmt.Fprintf(out, "   MemoryAnchored in tx %s, block %d: %d bytes of ciphertext, %d plaintext bytes, %s, importance %d\n",
			o.TxHash, o.BlockNumber, (len(o.Ciphertext)-2)/2, o.PlainLength, o.Category, o.Importance)
	}
	fmt.Fprintln(out, "4. content")
	switch ct := p.Content; {
	case ct == nil:
		fmt.Fprintln(out, "   not decrypted here")
	case ct.Key == anchor.KeyUsedShredded:
		fmt.Fprintf(out, "   the data key was destroyed (forgotten): the ciphertext is unreadable (the seed's key refuses it: %t)\n", ct.SeedKeyRefused)
	case !ct.Decrypted:
		fmt.Fprintln(out, "   no key held here decrypts it")
	default:
		fmt.Fprintf(out, "   decrypted with the %s: SHA-256 %s, content hash %s\n", strings.ReplaceAll(ct.Key, "_", " "), ct.Hash, yes(ct.Match))
		fmt.Fprintf(out, "   %q\n", ct.Content)
	}
	for _, n := range p.Notes {
		fmt.Fprintln(out, "note:", n)
	}
	fmt.Fprintln(out, "status:", p.Status)
}
