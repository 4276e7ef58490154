package e2e

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/memory"
)

// memoriesOf lists every live memory of d, oldest first.
func memoriesOf(t *testing.T, d *Daemon) []memory.Memory {
	t.Helper()
	return Must(d, app.MemoryList, app.MemoryListIn{Limit: 1000, Order: "oldest"}).Memories
}

// TestExportImport runs crow memory export and import on real daemons: an export of one crow
// imported into another gives the same memories; importing it again, or importing the export of
// another instance of the same crow, duplicates nothing; the official MCP memory server's file
// and a mem0 export import once; a bad file is refused with its line and writes nothing.
func TestExportImport(t *testing.T) {
	dir := t.TempDir()
	a := NewDaemon(t, "a", nil)
	a.Start()
	for _, in := range []app.MemoryCreateIn{
		{Content: "Deploys go through staging first", Project: "infra", Category: "decision", Importance: ptr(8), Tags: []string{"deploy"}},
		{Content: "Coffee, no sugar", Category: "preference", Importance: ptr(3)},
		{Content: "unicode ✓ \"quoted\"\nsecond line", Project: "notes", Tags: []string{"a", "b"}},
		{Content: "to be edited"},
	} {
		Must(a, app.MemoryCreate, in)
	}
	a.MustCLI("memory", "add", "written by the CLI", "--project", "infra")
	edited := memoriesOf(t, a)[3]
	Must(a, app.MemoryUpdate, app.MemoryUpdateIn{ID: edited.ID, Content: ptr("edited once")})
	want := memoriesOf(t, a)

	// Export to a file, and to stdout.
	file := filepath.Join(dir, "a.jsonl")
	if out := a.MustCLI("memory", "export", "--out", file); !strings.Contains(out, "exported 5 memories to "+file) {
		t.Fatalf("export printed %q", out)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 6 || lines[0] != `{"format":"crow-memories","version":1}` {
		t.Fatalf("export file: %d lines, header %q", len(lines), lines[0])
	}
	stdout, stderr, err := a.CLI("memory", "export", "--project", "infra")
	if err != nil || strings.Count(stdout, "\n") != 3 || !strings.Contains(stderr, "exported 2 memories to stdout") {
		t.Fatalf("export --project infra to stdout: %v\nstdout %s\nstderr %s", err, stdout, stderr)
	}

	// Into another crow: the same memories.
	b := NewDaemon(t, "b", nil)
	b.Start()
	if out := b.MustCLI("memory", "import", file, "--dry-run"); !strings.Contains(out, "dry run: would import 5 memories") {
		t.Fatalf("dry run printed %q", out)
	}
	if n := len(memoriesOf(t, b)); n != 0 {
		t.Fatalf("a dry run wrote %d memories", n)
	}
	if out := b.MustCLI("memory", "import", file); !strings.Contains(out, "imported 5 memories from "+file+" (crow), skipped 0 as duplicates, refused 0") {
		t.Fatalf("import printed %q", out)
	}
	got := memoriesOf(t, b)
	if len(got) != len(want) {
		t.Fatalf("b has %d memories, want %d", len(got), len(want))
	}
	for i := range want {
		w, g := want[i], got[i]
		if g.ID != w.ID || g.Content != w.Content || g.ContentHash != w.ContentHash || g.Project != w.Project || g.Category != w.Category ||
			g.Importance != w.Importance || !slices.Equal(g.Tags, w.Tags) || g.Source != w.Source ||
			!g.CreatedAt.Equal(w.CreatedAt) || !g.UpdatedAt.Equal(w.UpdatedAt) {
			t.Errorf("memory %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
	if got[3].Content != "edited once" || got[4].Source != memory.SourceCLI {
		t.Errorf("the edit or the CLI source was lost: %+v", got[3:])
	}
	if out := b.MustCLI("memory", "import", file); !strings.Contains(out, "imported 0 memories from "+file+" (crow), skipped 5 as duplicates") {
		t.Fatalf("re-import printed %q", out)
	}

	// The MCP memory server's graph and a mem0 export, each once.
	fixtures, _ := filepath.Abs("../memory/exchange/testdata")
	for _, f := range []struct {
		name, format string
		n            int
	}{{"mcp-memory.jsonl", "mcp-memory", 3}, {"mem0-results.json", "mem0", 2}, {"mem0-list.json", "mem0", 2}} {
		path := filepath.Join(fixtures, f.name)
		if out := b.MustCLI("memory", "import", path, "--project", "imported"); !strings.Contains(out, "imported "+itoa(f.n)+" memories from "+path+" ("+f.format+"), skipped 0") {
			t.Fatalf("import %s printed %q", f.name, out)
		}
		if out := b.MustCLI("memory", "import", path, "--format", f.format, "--project", "imported"); !strings.Contains(out, "imported 0 memories") || !strings.Contains(out, "skipped "+itoa(f.n)+" as duplicates") {
			t.Fatalf("re-import %s printed %q", f.name, out)
		}
	}
	imported := Must(b, app.MemoryList, app.MemoryListIn{MemoryFilter: app.MemoryFilter{Project: "imported"}, Limit: 100}).Memories
	if len(imported) != 7 {
		t.Fatalf("%d memories in project imported, want 7", len(imported))
	}
	res := Must(b, app.MemorySearch, app.MemorySearchIn{Query: "Spanish"})
	if len(res.Results) != 1 || !strings.HasPrefix(res.Results[0].Content, "John_Smith (person)\n- Speaks fluent Spanish") {
		t.Fatalf("search for an MCP observation: %+v", res.Results)
	}

	// Bad input: one line, a non-zero exit, nothing written.
	before := len(memoriesOf(t, b))
	bad := filepath.Join(dir, "bad.jsonl")
	good := `{"id":"01JDQ7Z3K5M8N9P0Q1R2S3T4V5","project":"p","content":"fine","tags":[]}`
	for _, c := range []struct {
		name, data string
		args       []string
		msg        string
	}{
		{"bad JSON", `{"format":"crow-memories","version":1}` + "\n" + good + "\n" + `{"id": nope}` + "\n", nil, "line 3: bad JSON"},
		{"oversized content", `{"format":"crow-memories","version":1}` + "\n" + good + "\n" +
			`{"id":"01JDQ7Z3K5M8N9P0Q1R2S3T4V6","content":"` + strings.Repeat("x", memory.MaxContentBytes+1) + `"}` + "\n", nil, "line 3: content: is 65537 bytes"},
		{"over the body cap", `{"format":"crow-memories","version":1}` + "\n" + good + "\n" +
			`{"id":"01JDQ7Z3K5M8N9P0Q1R2S3T4V6","content":"` + strings.Repeat(`\u0001`, memory.MaxContentBytes) + `"}` + "\n", nil, "lines 2-3: request body of"},
		{"unknown format", good + "\n", []string{"--format", "csv"}, `unknown format "csv"`},
		{"undetectable", "just text\n", nil, "give --format"},
	} {
		if err := os.WriteFile(bad, []byte(c.data), 0o600); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, err := b.CLI(append([]string{"memory", "import", bad}, c.args...)...)
		if err == nil || !strings.Contains(stderr, c.msg) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%s: exit %v\nstdout %s\nstderr %s\nwant one line with %q", c.name, err, stdout, stderr, c.msg)
		}
	}
	if n := len(memoriesOf(t, b)); n != before {
		t.Fatalf("bad files wrote %d memories", n-before)
	}

	// Another instance of the same crow holds the same memories (replicated, same ids): its
	// export imports into a as duplicates only.
	s := NewDaemon(t, "s", a)
	s.Start()
	Enrolled(t, a, s)
	Eventually(t, syncTimeout, "s to hold a's memories", func() bool {
		ms, err := Call(s, app.MemoryList, app.MemoryListIn{Limit: 1000})
		return err == nil && len(ms.Memories) == len(want)
	})
	sfile := filepath.Join(dir, "s.jsonl")
	s.MustCLI("memory", "export", "--out", sfile)
	if out := a.MustCLI("memory", "import", sfile); !strings.Contains(out, "imported 0 memories") || !strings.Contains(out, "skipped 5 as duplicates") {
		t.Fatalf("import of the satellite's export printed %q", out)
	}
	if n := len(memoriesOf(t, a)); n != len(want) {
		t.Fatalf("a has %d memories after importing its satellite's export, want %d", n, len(want))
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// openPTY opens a pseudo-terminal pair (Linux /dev/ptmx) with no library: the master to read
// what a process writes to the terminal, the slave to hand it as that process's stderr.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening /dev/ptmx (a terminal is needed to test the progress bar): %v", err)
	}
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatalf("unlocking the pty: %v", e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatalf("reading the pty number: %v", e)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening the pty's terminal: %v", err)
	}
	return m, s
}

// TestExchangeProgressBarOnATerminal: with stderr a terminal, export and import draw a bar
// there and the summary still goes to stdout; without a terminal (TestExportImport) stderr
// has no bar.
func TestExchangeProgressBarOnATerminal(t *testing.T) {
	d := NewDaemon(t, "bar", nil)
	d.Start()
	file := filepath.Join(t.TempDir(), "m.jsonl")
	var b strings.Builder
	b.WriteString(`{"format":"crow-memories","version":1}` + "\n")
	for i := range 600 { // more than one page and batch
		fmt.Fprintf(&b, `{"id":"01JDQ7Z3K5M8N9P0Q1R%07d","content":"memory %d","tags":[]}`+"\n", i, i)
	}
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (stdout, terminal string) {
		master, slave := openPTY(t)
		defer master.Close()
		cmd := exec.Command(crowBin, args...)
		cmd.Env = d.env()
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, slave
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		slave.Close() // the child holds it now: reading ends when it exits
		var term bytes.Buffer
		copied := make(chan struct{})
		go func() { _, _ = io.Copy(&term, master); close(copied) }()
		if err := cmd.Wait(); err != nil {
			t.Fatalf("crow %s: %v\nstdout %s\nterminal %s", strings.Join(args, " "), err, out.String(), term.String())
		}
		<-copied
		return out.String(), term.String()
	}
	out, term := run("memory", "import", file)
	if !strings.Contains(out, "imported 600 memories") || !strings.Contains(term, "importing") || !strings.Contains(term, "/600, ") {
		t.Fatalf("import: stdout %q\nterminal %q", out, term)
	}
	out, term = run("memory", "export", "--out", filepath.Join(t.TempDir(), "e.jsonl"))
	if !strings.Contains(out, "exported 600 memories") || !strings.Contains(term, "exporting") {
		t.Fatalf("export: stdout %q\nterminal %q", out, term)
	}
}
