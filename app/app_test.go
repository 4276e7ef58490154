package app_test

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/federation"
	"github.com/crow-sync/crow/memory"
)

// field returns the input field of op named name (its JSON name).
func field(t *testing.T, op app.Op, name string) *app.Field {
	t.Helper()
	in := op.Input()
	for i := range in.Fields {
		if in.Fields[i].Name == name {
			return &in.Fields[i]
		}
	}
	t.Fatalf("%s has no input field %q", op.Info().Name, name)
	return nil
}

// TestLimitsAreTheDomainsOwn pins the limits in the input tags, which REST,
// MCP and both schemas enforce and document, to the constants of the
// domain packages that enforce them again: a change to one without the other
// fails here.
func TestLimitsAreTheDomainsOwn(t *testing.T) {
	type limits struct{ maxLen, maxItems, itemMinLen, itemMaxLen int }
	// The memory fields, wherever they are input: writes and filters.
	want := map[string]limits{
		"content":  {maxLen: memory.MaxContentBytes},
		"project":  {maxLen: memory.MaxProjectLen},
		"category": {maxLen: memory.MaxCategoryLen},
		"tags":     {maxItems: memory.MaxTags, itemMinLen: 1, itemMaxLen: memory.MaxTagLen},
	}
	writes := []app.Op{app.MemoryCreate, app.MemoryUpdate}
	for _, op := range []app.Op{app.MemoryCreate, app.MemoryUpdate, app.MemoryList} {
		for name, w := range want {
			if name == "content" && op == app.MemoryList {
				continue // no filter on content
			}
			f := field(t, op, name)
			got := limits{f.MaxLen, f.MaxItems, f.ItemMinLen, f.ItemMaxLen}
			if !slices.Contains(writes, op) {
				// A filter refuses what no memory can match (too long, too
				// many); a short tag just matches nothing.
				w.itemMinLen, w.itemMaxLen = got.itemMinLen, got.itemMaxLen
			}
			if got != w {
				t.Errorf("%s.%s: tag limits %+v, the memory package's are %+v", op.Info().Name, name, got, w)
			}
		}
		for _, name := range []string{"importance", "min_importance"} {
			if slices.ContainsFunc(op.Input().Fields, func(f app.Field) bool { return f.Name == name }) {
				if f := field(t, op, name); f.Min == nil || *f.Min != 1 || f.Max == nil || *f.Max != 10 {
					t.Errorf("%s.%s: range %v..%v, want 1..10", op.Info().Name, name, f.Min, f.Max)
				}
			}
		}
	}
	if f := field(t, app.MemoryCreate, "importance"); f.Default != strconv.Itoa(memory.DefaultImportance) {
		t.Errorf("memory.create.importance: default %q, the memory package's is %d", f.Default, memory.DefaultImportance)
	}
	if f := field(t, app.MemoryCreate, "content"); f.MinLen != 1 || !f.Required {
		t.Errorf("memory.create.content: minlen %d, required %v", f.MinLen, f.Required)
	}
	if !strings.Contains(field(t, app.MemoryCreate, "content").Desc, fmt.Sprintf("%d KiB", memory.MaxContentBytes>>10)) {
		t.Errorf("memory.create.content's description does not state the %d KiB limit", memory.MaxContentBytes>>10)
	}

	// The health challenge: its description and its check agree on
	// app.MaxChallengeBytes.
	if d := field(t, app.InstanceHealth, "challenge").Desc; !strings.Contains(d, "to "+strconv.Itoa(app.MaxChallengeBytes)+" bytes") {
		t.Errorf("instance.health.challenge: description %q does not state MaxChallengeBytes (%d)", d, app.MaxChallengeBytes)
	}
	for n, ok := range map[int]bool{15: false, 16: true, app.MaxChallengeBytes: true, app.MaxChallengeBytes + 1: false} {
		err := app.HealthIn{Challenge: strings.Repeat("ab", n)}.Validate()
		if (err == nil) != ok {
			t.Errorf("a challenge of %d bytes: %v, want accepted %v", n, err, ok)
		}
	}
	if err := (app.HealthIn{Challenge: strings.Repeat("zz", 16)}).Validate(); err == nil {
		t.Error("a challenge that is not hex is accepted")
	}
}

