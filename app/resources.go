package app

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// The MCP resources (the gateway serves them on /mcp, so `crow mcp` has them
// too). Each is read by running an operation of the table, so a resource
// answers exactly what its tool answers: nothing here reads a store.

// Resource is one MCP resource (URI) or resource template (URI with {vars}).
type Resource struct {
	// URI is the resource's URI, or a template's RFC 6570 URI template.
	URI string
	// Template says URI is a template; Vars are its variables, in order.
	Template bool
	Vars     []string
	// Name is the MCP name; Title and Description say what it holds.
	Name, Title, Description string
	// Op is the operation whose answer the resource is (its tool names it
	// in the description).
	Op Op
	// Read answers the resource; vars are the template's variables.
	Read func(a *App, ctx context.Context, vars map[string]string) (any, error)
	// List lists the concrete resources a template stands for now (bounded;
	// nil: none listed).
	List func(a *App, ctx context.Context) ([]ResourceRef, error)
}

// ResourceRef is a concrete resource resources/list shows.
type ResourceRef struct {
	URI, Name, Title, Description string
}

// ResourceMIMEType is the MIME type of every resource's contents: the
// operation's answer as JSON text.
const ResourceMIMEType = "application/json"

// MaxListedMemories bounds the memories resources/list names (the newest
// numbered ones); any other is read by number through the template.
const MaxListedMemories = 20

// MaxListedProjects bounds the projects resources/list names.
const MaxListedProjects = 100

var resources = []*Resource{
	{
		URI: "crow://instances", Name: "instances", Title: "Instances",
		Description: "The instances (machines) of this crow: id, name, role, status, last_seen, and which one is this " +
			"instance (self); the answer of crow_list_instances.",
		Op: InstancesList,
		Read: func(a *App, ctx context.Context, _ map[string]string) (any, error) {
			return Call(ctx, a, InstancesList, NoInput{})
		},
	},
	{
		URI: "crow://memory/{number}", Template: true, Vars: []string{"number"},
		Name: "memory", Title: "Memory by number",
		Description: "One numbered memory version (#N, as cited in evidence_memory_ids): project, content, category, " +
			"importance, tags, event_hash, supersedes/superseded_by; the answer of crow_get_memory with the number as id.",
		Op: MemoryGet,
		Read: func(a *App, ctx context.Context, v map[string]string) (any, error) {
			n := v["number"]
			if _, err := strconv.ParseUint(n, 10, 64); err != nil || n == "" || strings.TrimLeft(n, "0") == "" {
				return nil, Errorf(KindNotFound, "crow://memory/%s: a memory resource is named by its number (decimal digits from 1), e.g. crow://memory/12", n)
			}
			return Call(ctx, a, MemoryGet, MemoryID{ID: n})
		},
		List: func(a *App, ctx context.Context) ([]ResourceRef, error) {
			page, err := Call(ctx, a, MemoryList, MemoryListIn{Limit: MaxListedMemories})
			if err != nil {
				return nil, err
			}
			var out []ResourceRef
			for _, m := range page.Memories {
				if m.Number == nil {
					continue // not numbered by home yet
				}
				n := strconv.FormatUint(*m.Number, 10)
				out = append(out, ResourceRef{URI: "crow://memory/" + n, Name: "memory #" + n,
					Title:       fmt.Sprintf("#%s (%s): %s", n, m.Project, short(m.Content, 60)),
					Description: "Memory #" + n + " of project " + m.Project})
			}
			return out, nil
		},
	},
	{
		URI: "crow://project/{name}/state", Template: true, Vars: []string{"name"},
		Name: "project_state", Title: "Project state",
		Description: "A project's newest Project State version (phase, focus, decisions, milestones, risks... each item " +
			"with its evidence memory numbers), its state_hash, anchor and stale_evidence; the answer of get_project_state.",
		Op: ProjectStateGet,
		Read: func(a *App, ctx context.Context, v map[string]string) (any, error) {
			name, err := url.PathUnescape(v["name"])
			if err != nil {
				return nil, Invalidf("crow://project/%s/state: the project name is not a valid URI segment", v["name"])
			}
			return Call(ctx, a, ProjectStateGet, ProjectName{Project: name})
		},
		List: func(a *App, ctx context.Context) ([]ResourceRef, error) {
			list, err := Call(ctx, a, ProjectsList, NoInput{})
			if err != nil {
				return nil, err
			}
			var out []ResourceRef
			for _, p := range list.Projects {
				if p.StateVersion == 0 || len(out) == MaxListedProjects {
					continue // no state yet: nothing to read
				}
				out = append(out, ResourceRef{URI: "crow://project/" + url.PathEscape(p.Name) + "/state",
					Name: "state of " + p.Name, Title: fmt.Sprintf("Project %s, state v%d", p.Name, p.StateVersion),
					Description: fmt.Sprintf("The newest state (version %d) of project %s", p.StateVersion, p.Name)})
			}
			return out, nil
		},
	},
}

// Resources returns the MCP resources and templates.
func Resources() []*Resource { return resources }

// ListResources returns the concrete resources to list now: every
// non-template resource, then each template's current instances (bounded).
// A template whose listing fails (its part is not configured here) is left
// out.
func (a *App) ListResources(ctx context.Context) []ResourceRef {
	var out []ResourceRef
	for _, r := range resources {
		if !r.Template {
			out = append(out, ResourceRef{URI: r.URI, Name: r.Name, Title: r.Title, Description: r.Description})
			continue
		}
		if r.List == nil {
			continue
		}
		refs, err := r.List(a, ctx)
		if err != nil {
			a.log.Debug("listing MCP resources", "template", r.URI, "err", err)
			continue
		}
		out = append(out, refs...)
	}
	return out
}

// short cuts s to n runes on one line.
func short(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
