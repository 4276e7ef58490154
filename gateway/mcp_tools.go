package gateway

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/projects"
)

// Tool names (SPEC §8).
const (
	toolStore            = "crow_store_memory"
	toolSearch           = "crow_search_memories"
	toolGet              = "crow_get_memory"
	toolList             = "crow_list_memories"
	toolUpdate           = "crow_update_memory"
	toolDelete           = "crow_delete_memory"
	toolListInstances    = "crow_list_instances"
	toolRegisterInstance = "crow_register_instance"
	toolRevokeInstance   = "crow_revoke_instance"
	toolSyncStatus       = "crow_sync_status"
	toolListConflicts    = "crow_list_sync_conflicts"
	toolConflictKeep     = "crow_sync_conflicts_keep_current"
	toolConflictRestore  = "crow_sync_conflicts_restore_other"
	toolConflictsResolve = "crow_sync_conflicts_resolve_all"
	toolSummaries        = "crow_instance_summaries"
	toolGetState         = "get_project_state"
	toolUpdateState      = "update_project_state"
)

// Schema snippets shared by several tools.
var (
	propProject = func(what string) mcp.ToolOption {
		return mcp.WithString("project", mcp.MaxLength(memory.MaxProjectLen), mcp.Description(what))
	}
	propCategory = func(what string) mcp.ToolOption {
		return mcp.WithString("category", mcp.MaxLength(memory.MaxCategoryLen), mcp.Description(what))
	}
	propTagsFilter = mcp.WithArray("tags", mcp.WithStringItems(), mcp.MaxItems(memory.MaxTags),
		mcp.Description("Only memories carrying all of these tags."))
	propMinImportance = mcp.WithInteger("min_importance", mcp.Min(1), mcp.Max(10),
		mcp.Description("Only memories at least this important (1-10)."))
	propMemoryID = func(what string) mcp.ToolOption {
		return mcp.WithString("id", mcp.Required(), mcp.MinLength(1),
			mcp.Description(what+" Ids come from crow_store_memory, crow_search_memories and crow_list_memories."))
	}
)

// filterArgs are the list/search filters, as in GET /v1/memories/list.
type filterArgs struct {
	Project       string   `json:"project"`
	Category      string   `json:"category"`
	MinImportance *int     `json:"min_importance"`
	Tags          []string `json:"tags"`
	Limit         *int     `json:"limit"`
}

// filter checks the arguments like parseFilter and parseLimit do for REST.
func (a filterArgs) filter() (memory.Filter, int, error) {
	f := memory.Filter{Project: a.Project, Category: a.Category}
	if a.MinImportance != nil {
		if *a.MinImportance < 1 || *a.MinImportance > 10 {
			return f, 0, toolErrorf("min_importance must be a whole number from 1 to 10, got %d", *a.MinImportance)
		}
		f.MinImportance = *a.MinImportance
	}
	for _, t := range a.Tags {
		if t = strings.TrimSpace(t); t != "" {
			f.Tags = append(f.Tags, t)
		}
	}
	limit := 0
	if a.Limit != nil {
		if *a.Limit < 1 || *a.Limit > 1000 {
			return f, 0, toolErrorf("limit must be a whole number from 1 to 1000, got %d", *a.Limit)
		}
		limit = *a.Limit
	}
	return f, limit, nil
}

