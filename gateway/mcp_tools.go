package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/crow-sync/crow/conflicts"
	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/projects"
	"github.com/crow-sync/crow/registry"
	"github.com/crow-sync/crow/store"
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

// memoryNotFound is the tool error of a missing memory id.
func memoryNotFound(id string) error {
	return toolErrorf("no memory with id %q: it does not exist or was deleted; crow_search_memories and crow_list_memories return the ids of live memories", id)
}

// mcpTools returns the local tools of /mcp.
func (s *Server) mcpTools() []mcpTool {
	return []mcpTool{
		{tool: mcp.NewTool(toolStore,
			toolTitle("Store a memory"), additiveTool(),
			mcp.WithDescription("Store a new memory: a fact, decision, preference or note worth keeping across sessions "+
				"and machines. It is saved durably on this instance and replicates to the user's other instances. "+
				"Returns the stored memory (its id, content_hash, defaults filled in)."),
			mcp.WithString("content", mcp.Required(), mcp.MinLength(1), mcp.MaxLength(memory.MaxContentBytes),
				mcp.Description("The memory text, self-contained (at most 64 KiB of UTF-8).")),
			propProject(`Project the memory belongs to (default "default").`),
			propCategory(`A short category such as "decision", "preference", "fact" (default "general").`),
			mcp.WithInteger("importance", mcp.Min(1), mcp.Max(10), mcp.DefaultNumber(memory.DefaultImportance),
				mcp.Description("How important it is, 1 (trivia) to 10 (critical); default 5.")),
			mcp.WithArray("tags", mcp.WithStringItems(mcp.MinLength(1), mcp.MaxLength(memory.MaxTagLen)), mcp.MaxItems(memory.MaxTags),
				mcp.Description("Up to 32 tags, each 1-64 characters without leading or trailing spaces; duplicates are dropped.")),
			mcp.WithOutputSchema[memory.Memory](),
			mcp.WithOpenWorldHintAnnotation(false),
		), call: s.mcpStore},

		{tool: mcp.NewTool(toolSearch,
			toolTitle("Search memories"), readOnlyTool(),
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
			mcp.WithOpenWorldHintAnnotation(false),
		), call: s.mcpSearch},

		{tool: mcp.NewTool(toolGet,
			toolTitle("Read a memory"), readOnlyTool(),
			mcp.WithDescription("Read one memory by id. Returns the memory, with its number and event_hash once the home instance has numbered it."),
			propMemoryID("Id of the memory."),
			mcp.WithOutputSchema[memory.Memory](),
			mcp.WithOpenWorldHintAnnotation(false),
		), call: s.mcpGet},

		{tool: mcp.NewTool(toolList,
			toolTitle("List memories"), readOnlyTool(),
			mcp.WithDescription("List memories by creation time (newest first by default), optionally filtered. "+
				"Returns {memories, next_cursor}; pass next_cursor as cursor to get the next page (\"\" means no more)."),
			propProject("Only memories of this project."),
			propCategory("Only memories of this category."),
			propMinImportance,
			propTagsFilter,
			mcp.WithInteger("limit", mcp.Min(1), mcp.Max(1000), mcp.DefaultNumber(50),
				mcp.Description("Page size, 1-1000; default 50.")),
			mcp.WithString("cursor", mcp.Description("The next_cursor of the previous page; omit for the first page.")),
			mcp.WithString("order", mcp.Enum("newest", "oldest"), mcp.DefaultString("newest"),
				mcp.Description(`"newest" (default) or "oldest" first.`)),
			mcp.WithOutputSchema[memory.Page](),
			mcp.WithOpenWorldHintAnnotation(false),
		), call: s.mcpList},

		{tool: mcp.NewTool(toolUpdate,
			toolTitle("Update a memory"),
			mcp.WithDescription("Change fields of an existing memory; omitted fields stay as they are (give at least one). "+
				"tags replaces the whole tag list. Returns the memory as stored."),
			propMemoryID("Id of the memory to change."),
			mcp.WithString("content", mcp.MinLength(1), mcp.MaxLength(memory.MaxContentBytes), mcp.Description("New text.")),
			propProject("New project."),
			propCategory("New category."),
			mcp.WithInteger("importance", mcp.Min(1), mcp.Max(10), mcp.Description("New importance, 1-10.")),
			mcp.WithArray("tags", mcp.WithStringItems(mcp.MinLength(1), mcp.MaxLength(memory.MaxTagLen)), mcp.MaxItems(memory.MaxTags),
				mcp.Description("New tag list (replaces the old one; [] removes all tags).")),
			mcp.WithOutputSchema[memory.Memory](),
			mcp.WithIdempotentHintAnnotation(true), mcp.WithOpenWorldHintAnnotation(false),
		), call: s.mcpUpdate},

		{tool: mcp.NewTool(toolDelete,
			toolTitle("Delete a memory"),
			mcp.WithDescription("Delete a memory by id, on every instance (the deletion replicates). Returns {id, deleted: true}."),
			propMemoryID("Id of the memory to delete."),
			mcp.WithOutputSchema[deleteResponse](),
			mcp.WithDestructiveHintAnnotation(true), mcp.WithOpenWorldHintAnnotation(false),
		), call: s.mcpDelete},

		{tool: mcp.NewTool(toolListInstances,
			toolTitle("List instances"), readOnlyTool(),
			mcp.WithDescription("List the user's crow instances (machines): id, name, role (home or satellite), gateway_url, "+
				"status (online, syncing, offline, unknown, revoked), last_seen. Returns {self: this instance's id, instances}."),
			mcp.WithOutputSchema[instancesResponse](),
			mcp.WithOpenWorldHintAnnotation(false),
		), call: s.mcpListInstances},

		{tool: mcp.NewTool(toolSummaries,
			toolTitle("Instance summaries"), readOnlyTool(),
			mcp.WithDescription("What each instance (machine) holds, to pick which ones to search: per instance its "+
				"projects with memory counts, memory counts per category, the total, and its health (ok, down, unauthorized, "+
				"unknown). Other instances' summaries are cached (refreshed hourly, health every 5 minutes); this "+
				"instance's is computed now. Returns {instances: [summary]}, this instance first."),
			mcp.WithBoolean("self_only", mcp.DefaultBool(false),
				mcp.Description("Only this instance's own summary (what peers ask each other for).")),
			mcpOutputSchema[summariesResponse](),
			mcp.WithOpenWorldHintAnnotation(false),
		), call: s.mcpInstanceSummaries},

		{tool: mcp.NewTool(toolGetState,
			toolTitle("Read project state"), readOnlyTool(),
			mcp.WithDescription("Read a project's newest Project State (schema 2): phase, current_focus, decisions, milestones, "+
				"risks and the other item lists, each item with its evidence_memory_ids and evidence_root, plus state_meta "+
				"{version, consolidated_until_event, previous_state_hash}, the state_hash, and anchor {status: pending|anchored, "+
				"onchain_anchor_id, tx_hash, block_number}. Returns the version object."),
			mcp.WithString("project", mcp.Required(), mcp.MinLength(1), mcp.Description("The project name, as in memories' project field.")),
			mcpOutputSchema[stateResponse](),
			mcp.WithOpenWorldHintAnnotation(false),
		), call: s.mcpGetProjectState},

		{tool: mcp.NewTool(toolUpdateState,
			toolTitle("Consolidate project state"), additiveTool(),
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

		{tool: mcp.NewTool(toolRegisterInstance,
			toolTitle("Register an instance"), additiveTool(),
			mcp.WithDescription("Register another instance of the same user by its gateway URL: its /health is checked and it must "+
				"prove, by signing a challenge, that it derives from the same master seed. It is then asked to register "+
				"this instance back. Returns the instance, plus a warning if the peer could not register this one back."),
			mcp.WithString("gateway_url", mcp.Required(), mcp.MinLength(1),
				mcp.Description("The peer's gateway URL, e.g. http://100.64.0.2:3001 (its crow serve --listen address).")),
			mcp.WithOutputSchema[registerResponse](),
			mcp.WithIdempotentHintAnnotation(true), mcp.WithOpenWorldHintAnnotation(true),
		), call: s.mcpRegisterInstance},

		{tool: mcp.NewTool(toolRevokeInstance,
			toolTitle("Revoke an instance"),
			mcp.WithDescription("Revoke an instance (a lost or stolen machine): it is refused by replication and federation "+
				"everywhere and can never rejoin with the same id. This instance cannot revoke itself. Returns the revoked instance."),
			mcp.WithString("id", mcp.Required(), mcp.MinLength(1),
				mcp.Description("Id of the instance to revoke (crow_list_instances lists them).")),
			mcp.WithOutputSchema[registry.Instance](),
			mcp.WithDestructiveHintAnnotation(true), mcp.WithIdempotentHintAnnotation(true), mcp.WithOpenWorldHintAnnotation(false),
		), call: s.mcpRevokeInstance},

		{tool: mcp.NewTool(toolSyncStatus,
			toolTitle("Sync status"), readOnlyTool(),
			mcp.WithDescription("Replication status of this instance: whether sync is paused, the feeds held here with their "+
				"lengths, and per peer whether it is connected and how many entries this instance still lacks (lag)."),
			mcp.WithOutputSchema[syncStatusResponse](),
			mcp.WithOpenWorldHintAnnotation(false),
		), call: s.mcpSyncStatus},

		{tool: mcp.NewTool(toolListConflicts,
			toolTitle("List sync conflicts"), readOnlyTool(),
			mcp.WithDescription("List sync conflicts, newest first: rows that two instances changed without seeing each other's "+
				"edit. Each record has the live (winning) and the overwritten (losing) version with their data, instance ids "+
				"and lamport timestamps, op (update, delete, insert) and whether it is resolved. Returns {conflicts, next_cursor}. "+
				"Resolve one with crow_sync_conflicts_keep_current or crow_sync_conflicts_restore_other."),
			mcp.WithBoolean("unresolved", mcp.DefaultBool(true),
				mcp.Description("Only conflicts not yet resolved (default true); false lists resolved ones too.")),
			mcp.WithString("table", mcp.Description(`Only conflicts of this table, e.g. "memories" or "notes".`)),
			mcp.WithString("row_id", mcp.Description("Only conflicts of this row (needs table).")),
			mcp.WithInteger("limit", mcp.Min(1), mcp.Max(1000), mcp.DefaultNumber(50),
				mcp.Description("Page size, 1-1000; default 50.")),
			mcp.WithString("cursor", mcp.Description("The next_cursor of the previous page; omit for the first page.")),
			mcpOutputSchema[conflictsResponse](),
			mcp.WithOpenWorldHintAnnotation(false),
		), call: s.mcpListConflicts},

		{tool: mcp.NewTool(toolConflictKeep,
			toolTitle("Keep the current version"), additiveTool(),
			mcp.WithDescription("Resolve a sync conflict by keeping the live (winning) version: the overwritten version is "+
				"dismissed. Nothing in the row changes. The resolution replicates to every instance. Idempotent. "+
				"Returns the resolved conflict."),
			propConflictID,
			mcpOutputSchema[conflicts.Conflict](),
			mcp.WithIdempotentHintAnnotation(true), mcp.WithOpenWorldHintAnnotation(false),
		), call: s.mcpConflictKeep},

		{tool: mcp.NewTool(toolConflictRestore,
			toolTitle("Restore the other version"),
			mcp.WithDescription("Resolve a sync conflict by restoring the overwritten (losing) version: it is written back as "+
				"a new edit of the row and replicates like any edit. Refused if the row changed since the conflict was "+
				"recorded (stale: look at the row again, then keep or edit it), for insert collisions (two rows created "+
				"independently with one id: write the row you want yourself, then keep) and for crow_context rows. "+
				"Returns {conflict, row}."),
			propConflictID,
			mcpOutputSchema[restoreResponse](),
			mcp.WithDestructiveHintAnnotation(true), mcp.WithOpenWorldHintAnnotation(false),
		), call: s.mcpConflictRestore},

		{tool: mcp.NewTool(toolConflictsResolve,
			toolTitle("Resolve all sync conflicts"), additiveTool(),
			mcp.WithDescription("Resolve every unresolved sync conflict (optionally of one table) by keeping the live "+
				"versions. The resolutions replicate. Returns {resolved: how many}."),
			mcp.WithString("table", mcp.Description(`Only this table's conflicts, e.g. "memories"; omit for all.`)),
			mcpOutputSchema[resolveAllResponse](),
			mcp.WithOpenWorldHintAnnotation(false),
		), call: s.mcpConflictsResolveAll},
	}
}

var propConflictID = mcp.WithString("id", mcp.Required(), mcp.MinLength(1),
	mcp.Description("Id of the sync conflict (crow_list_sync_conflicts lists them)."))

// recoveryToolError turns the recovery errors into tool errors that say what
// to do; others pass through.
func recoveryToolError(id string, err error) error {
	switch {
	case errors.Is(err, conflicts.ErrNotFound):
		return toolErrorf("no sync conflict with id %s; crow_list_sync_conflicts lists them", id)
	case errors.Is(err, conflicts.ErrResolved), errors.Is(err, conflicts.ErrStale), errors.Is(err, conflicts.ErrRestoreRefused):
		return toolErrorf("%s", err.Error())
	}
	return err
}

func (s *Server) mcpListConflicts(_ context.Context, raw json.RawMessage) (any, error) {
	a := struct {
		Unresolved *bool  `json:"unresolved"`
		Table      string `json:"table"`
		RowID      string `json:"row_id"`
		Limit      *int   `json:"limit"`
		Cursor     string `json:"cursor"`
	}{}
	if err := decodeArgs(raw, &a); err != nil {
		return nil, err
	}
	f := conflicts.Filter{Table: a.Table, RowID: a.RowID, Unresolved: a.Unresolved == nil || *a.Unresolved}
	if f.Table != "" && !store.ValidTable(f.Table) {
		return nil, toolErrorf("unknown table %q; tables: %s", f.Table, strings.Join(store.Tables(), ", "))
	}
	if f.RowID != "" && f.Table == "" {
		return nil, toolErrorf("row_id needs table")
	}
	limit := 50
	if a.Limit != nil {
		if *a.Limit < 1 || *a.Limit > 1000 {
			return nil, toolErrorf("limit must be a whole number from 1 to 1000, got %d", *a.Limit)
		}
		limit = *a.Limit
	}
	list, err := s.cfg.Conflicts.List(f)
	if err != nil {
		return nil, err
	}
	list, next, err := pageNewest(list, conflictKey, a.Cursor, limit)
	if err != nil {
		return nil, toolErrorf("%s", err.Error())
	}
	if list == nil {
		list = []conflicts.Conflict{}
	}
	return conflictsResponse{Conflicts: list, NextCursor: next}, nil
}

func conflictIDArg(raw json.RawMessage) (string, error) {
	var a struct {
		ID string `json:"id"`
	}
	if err := decodeArgs(raw, &a); err != nil {
		return "", err
	}
	if a.ID == "" {
		return "", toolErrorf("id is required: the id of the sync conflict (crow_list_sync_conflicts lists them)")
	}
	return a.ID, nil
}

func (s *Server) mcpConflictKeep(ctx context.Context, raw json.RawMessage) (any, error) {
	id, err := conflictIDArg(raw)
	if err != nil {
		return nil, err
	}
	c, err := s.cfg.Recovery.Keep(ctx, id)
	if err != nil {
		return nil, recoveryToolError(id, err)
	}
	return c, nil
}

func (s *Server) mcpConflictRestore(ctx context.Context, raw json.RawMessage) (any, error) {
	id, err := conflictIDArg(raw)
	if err != nil {
		return nil, err
	}
	c, row, err := s.cfg.Recovery.Restore(ctx, id)
	if err != nil {
		return nil, recoveryToolError(id, err)
	}
	return restoreResponse{Conflict: c, Row: row}, nil
}

func (s *Server) mcpConflictsResolveAll(ctx context.Context, raw json.RawMessage) (any, error) {
	var a resolveAllRequest
	if err := decodeArgs(raw, &a); err != nil {
		return nil, err
	}
	if a.Table != "" && !store.ValidTable(a.Table) {
		return nil, toolErrorf("unknown table %q; tables: %s", a.Table, strings.Join(store.Tables(), ", "))
	}
	n, err := s.cfg.Recovery.ResolveAll(ctx, conflicts.Filter{Table: a.Table})
	if err != nil {
		return nil, err
	}
	return resolveAllResponse{Resolved: n}, nil
}

// deleteResponse is the answer of DELETE /v1/memory/{id} and crow_delete_memory.
type deleteResponse struct {
	ID      string `json:"id"`
	Deleted bool   `json:"deleted"`
}

// instancesResponse is the answer of GET /v1/instances and crow_list_instances.
type instancesResponse struct {
	Self      string              `json:"self"`
	Instances []registry.Instance `json:"instances"`
}

func (s *Server) mcpStore(ctx context.Context, raw json.RawMessage) (any, error) {
	var a struct {
		Content    string   `json:"content"`
		Project    string   `json:"project"`
		Category   string   `json:"category"`
		Importance *int     `json:"importance"`
		Tags       []string `json:"tags"`
	}
	if err := decodeArgs(raw, &a); err != nil {
		return nil, err
	}
	return s.cfg.Memories.Add(ctx, memory.CreateInput{Content: a.Content, Project: a.Project, Category: a.Category,
		Importance: a.Importance, Tags: a.Tags, Source: memory.SourceMCP})
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

func (s *Server) mcpGet(ctx context.Context, raw json.RawMessage) (any, error) {
	var a struct {
		ID string `json:"id"`
	}
	if err := decodeArgs(raw, &a); err != nil {
		return nil, err
	}
	if a.ID == "" {
		return nil, toolErrorf("id is required: the id of the memory to read")
	}
	m, err := s.cfg.Memories.Get(ctx, a.ID)
	if errors.Is(err, memory.ErrNotFound) {
		return nil, memoryNotFound(a.ID)
	}
	return m, err
}

func (s *Server) mcpList(ctx context.Context, raw json.RawMessage) (any, error) {
	var a struct {
		filterArgs
		Cursor string `json:"cursor"`
		Order  string `json:"order"`
	}
	if err := decodeArgs(raw, &a); err != nil {
		return nil, err
	}
	f, limit, err := a.filter()
	if err != nil {
		return nil, err
	}
	if a.Order != "" && a.Order != "newest" && a.Order != "oldest" {
		return nil, toolErrorf("order must be \"newest\" or \"oldest\", got %q", a.Order)
	}
	page, err := s.cfg.Memories.List(ctx, memory.ListOptions{Filter: f, Cursor: a.Cursor, Limit: limit, Oldest: a.Order == "oldest"})
	if err != nil {
		return nil, err
	}
	if page.Memories == nil {
		page.Memories = []memory.Memory{}
	}
	return page, nil
}

func (s *Server) mcpUpdate(ctx context.Context, raw json.RawMessage) (any, error) {
	var a struct {
		ID string `json:"id"`
		memory.PatchInput
	}
	if err := decodeArgs(raw, &a); err != nil {
		return nil, err
	}
	if a.ID == "" {
		return nil, toolErrorf("id is required: the id of the memory to change")
	}
	m, err := s.cfg.Memories.Update(ctx, a.ID, a.PatchInput)
	if errors.Is(err, memory.ErrNotFound) {
		return nil, memoryNotFound(a.ID)
	}
	var verr *memory.ValidationError
	if errors.As(err, &verr) && verr.Field == "" {
		return nil, toolErrorf("%s: give at least one of content, project, category, importance, tags", verr.Message)
	}
	return m, err
}

func (s *Server) mcpDelete(ctx context.Context, raw json.RawMessage) (any, error) {
	var a struct {
		ID string `json:"id"`
	}
	if err := decodeArgs(raw, &a); err != nil {
		return nil, err
	}
	if a.ID == "" {
		return nil, toolErrorf("id is required: the id of the memory to delete")
	}
	if err := s.cfg.Memories.Delete(ctx, a.ID); errors.Is(err, memory.ErrNotFound) {
		return nil, memoryNotFound(a.ID)
	} else if err != nil {
		return nil, err
	}
	return deleteResponse{ID: a.ID, Deleted: true}, nil
}

// errNoRegistry is returned by the instance tools of a gateway built without a registry.
var errNoRegistry = &toolError{msg: "this gateway has no instance registry configured"}

func (s *Server) mcpListInstances(_ context.Context, raw json.RawMessage) (any, error) {
	if err := decodeArgs(raw, &struct{}{}); err != nil {
		return nil, err
	}
	if s.cfg.Instances == nil {
		return nil, errNoRegistry
	}
	list := s.cfg.Instances.List()
	if list == nil {
		list = []registry.Instance{}
	}
	return instancesResponse{Self: s.cfg.Self.InstanceID, Instances: list}, nil
}

func (s *Server) mcpRegisterInstance(ctx context.Context, raw json.RawMessage) (any, error) {
	var a registerRequest
	if err := decodeArgs(raw, &a); err != nil {
		return nil, err
	}
	if strings.TrimSpace(a.GatewayURL) == "" {
		return nil, toolErrorf("gateway_url is required, e.g. http://100.64.0.2:3001")
	}
	if s.cfg.Instances == nil {
		return nil, errNoRegistry
	}
	resp, err := s.join(ctx, a.GatewayURL)
	if err != nil {
		return nil, err
	}
	return resp, nil
}

func (s *Server) mcpRevokeInstance(ctx context.Context, raw json.RawMessage) (any, error) {
	var a struct {
		ID string `json:"id"`
	}
	if err := decodeArgs(raw, &a); err != nil {
		return nil, err
	}
	if a.ID == "" {
		return nil, toolErrorf("id is required: the id of the instance to revoke")
	}
	if s.cfg.Instances == nil {
		return nil, errNoRegistry
	}
	return s.cfg.Instances.Revoke(ctx, a.ID)
}

func (s *Server) mcpSyncStatus(ctx context.Context, raw json.RawMessage) (any, error) {
	if err := decodeArgs(raw, &struct{}{}); err != nil {
		return nil, err
	}
	return s.syncStatus(ctx)
}
