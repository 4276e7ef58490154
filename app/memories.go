package app

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/crow-sync/crow/memory"
)

// The memory operations (SPEC §8). Field limits are memory's: the tests pin
// the tags here to memory.MaxContentBytes and the other constants.

// MemoryFilter are the filters list and search share.
type MemoryFilter struct {
	Project       string   `json:"project,omitempty" in:"query" maxlen:"128" desc:"Only memories of this project."`
	Category      string   `json:"category,omitempty" in:"query" maxlen:"64" desc:"Only memories of this category."`
	MinImportance *int     `json:"min_importance,omitempty" in:"query" min:"1" max:"10" desc:"Only memories at least this important (1-10)."`
	Tags          []string `json:"tags,omitempty" in:"query" maxitems:"32" desc:"Only memories carrying every one of these tags (REST: comma-separated, or the parameter repeated)."`
}

func (f MemoryFilter) filter() memory.Filter {
	out := memory.Filter{Project: f.Project, Category: f.Category, Tags: f.Tags}
	if f.MinImportance != nil {
		out.MinImportance = *f.MinImportance
	}
	return out
}

// MemoryCreateIn is the input of memory.create.
type MemoryCreateIn struct {
	Content    string   `json:"content" required:"true" minlen:"1" maxlen:"65536" desc:"The memory text, self-contained (at most 64 KiB of UTF-8)."`
	Project    string   `json:"project,omitempty" maxlen:"128" desc:"Project the memory belongs to (default \"default\")."`
	Category   string   `json:"category,omitempty" maxlen:"64" desc:"A short category such as \"decision\", \"preference\", \"fact\" (default \"general\")."`
	Importance *int     `json:"importance,omitempty" min:"1" max:"10" default:"5" desc:"How important it is, 1 (trivia) to 10 (critical); default 5."`
	Tags       []string `json:"tags,omitempty" maxitems:"32" itemminlen:"1" itemmaxlen:"64" desc:"Up to 32 tags, each 1-64 characters without leading or trailing spaces; duplicates are dropped."`
	Source     string   `json:"source,omitempty" mcp:"-" maxlen:"64" desc:"Who wrote it (default \"api\"; the CLI sends \"cli\")."`
}

// MemoryID names one memory.
type MemoryID struct {
	ID string `json:"id" in:"path" required:"true" desc:"Id of the memory. Ids come from crow_store_memory, crow_search_memories and crow_list_memories."`
}

// MemoryForgetIn is the input of memory.forget.
type MemoryForgetIn struct {
	ID string `json:"id" in:"path" required:"true" desc:"Id of the memory, or the number of any of its versions (decimal digits, as cited in evidence_memory_ids)."`
}

// MemoryUpdateIn is the input of memory.update.
type MemoryUpdateIn struct {
	ID         string    `json:"id" in:"path" required:"true" desc:"Id of the memory to change."`
	Content    *string   `json:"content,omitempty" minlen:"1" maxlen:"65536" desc:"New text."`
	Project    *string   `json:"project,omitempty" maxlen:"128" desc:"New project."`
	Category   *string   `json:"category,omitempty" maxlen:"64" desc:"New category."`
	Importance *int      `json:"importance,omitempty" min:"1" max:"10" desc:"New importance, 1-10."`
	Tags       *[]string `json:"tags,omitempty" maxitems:"32" itemminlen:"1" itemmaxlen:"64" desc:"New tag list (replaces the old one; [] removes all tags)."`
}

// Validate asks for at least one field to change.
func (in MemoryUpdateIn) Validate() error {
	if in.Content == nil && in.Project == nil && in.Category == nil && in.Importance == nil && in.Tags == nil {
		return Invalidf("nothing to change: give at least one of content, project, category, importance, tags")
	}
	return nil
}

// MemoryListIn is the input of memory.list.
type MemoryListIn struct {
	MemoryFilter
	Limit  int    `json:"limit,omitempty" in:"query" min:"1" max:"1000" mcpdefault:"50" desc:"Page size, 1-1000 (MCP default 50; REST: the service's default)."`
	Cursor string `json:"cursor,omitempty" in:"query" desc:"The next_cursor of the previous page; omit for the first page."`
	Order  string `json:"order,omitempty" in:"query" enum:"newest,oldest" default:"\"newest\"" desc:"newest first (default) or oldest first."`
}

// Deleted is the answer of a delete.
type Deleted struct {
	ID      string `json:"id"`
	Deleted bool   `json:"deleted"`
}