var wildcard = regexp.MustCompile(`\{([a-zA-Z_]+)\}`)

// TestTableSanity checks what every surface relies on of the table.
func TestTableSanity(t *testing.T) {
	names, routes, tools := map[string]bool{}, map[string]string{}, map[string]string{}
	if len(app.Ops()) < 20 {
		t.Fatalf("only %d operations in the table", len(app.Ops()))
	}
	for _, op := range app.Ops() {
		sp := op.Info()
		if sp.Name == "" {
			t.Errorf("an operation (%s %s, tool %q) has no Name", sp.Method, sp.Path, sp.Tool)
			continue
		}
		if names[sp.Name] {
			t.Errorf("two operations are named %s", sp.Name)
		}
		names[sp.Name] = true
		if sp.Method == "" && sp.Tool == "" {
			t.Errorf("%s is on no surface (no Method, no Tool)", sp.Name)
		}
		if (sp.Method == "") != (sp.Path == "") {
			t.Errorf("%s: Method %q with Path %q", sp.Name, sp.Method, sp.Path)
		}
		if sp.Method != "" {
			key := sp.Method + " " + sp.Path
			if other, dup := routes[key]; dup {
				t.Errorf("%s and %s are both %s", other, sp.Name, key)
			}
			routes[key] = sp.Name
			if sp.Summary == "" || sp.Tag == "" {
				t.Errorf("%s: a REST operation needs a Summary and a Tag (OpenAPI)", sp.Name)
			}
		}
		if sp.Tool != "" {
			if other, dup := tools[sp.Tool]; dup {
				t.Errorf("%s and %s are both tool %s", other, sp.Name, sp.Tool)
			}
			tools[sp.Tool] = sp.Name
			if sp.Title == "" || sp.Description == "" {
				t.Errorf("%s (tool %s): Title %q, Description %q; a tool needs both", sp.Name, sp.Tool, sp.Title, sp.Description)
			}
			for _, f := range op.Input().Fields {
				if f.MCP && f.Desc == "" {
					t.Errorf("%s: argument %s has no desc", sp.Tool, f.Name)
				}
			}
		}
		if sp.Destructive && sp.ReadOnly {
			t.Errorf("%s is both Destructive and ReadOnly", sp.Name)
		}
		// Deps.Foreground (the daemon's pacing of anchoring) counts every
		// operation that is not ReadOnly as a write.
		if sp.Method == "GET" && !sp.ReadOnly {
			t.Errorf("%s is a GET that is not ReadOnly", sp.Name)
		}
		if sp.NoRoute && sp.Tool == "" {
			t.Errorf("%s: NoRoute without a Tool", sp.Name)
		}
		// Path wildcards and in:"path" fields, both ways.
		var wild []string
		for _, m := range wildcard.FindAllStringSubmatch(sp.Path, -1) {
			wild = append(wild, m[1])
		}
		var inPath []string
		for _, f := range op.Input().Fields {
			if f.In == app.InPath {
				inPath = append(inPath, f.RESTName)
			}
		}
		if sp.Method == "" && len(inPath) > 0 {
			t.Errorf("%s is not on REST but has in:\"path\" fields %v", sp.Name, inPath)
		}
		slices.Sort(wild)
		slices.Sort(inPath)
		if sp.Method != "" && !slices.Equal(wild, inPath) {
			t.Errorf("%s %s: path wildcards %v, in:\"path\" fields %v", sp.Name, sp.Path, wild, inPath)
		}
	}
}

// TestPeerToolsMatchFederation pins federation's allow-list (which it uses
// to know which calls are safe to retry) to the table's peer access, which
// the gateway enforces: one policy, two readers.
func TestPeerToolsMatchFederation(t *testing.T) {
	for _, home := range []bool{false, true} {
		got := slices.Sorted(slices.Values(app.PeerTools(home)))
		want := federation.DefaultAllowList().Tools()
		if home {
			want = slices.Sorted(slices.Values(append(want, federation.ConsolidateTool)))
		}
		if !slices.Equal(got, want) {
			t.Errorf("home=%v: the table's peer tools %v, federation's allow-list %v", home, got, want)
		}
	}
}
