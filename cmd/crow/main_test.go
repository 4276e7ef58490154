package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
)

// paths is every command line of the table: [CMD] for a command without
// subcommands, [CMD SUB] for each subcommand.
func paths(t *testing.T) [][]string {
	t.Helper()
	var out [][]string
	for _, name := range commandNames() {
		subs := subcommands[name]
		if subs == nil {
			out = append(out, []string{name})
		}
		for _, s := range subs {
			out = append(out, []string{name, s.name})
		}
	}
	if len(out) < 40 {
		t.Fatalf("only %d command lines: is the table registered?", len(out))
	}
	return out
}

func runCLI(args ...string) (stdout, stderr string, err error) {
	var o, e bytes.Buffer
	err = run(context.Background(), args, strings.NewReader(""), &o, &e)
	return o.String(), e.String(), err
}

// Each subcommand the table lists is one the code handles, with a flag set
// of its own named after it (so its help and completion are its own).
func TestEverySubcommandHasItsOwnFlagSet(t *testing.T) {
	for _, p := range paths(t) {
		fs := probeFlags(commands[p[0]], p[1:])
		if fs == nil {
			t.Errorf("crow %s: no flag set answers --help", strings.Join(p, " "))
			continue
		}
		if fs.Name() != strings.Join(p, " ") {
			t.Errorf("crow %s: its flag set is named %q", strings.Join(p, " "), fs.Name())
		}
		if fs.Lookup("home") == nil || fs.Lookup("json") == nil {
			t.Errorf("crow %s: no --home/--json", strings.Join(p, " "))
		}
	}
}

func TestHelpOnStdout(t *testing.T) {
	for _, p := range paths(t) {
		for _, h := range []string{"--help", "-h"} {
			out, errOut, err := runCLI(append(p, h)...)
			if err != nil || errOut != "" || !strings.HasPrefix(out, "usage: crow "+strings.Join(p, " ")) {
				t.Errorf("crow %s %s: err=%v stderr=%q stdout=%q", strings.Join(p, " "), h, err, errOut, out)
			}
		}
		if out, _, err := runCLI(append([]string{"help"}, p...)...); err != nil || !strings.HasPrefix(out, "usage: crow "+strings.Join(p, " ")) {
			t.Errorf("crow help %s: err=%v stdout=%q", strings.Join(p, " "), err, out)
		}
	}
	for name := range subcommands {
		for _, args := range [][]string{{name, "--help"}, {"help", name}, {name, "help"}} {
			out, _, err := runCLI(args...)
			if err != nil || !strings.HasPrefix(out, "usage: crow "+name+" COMMAND") {
				t.Errorf("crow %s: err=%v stdout=%q", strings.Join(args, " "), err, out)
			}
			for _, s := range subcommands[name] {
				if !strings.Contains(out, "  "+s.name+" ") {
					t.Errorf("crow %s does not list %s:\n%s", strings.Join(args, " "), s.name, out)
				}
			}
		}
	}
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}, {"help", "help"}} {
		if out, _, err := runCLI(args...); err != nil || !strings.Contains(out, "commands:") || !strings.Contains(out, "  memory ") {
			t.Errorf("crow %s: err=%v stdout=%q", strings.Join(args, " "), err, out)
		}
	}
}