var (
	MemoryCreate = define(&Def[MemoryCreateIn, memory.Memory]{
		Spec: Spec{Name: "memory.create", Method: "POST", Path: "/v1/memory", Status: 201, Tool: "crow_store_memory",
			Title: "Store a memory", Tag: "memories", Summary: "Store a memory",
			Description: "Store a new memory: a fact, decision, preference or note worth keeping across sessions " +
				"and machines. It is saved durably on this instance and replicates to the user's other instances. " +
				"Returns the stored memory (its id, content_hash, defaults filled in)."},
		Impl:   (*App).memoryCreate,
		Locate: func(m memory.Memory) string { return "/v1/memory/" + url.PathEscape(m.ID) },
	})
	MemoryGet = define(&Def[MemoryID, memory.Memory]{
		Spec: Spec{Name: "memory.get", Method: "GET", Path: "/v1/memory/{id}", Tool: "crow_get_memory",
			Title: "Read a memory", Tag: "memories", Summary: "Read a memory",
			Description: "Read one memory by id, or one numbered version of it by number. With an id, returns the live memory, " +
				"with the number and event_hash of its latest version once the home instance has numbered it. With a memory " +
				"number instead (decimal digits, such as \"12\", as cited in evidence_memory_ids; REST: GET /v1/memory/12), returns " +
				"that exact version: a number names one immutable version, and an edit is numbered anew, so the answer has " +
				"supersedes (the previous version's number) and superseded_by (the next one's) when they exist, and id is " +
				"the memory's id. A version stays readable after the memory is edited or deleted.",
			Access: Peer, ReadOnly: true},
		Impl: (*App).memoryGet,
	})
	MemoryUpdate = define(&Def[MemoryUpdateIn, memory.Memory]{
		Spec: Spec{Name: "memory.update", Method: "PATCH", Path: "/v1/memory/{id}", Tool: "crow_update_memory",
			Title: "Change a memory", Tag: "memories", Summary: "Change fields of a memory (absent fields are kept)",
			Description: "Change fields of an existing memory; omitted fields stay as they are (give at least one). " +
				"tags replaces the whole tag list. Returns the memory as stored.",
			Destructive: true, Idempotent: true},
		Impl: (*App).memoryUpdate,
	})
	MemoryDelete = define(&Def[MemoryID, Deleted]{
		Spec: Spec{Name: "memory.delete", Method: "DELETE", Path: "/v1/memory/{id}", Tool: "crow_delete_memory",
			Title: "Delete a memory", Tag: "memories", Summary: "Delete a memory",
			Description: "Delete a memory by id, on every instance (the deletion replicates). Returns {id, deleted: true}.",
			Destructive: true, Idempotent: false},
		Impl: (*App).memoryDelete,
	})
	MemoryForget = define(&Def[MemoryForgetIn, memory.Forgotten]{
		Spec: Spec{Name: "memory.forget", Method: "POST", Path: "/v1/memory/{id}/forget", Tool: "crow_forget_memory",
			Title: "Forget a memory", Tag: "memories", Summary: "Erase a memory's content everywhere, for good",
			Description: "Forget a memory, by id or by the number of any of its versions: erase the content of every " +
				"version of it from every instance (the live row or tombstone, its versions, conflict records, the search " +
				"index and the replicated feed entries that carried it), and destroy its data key so its ciphertext on chain " +
				"cannot be decrypted, even with the seed. This cannot be undone. The forget replicates like a write: an " +
				"instance that is offline forgets when it comes back. Number, event hash and forgotten_at remain, so " +
				"evidence still verifies. Works on a deleted memory too; forgetting again answers the same. Returns " +
				"{id, numbers (every version number known here), forgotten_at}.",
			Destructive: true, Idempotent: true},
		Impl: (*App).memoryForget,
	})
	MemoryList = define(&Def[MemoryListIn, memory.Page]{
		Spec: Spec{Name: "memory.list", Method: "GET", Path: "/v1/memories/list", Tool: "crow_list_memories",
			Title: "List memories", Tag: "memories", Summary: "List memories, newest first, a page at a time",
			Description: "List memories by creation time (newest first by default), optionally filtered. " +
				"Returns {memories, next_cursor}; pass next_cursor as cursor to get the next page (\"\" means no more).",
			Access: Peer, ReadOnly: true},
		Impl: (*App).memoryList,
	})
)

func (a *App) memories() (*memory.Service, error) {
	if a.d.Memories == nil {
		return nil, unavailable("memory service")
	}
	return a.d.Memories, nil
}

// memoryNotFound is the error of a missing memory id.
func memoryNotFound(id string, err error) error {
	var fe *memory.ForgottenError
	if errors.As(err, &fe) {
		return Wrap(KindNotFound, err, "memory "+quote(id)+" was forgotten at "+fe.At+
			": its content is erased on every instance; its numbered versions keep number, event hash and forgotten_at (GET /v1/memory/{number})")
	}
	return Wrap(KindNotFound, err, "no memory with id "+quote(id)+": it does not exist or was deleted; "+
		"crow_search_memories and crow_list_memories (GET /v1/memories/list) return the ids of live memories")
}

