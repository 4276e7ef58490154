package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
)

func init() {
	register("memory", "add, get, list and search memories (add|get|list|search|update|delete)", runMemory)
}

// memoryView is what the CLI prints of a memory.
type memoryView struct {
	ID         string   `json:"id"`
	Number     *int64   `json:"number"`
	Project    string   `json:"project"`
	Content    string   `json:"content"`
	Category   string   `json:"category"`
	Importance int      `json:"importance"`
	Tags       []string `json:"tags"`
	CreatedAt  string   `json:"created_at"`
	Score      float64  `json:"score,omitempty"`
}

func (m memoryView) line() string {
	num := "-"
	if m.Number != nil {
		num = "#" + strconv.FormatInt(*m.Number, 10)
	}
	content := strings.ReplaceAll(m.Content, "\n", " ")
	if len(content) > 80 {
		content = content[:77] + "..."
	}
	return fmt.Sprintf("%s  %-5s %-12s %-10s imp=%d  %s", m.ID, num, m.Project, m.Category, m.Importance, content)
}

func runMemory(ctx context.Context, g *globals, args []string) error {
	if len(args) == 0 {
		return usagef("usage: crow memory add|get|list|search|update|delete ...")
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("memory "+sub, flag.ContinueOnError)
	g.bind(fs)
	project := fs.String("project", "", "project name")
	category := fs.String("category", "", "category")
	importance := fs.Int("importance", 0, "importance 1-10")
	tags := fs.String("tags", "", "comma-separated tags")
	limit := fs.Int("limit", 0, "maximum results")
	cursor := fs.String("cursor", "", "pagination cursor from a previous list")
	content := fs.String("content", "", "new content (update)")
	instances := fs.String("instances", "", "search: local | all | comma-separated instance ids")
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
	case "add":
		if len(pos) != 1 {
			return usagef("usage: crow memory add CONTENT|- [--project P] [--category C] [--importance N] [--tags a,b]")
		}
		text := pos[0]
		if text == "-" {
			b, err := io.ReadAll(io.LimitReader(g.stdin, 1<<20))
			if err != nil {
				return fmt.Errorf("reading content from stdin: %w", err)
			}
			text = string(b)
		}
		body := map[string]any{"content": text, "source": "cli"}
		if *project != "" {
			body["project"] = *project
		}
		if *category != "" {
			body["category"] = *category
		}
		if *importance != 0 {
			body["importance"] = *importance
		}
		if *tags != "" {
			body["tags"] = splitList(*tags)
		}
		if err := c.do(ctx, "POST", "/v1/memory", nil, body, &raw); err != nil {
			return err
		}
		return printMemory(g, raw)
	case "get":
		if len(pos) != 1 {
			return usagef("usage: crow memory get ID")
		}
		if err := c.do(ctx, "GET", "/v1/memory/"+url.PathEscape(pos[0]), nil, nil, &raw); err != nil {
			return err
		}
		return printMemory(g, raw)
	case "update":
		if len(pos) != 1 {
			return usagef("usage: crow memory update ID [--content TEXT] [--project P] [--category C] [--importance N] [--tags a,b]")
		}
		body := map[string]any{}
		if *content != "" {
			body["content"] = *content
		}
		if *project != "" {
			body["project"] = *project
		}
		if *category != "" {
			body["category"] = *category
		}
		if *importance != 0 {
			body["importance"] = *importance
		}
		if *tags != "" {
			body["tags"] = splitList(*tags)
		}
		if len(body) == 0 {
			return usagef("nothing to update: give --content, --project, --category, --importance or --tags")
		}
		if err := c.do(ctx, "PATCH", "/v1/memory/"+url.PathEscape(pos[0]), nil, body, &raw); err != nil {
			return err
		}
		return printMemory(g, raw)
	case "delete":
		if len(pos) != 1 {
			return usagef("usage: crow memory delete ID")
		}
		if err := c.do(ctx, "DELETE", "/v1/memory/"+url.PathEscape(pos[0]), nil, nil, &raw); err != nil {
			return err
		}
		if g.json {
			return printJSON(g.stdout, raw)
		}
		fmt.Fprintln(g.stdout, "deleted", pos[0])
		return nil
	case "list", "search":
		q := url.Values{}
		path := "/v1/memories/list"
		if sub == "search" {
			if len(pos) != 1 {
				return usagef("usage: crow memory search QUERY [--project P] [--limit N] [--instances local|all|ID,ID]")
			}
			q.Set("q", pos[0])
			path = "/v1/memories/search"
			if *instances != "" {
				q.Set("instances", *instances)
			}
		} else if len(pos) != 0 {
			return usagef("usage: crow memory list [--project P] [--category C] [--limit N] [--cursor C]")
		}
		setIf(q, "project", *project)
		setIf(q, "category", *category)
		setIf(q, "tags", *tags)
		if *importance != 0 {
			q.Set("min_importance", strconv.Itoa(*importance))
		}
		if *limit != 0 {
			q.Set("limit", strconv.Itoa(*limit))
		}
		setIf(q, "cursor", *cursor)
		if err := c.do(ctx, "GET", path, q, nil, &raw); err != nil {
			return err
		}
		if g.json {
			return printJSON(g.stdout, raw)
		}
		var page struct {
			Memories   []memoryView `json:"memories"`
			Results    []memoryView `json:"results"`
			NextCursor string       `json:"next_cursor"`
		}
		if err := json.Unmarshal(raw, &page); err != nil {
			return fmt.Errorf("decoding answer: %w", err)
		}
		items := append(page.Memories, page.Results...)
		for _, m := range items {
			fmt.Fprintln(g.stdout, m.line())
		}
		if len(items) == 0 {
			fmt.Fprintln(g.stdout, "(none)")
		}
		if page.NextCursor != "" {
			fmt.Fprintln(g.stdout, "more: --cursor", page.NextCursor)
		}
		return nil
	default:
		return usagef("unknown memory command %q: use add, get, list, search, update or delete", sub)
	}
}

func printMemory(g *globals, raw []byte) error {
	if g.json {
		return printJSON(g.stdout, raw)
	}
	var m memoryView
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("decoding answer: %w", err)
	}
	fmt.Fprintln(g.stdout, m.line())
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

func setIf(q url.Values, k, v string) {
	if v != "" {
		q.Set(k, v)
	}
}