func TestHelpShowsOwnFlagsWithDefaults(t *testing.T) {
	for _, c := range []struct {
		args      []string
		want, not []string
	}{
		{[]string{"memory", "add"}, []string{"--project string", "--importance int", "--tags string", "comma-separated tags (default: none)", "--json"}, []string{"--cursor", "--instances", "--limit", "--content"}},
		{[]string{"memory", "list"}, []string{"--cursor", "--limit int", "(0: the daemon's default)"}, []string{"--instances", "--content"}},
		{[]string{"memory", "search"}, []string{"--instances", "--limit"}, []string{"--cursor"}},
		{[]string{"conflicts", "list"}, []string{"--table", "only unresolved conflicts (default: false)"}, nil},
		{[]string{"conflicts", "show"}, nil, []string{"--table", "--unresolved"}},
		{[]string{"state", "apply"}, []string{"--until int"}, nil},
		{[]string{"state", "show"}, nil, []string{"--until"}},
		{[]string{"instance", "invite"}, []string{"--name string", "--ttl string", "(1m to 168h) (default: 1h)"}, nil},
		{[]string{"identity", "show"}, nil, []string{"--out"}},
		{[]string{"audit"}, []string{"--page int", "(default: 5000)"}, nil},
		{[]string{"verify"}, []string{"--max-pending duration", "(default: 10m0s)"}, nil},
	} {
		out, _, err := runCLI(append(c.args, "--help")...)
		if err != nil {
			t.Fatalf("crow %v --help: %v", c.args, err)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("crow %s --help lacks %q:\n%s", strings.Join(c.args, " "), w, out)
			}
		}
		for _, n := range c.not {
			if strings.Contains(out, n) {
				t.Errorf("crow %s --help has %q:\n%s", strings.Join(c.args, " "), n, out)
			}
		}
	}
}

func TestUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args      []string
		msg, hint string
	}{
		{[]string{"memory", "add", "--cursor", "x", "text"}, "memory add: unknown flag --cursor", "run 'crow memory add --help' for usage"},
		{[]string{"memory", "get"}, "crow memory get needs ID|N", "run 'crow memory get --help' for usage"},
		{[]string{"memory", "list", "extra"}, "crow memory list takes no arguments", "run 'crow memory list --help' for usage"},
		{[]string{"memory"}, "crow memory needs a command", "run 'crow memory --help' for its commands"},
		{[]string{"memory", "nope"}, `unknown memory command "nope"`, "run 'crow memory --help' for its commands"},
		{[]string{"conflicts", "list", "--table"}, "conflicts list: flag --table needs a value", "run 'crow conflicts list --help' for usage"},
		{[]string{"state", "apply", "p"}, "crow state apply needs NAME FILE|-", "run 'crow state apply --help' for usage"},
		{[]string{"audit", "--page", "x"}, `invalid value "x" for flag --page`, "run 'crow audit --help' for usage"},
		{[]string{"nope"}, `unknown command "nope"`, "run 'crow help' for the commands"},
		{[]string{"--nope"}, "unknown flag --nope", "run 'crow help' for usage"},
		{nil, "no command given", "run 'crow help' for the commands"},
		{[]string{"help", "nope"}, `unknown command "nope"`, "run 'crow help' for the commands"},
		{[]string{"completion", "tcsh"}, `unknown completion command "tcsh"`, "run 'crow completion --help' for its commands"},
	} {
		out, _, err := runCLI(c.args...)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(ue.msg, c.msg) || ue.hint != c.hint || out != "" {
			t.Errorf("crow %s: err=%#v stdout=%q; want a usage error %q with hint %q", strings.Join(c.args, " "), err, out, c.msg, c.hint)
		}
	}
}

// Global flags are taken before the command, between it and its
// subcommand, and after.
func TestGlobalFlagsAnywhere(t *testing.T) {
	dir := t.TempDir() + "/none"
	for _, args := range [][]string{
		{"--home", dir, "memory", "list"},
		{"memory", "--home", dir, "list"},
		{"memory", "list", "--home", dir},
		{"--json", "memory", "--home=" + dir, "list", "--json"},
	} {
		_, _, err := runCLI(args...)
		if err == nil || !strings.Contains(err.Error(), dir) {
			t.Errorf("crow %s: %v; want the daemon of %s not found", strings.Join(args, " "), err, dir)
		}
	}
}

func TestCheckArgs(t *testing.T) {
	for _, c := range []struct {
		name string
		n    int
		ok   bool
	}{
		{"memory add", 1, true}, {"memory add", 0, false}, {"memory add", 2, false},
		{"state apply", 2, true}, {"state apply", 1, false},
		{"memory list", 0, true}, {"memory list", 1, false},
		{"audit", 0, true}, {"audit", 1, true}, {"audit", 2, false},
	} {
		err := checkArgs(c.name, make([]string, c.n))
		if (err == nil) != c.ok {
			t.Errorf("checkArgs(%q, %d args) = %v", c.name, c.n, err)
		}
	}
}