func (a *App) memoryCreate(ctx context.Context, in MemoryCreateIn) (memory.Memory, error) {
	svc, err := a.memories()
	if err != nil {
		return memory.Memory{}, err
	}
	src := in.Source
	if src == "" {
		src = memory.SourceAPI
		if CallerOf(ctx).Surface == SurfaceMCP {
			src = memory.SourceMCP
		}
	}
	return svc.Add(ctx, memory.CreateInput{Content: in.Content, Project: in.Project, Category: in.Category,
		Importance: in.Importance, Tags: in.Tags, Source: src})
}

func (a *App) memoryGet(ctx context.Context, in MemoryID) (memory.Memory, error) {
	svc, err := a.memories()
	if err != nil {
		return memory.Memory{}, err
	}
	if n, ok := memoryNumber(in.ID); ok {
		return memoryVersion(ctx, svc, n)
	}
	m, err := svc.Get(ctx, in.ID)
	if errors.Is(err, memory.ErrNotFound) {
		return m, memoryNotFound(in.ID, err)
	}
	return m, err
}

func (a *App) memoryForget(ctx context.Context, in MemoryForgetIn) (memory.Forgotten, error) {
	svc, err := a.memories()
	if err != nil {
		return memory.Forgotten{}, err
	}
	f, err := svc.Forget(ctx, in.ID)
	if errors.Is(err, memory.ErrNotFound) {
		if _, ok := memoryNumber(in.ID); ok {
			return f, Wrap(KindNotFound, err, "no memory has a version numbered "+quote(in.ID)+" here")
		}
		return f, Wrap(KindNotFound, err, "no memory with id "+quote(in.ID)+" here")
	}
	if f.Numbers == nil {
		f.Numbers = []uint64{}
	}
	return f, err
}

// memoryNumber reports whether id names a memory by number: all decimal
// digits, optionally after "#" (memory ids are ULIDs, never all digits). A
// number too large for uint64 is reported as 0, a number no memory has.
func memoryNumber(id string) (uint64, bool) {
	digits := strings.TrimPrefix(id, "#")
	if digits == "" || strings.TrimLeft(digits, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseUint(digits, 10, 64)
	if err != nil {
		return 0, true
	}
	return n, true
}

// memoryVersion reads the version numbered n.
func memoryVersion(ctx context.Context, svc *memory.Service, n uint64) (memory.Memory, error) {
	m, err := svc.GetVersion(ctx, n)
	if !errors.Is(err, memory.ErrNotFound) {
		return m, err
	}
	hi, herr := svc.HighestNumber()
	if herr != nil {
		return m, herr
	}
	held := fmt.Sprintf("highest is #%d", hi)
	if hi == 0 {
		held = "none is numbered here yet"
	}
	return m, Wrap(KindNotFound, err, fmt.Sprintf("no memory #%d (numbers are assigned by home; %s)", n, held))
}

func (a *App) memoryUpdate(ctx context.Context, in MemoryUpdateIn) (memory.Memory, error) {
	svc, err := a.memories()
	if err != nil {
		return memory.Memory{}, err
	}
	m, err := svc.Update(ctx, in.ID, memory.PatchInput{Content: in.Content, Project: in.Project,
		Category: in.Category, Importance: in.Importance, Tags: in.Tags})
	if errors.Is(err, memory.ErrNotFound) {
		return m, memoryNotFound(in.ID, err)
	}
	return m, err
}

func (a *App) memoryDelete(ctx context.Context, in MemoryID) (Deleted, error) {
	svc, err := a.memories()
	if err != nil {
		return Deleted{}, err
	}
	if err := svc.Delete(ctx, in.ID); errors.Is(err, memory.ErrNotFound) {
		return Deleted{}, memoryNotFound(in.ID, err)
	} else if err != nil {
		return Deleted{}, err
	}
	return Deleted{ID: in.ID, Deleted: true}, nil
}

func (a *App) memoryList(ctx context.Context, in MemoryListIn) (memory.Page, error) {
	svc, err := a.memories()
	if err != nil {
		return memory.Page{}, err
	}
	page, err := svc.List(ctx, memory.ListOptions{Filter: in.filter(), Cursor: in.Cursor, Limit: in.Limit, Oldest: in.Order == "oldest"})
	if err != nil {
		return page, err
	}
	if page.Memories == nil {
		page.Memories = []memory.Memory{}
	}
	return page, nil
}

func quote(s string) string { return `"` + s + `"` }