// mcpTools returns the tools of /mcp not yet in app's table.
func (s *Server) mcpTools() []mcpTool {
	ts := []mcpTool{
		{tool: mcp.NewTool(toolSearch,
			mcp.WithDescription("Full-text search of memories, best match first. Sees every memory stored before the call. "+
				"Returns {query, results: [memory fields + score]}, plus {instances, partial} when other instances are searched."),
			mcp.WithString("query", mcp.Required(), mcp.MinLength(1),
				mcp.Description("Words to search for in memory content.")),
			mcp.WithString("instances", mcp.DefaultString("local"),
				mcp.Description(`Which instances to search: "local" (default, this instance), "all" (every instance, `+
					`in parallel, each within a deadline), or a comma-separated list of instance ids (crow_list_instances). `+
					`A search of other instances also returns each instance's status (ok, timeout, error, skipped_offline) `+
					`and partial: true when some answer is missing; a memory found on several instances appears once, with found_on.`)),
			propProject("Only memories of this project."),
			propCategory("Only memories of this category."),
			propMinImportance,
			propTagsFilter,
			mcp.WithInteger("limit", mcp.Min(1), mcp.Max(1000), mcp.DefaultNumber(20),
				mcp.Description("Maximum number of results, 1-1000; default 20.")),
			mcp.WithOutputSchema[searchResponse](),
			mcp.WithReadOnlyHintAnnotation(true), mcp.WithOpenWorldHintAnnotation(false),
		), call: s.mcpSearch},

		{tool: mcp.NewTool(toolSummaries,
			mcp.WithDescription("What each instance (machine) holds, to pick which ones to search: per instance its "+
				"projects with memory counts, memory counts per category, the total, and its health (ok, down, unauthorized, "+
				"unknown). Other instances' summaries are cached (refreshed hourly, health every 5 minutes); this "+
				"instance's is computed now. Returns {instances: [summary]}, this instance first."),
			mcp.WithBoolean("self_only", mcp.DefaultBool(false),
				mcp.Description("Only this instance's own summary (what peers ask each other for).")),
			mcpOutputSchema[summariesResponse](),
			mcp.WithReadOnlyHintAnnotation(true), mcp.WithOpenWorldHintAnnotation(false),
		), call: s.mcpInstanceSummaries},

		{tool: mcp.NewTool(toolGetState,
			mcp.WithDescription("Read a project's newest Project State (schema 2): phase, current_focus, decisions, milestones, "+
				"risks and the other item lists, each item with its evidence_memory_ids and evidence_root, plus state_meta "+
				"{version, consolidated_until_event, previous_state_hash}, the state_hash, and anchor {status: pending|anchored, "+
				"onchain_anchor_id, tx_hash, block_number}. Returns the version object."),
			mcp.WithString("project", mcp.Required(), mcp.MinLength(1), mcp.Description("The project name, as in memories' project field.")),
			mcpOutputSchema[stateResponse](),
			mcp.WithReadOnlyHintAnnotation(true), mcp.WithOpenWorldHintAnnotation(false),
		), call: s.mcpGetProjectState},

		{tool: mcp.NewTool(toolUpdateState,
			mcp.WithDescription("Consolidate a project's state: the ops are validated against a closed grammar and applied by a "+
				"deterministic builder on top of the newest version, on the home instance (a satellite forwards the call). "+
				"Store the memories first and cite their numbers. Invalid ops come back in rejected with the reason; "+
				"no valid op means no new version. Returns {project, version, state_hash, unchanged, applied_count, applied, rejected}."),
			mcp.WithString("project", mcp.Required(), mcp.MinLength(1), mcp.Description("The project name.")),
			mcp.WithArray("ops", mcp.Required(), mcp.MinItems(1), mcp.MaxItems(100), mcp.Items(map[string]any{"type": "object"}),
				mcp.Description(stateOpsDescription())),
			mcp.WithInteger("consolidated_until_event", mcp.Min(0),
				mcp.Description("The highest memory number you reviewed; never lower than the current mark nor above the highest number. Omit to keep the current mark.")),
			mcpOutputSchema[projects.Response](),
			mcp.WithOpenWorldHintAnnotation(false),
		), call: s.mcpUpdateProjectState},
	}
	for i := range ts {
		ts[i].call = s.legacyPeerCheck(ts[i].tool.Name, ts[i].call)
	}
	return ts
}

func (s *Server) mcpSearch(ctx context.Context, raw json.RawMessage) (any, error) {
	var a struct {
		filterArgs
		Query     string `json:"query"`
		Instances string `json:"instances"`
	}
	if err := decodeArgs(raw, &a); err != nil {
		return nil, err
	}
	query := strings.TrimSpace(a.Query)
	if query == "" {
		return nil, toolErrorf("query is required: the words to search for")
	}
	if _, err := s.parseScope(a.Instances); err != nil {
		return nil, toolErrorf("%s", err.Error())
	}
	f, limit, err := a.filter()
	if err != nil {
		return nil, err
	}
	return s.search(ctx, a.Instances, query, f, limit)
}

// mcpOutputSchema is the output schema of T (app.OutputSchema) as a tool option.
func mcpOutputSchema[T any]() mcp.ToolOption {
	return func(t *mcp.Tool) {
		t.RawOutputSchema, _ = json.Marshal(app.OutputSchema(reflect.TypeFor[T]()))
	}
}