// A command added with register alone (as doctor, config or mcp are) gets
// its help from its own flag set, its flags completed, and --help exits 0
// even when it has subcommands the table does not list yet.
func TestRegisterOnly(t *testing.T) {
	register("zz-leaf", "a leaf added with register only", func(ctx context.Context, g *globals, args []string) error {
		fs := flag.NewFlagSet("zz-leaf", flag.ContinueOnError)
		g.bind(fs)
		fs.Int("level", 3, "how deep")
		_, err := parseArgs(fs, args)
		return err
	})
	register("zz-group", "a group added with register only (show|set)", func(ctx context.Context, g *globals, args []string) error {
		if len(args) == 0 || (args[0] != "show" && args[0] != "set") {
			return usagef("usage: crow zz-group show|set KEY VALUE")
		}
		return nil
	})
	t.Cleanup(func() { delete(commands, "zz-leaf"); delete(commands, "zz-group") })

	out, _, err := runCLI("zz-leaf", "--help")
	if err != nil || !strings.Contains(out, "usage: crow zz-leaf [flags]\n\na leaf added with register only\n") || !strings.Contains(out, "--level int  how deep (default: 3)") {
		t.Errorf("crow zz-leaf --help: %v\n%s", err, out)
	}
	if flags := (compNode{path: []string{"zz-leaf"}}).FlagList(); !slices.Contains(flags, "level") || !slices.Contains(flags, "home") {
		t.Errorf("completion of zz-leaf's flags: %v", flags)
	}
	if names := (compNode{}).SubCmdList(); !slices.Contains(names, "zz-leaf") || !slices.Contains(names, "zz-group") {
		t.Errorf("completion of the commands: %v", names)
	}
	if out, _, err := runCLI("help"); err != nil || !strings.Contains(out, "zz-group") {
		t.Errorf("crow help: %v\n%s", err, out)
	}
	out, _, err = runCLI("zz-group", "--help")
	if err != nil || !strings.Contains(out, "a group added with register only (show|set)") || !strings.Contains(out, "usage: crow zz-group show|set KEY VALUE") {
		t.Errorf("crow zz-group --help: %v\n%s", err, out)
	}
	var ue usageError
	if _, _, err := runCLI("zz-leaf", "--nope"); !errors.As(err, &ue) || ue.hint != "run 'crow zz-leaf --help' for usage" {
		t.Errorf("crow zz-leaf --nope: %#v", err)
	}
}

func TestVersionFromBuildInfo(t *testing.T) {
	v := versionFrom(&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/crow-sync/crow", Version: "v0.0.0-20261202041503-296a27d69060+dirty"},
		Settings: []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "296a27d690606f2918bf844b6544467020737692"},
			{Key: "vcs.time", Value: "2026-12-02T04:15:03Z"}, {Key: "vcs.modified", Value: "true"}}})
	if v.ModuleVersion != "v0.0.0-20261202041503-296a27d69060+dirty" || v.VCSRevision != "296a27d690606f2918bf844b6544467020737692" ||
		v.VCSTime != "2026-12-02T04:15:03Z" || v.VCSModified == nil || !*v.VCSModified || v.GoVersion != "go1.26.8" || v.Version != version {
		t.Errorf("versionFrom = %+v", v)
	}
	// go run, -buildvcs=false: no VCS settings.
	v = versionFrom(&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/crow-sync/crow", Version: "(devel)"}})
	if v.ModuleVersion != "(devel)" || v.VCSRevision != "unknown" || v.VCSTime != "unknown" || v.VCSModified != nil {
		t.Errorf("versionFrom without VCS = %+v", v)
	}
	if v := versionFrom(nil); v.ModuleVersion != "unknown" || v.GoVersion == "" || v.OS == "" || v.Arch == "" {
		t.Errorf("versionFrom(nil) = %+v", v)
	}
}
