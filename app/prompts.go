package app

import (
	"context"
	"fmt"
	"strings"

	"github.com/crow-sync/crow/projects"
)

// The MCP prompts (served on /mcp, so `crow mcp` has them too): guides that
// tell the client which tools to call, in which order, and what to propose.
// Tool names come from the operations of the table, so a renamed tool renames
// itself here; the facts a prompt states (a project's newest version, the
// open conflicts) come from running those operations.

// Prompt is one MCP prompt.
type Prompt struct {
	Name, Title, Description string
	Args                     []PromptArg
	// Render returns the prompt's messages for args (validated: required
	// ones present).
	Render func(a *App, ctx context.Context, args map[string]string) (PromptText, error)
}

// PromptArg is one argument of a prompt.
type PromptArg struct {
	Name, Description string
	Required          bool
}

// PromptText is a rendered prompt: its description and one user message.
type PromptText struct {
	Description string
	Text        string
}

var prompts = []*Prompt{
	{
		Name: "consolidate_project", Title: "Consolidate a project's state",
		Description: "Read a project's recent memories and its current state, then propose Project State ops that cite " +
			"their evidence (memory numbers), and apply them once the user agrees.",
		Args:   []PromptArg{{Name: "project", Description: "The project to consolidate (as in memories' project field).", Required: true}},
		Render: (*App).consolidatePrompt,
	},
	{
		Name: "review_sync_conflicts", Title: "Review sync conflicts",
		Description: "Go through the open sync conflicts with the user: what each side changed, which to keep, " +
			"and resolve only what the user confirms.",
		Render: (*App).conflictsPrompt,
	},
}

// Prompts returns the MCP prompts.
func Prompts() []*Prompt { return prompts }

// PromptNamed returns the prompt called name, or nil.
func PromptNamed(name string) *Prompt {
	for _, p := range prompts {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// RenderPrompt checks args against p's arguments (required present, none
// unknown) and renders it.
func (a *App) RenderPrompt(ctx context.Context, p *Prompt, args map[string]string) (PromptText, error) {
	known := map[string]bool{}
	for _, arg := range p.Args {
		known[arg.Name] = true
		if arg.Required && strings.TrimSpace(args[arg.Name]) == "" {
			return PromptText{}, Invalidf("prompt %s needs the argument %q: %s", p.Name, arg.Name, arg.Description)
		}
	}
	for k := range args {
		if !known[k] {
			return PromptText{}, Invalidf("prompt %s has no argument %q", p.Name, k)
		}
	}
	return p.Render(a, ctx, args)
}

func (a *App) consolidatePrompt(ctx context.Context, args map[string]string) (PromptText, error) {
	project := strings.TrimSpace(args["project"])
	if err := projects.ValidProject(project); err != nil {
		return PromptText{}, Invalidf("prompt consolidate_project: %s", Message(err))
	}
	current := "The project has no state version yet: the first consolidation creates version 1."
	st, err := Call(ctx, a, ProjectStateGet, ProjectName{Project: project})
	switch {
	case err == nil:
		current = fmt.Sprintf("The newest state is version %d (state_hash %s), consolidated until memory #%d.",
			st.Version.Version, st.StateHash, st.State.Meta.ConsolidatedUntilEvent)
	case KindOf(ctx, err) != KindNotFound:
		return PromptText{}, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Consolidate the Project State of the crow project %q. %s\n\n", project, current)
	fmt.Fprintf(&b, "1. Read the current state with %s {\"project\": %q} (or the resource crow://project/%s/state). "+
		"Note its items, their evidence_memory_ids and any stale_evidence (cited numbers superseded by an edit).\n",
		ProjectStateGet.Tool, project, project)
	fmt.Fprintf(&b, "2. Read the project's memories, newest first, with %s {\"project\": %q, \"limit\": 50} "+
		"(follow next_cursor while memories are newer than the state's consolidated_until_event), and %s "+
		"{\"query\": ..., \"project\": %q} for a topic. Only memories with a number (assigned by the home instance) can be "+
		"cited; read one version with %s {\"id\": \"<number>\"}.\n", MemoryList.Tool, project, MemorySearch.Tool, project, MemoryGet.Tool)
	fmt.Fprintf(&b, "3. Propose ops to the user: new decisions, milestones, risks, the phase or the current focus, "+
		"and updates or removals of items the memories contradict or supersede. Every op that adds or changes an item "+
		"cites evidence_memory_ids: the NUMBERS of the memories it rests on, and nothing you cannot cite. For each op, "+
		"say which memories (#N and a few words) support it.\n")
	fmt.Fprintf(&b, "4. Only after the user agrees, apply them with %s {\"project\": %q, \"ops\": [...], "+
		"\"consolidated_until_event\": <the highest memory number you reviewed>}. Ops the builder refuses come back in "+
		"rejected with the reason: fix them and ask again; never invent evidence.\n\n", ProjectConsolidate.Tool, project)
	b.WriteString(stateOpsDescription())
	return PromptText{Description: "Consolidate project " + project, Text: b.String()}, nil
}

func (a *App) conflictsPrompt(ctx context.Context, _ map[string]string) (PromptText, error) {
	open := true
	list, err := Call(ctx, a, ConflictsList, ConflictListIn{Unresolved: &open, Limit: 1000})
	if err != nil {
		return PromptText{}, err
	}
	n := len(list.Conflicts)
	more := ""
	if list.NextCursor != "" {
		more = " or more"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Review the open sync conflicts of this crow with the user (%d open%s now). A conflict is a row two "+
		"instances changed without seeing each other's edit: the live (winning) version stayed, the other was overwritten.\n\n", n, more)
	fmt.Fprintf(&b, "1. List them with %s {\"unresolved\": true} (follow next_cursor). %s names the instances by id.\n",
		ConflictsList.Tool, InstancesList.Tool)
	b.WriteString("2. For each conflict, explain both sides in plain words: the table and row, what the live version says and " +
		"what the overwritten one said (compare the fields of winning_data and losing_data: content, tags, project...), " +
		"which instance wrote each (instance names, not ids), and whether one side is a delete (winning_deleted / losing_deleted).\n")
	fmt.Fprintf(&b, "3. Propose for each: keep the live version (%s {\"id\": ...}) or restore the overwritten one "+
		"(%s {\"id\": ...}: it becomes a new edit that replicates everywhere; restoring the loser of a delete brings the row "+
		"back, restoring a delete deletes it). %s resolves every open conflict at once by keeping the live versions.\n",
		ConflictsKeep.Tool, ConflictsRestore.Tool, ConflictsResolveAll.Tool)
	b.WriteString("4. Never resolve a conflict without the user's explicit confirmation of that action for that conflict; " +
		"when unsure, leave it open. After each action, say what changed.\n")
	return PromptText{Description: fmt.Sprintf("Review %d open sync conflict(s)", n), Text: b.String()}, nil
}
