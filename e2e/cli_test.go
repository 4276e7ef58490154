package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// cliRun runs the crow binary with args (and extra environment), its data
// directory an empty one of the test's, and returns its outputs and exit code.
func cliRun(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, crowBin, args...)
	cmd.Env = append(withoutEnv(os.Environ(), "COMP_LINE", "COMP_POINT"), append([]string{"CROW_HOME=" + filepath.Join(t.TempDir(), "home")}, env...)...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("crow %s: %v", strings.Join(args, " "), err)
	}
	return o.String(), e.String(), code
}

// listed is the first words of the lines under "commands:" in a help text.
func listed(help string) []string {
	var names []string
	in := false
	sc := bufio.NewScanner(strings.NewReader(help))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "commands:":
			in = true
		case in && strings.TrimSpace(line) == "":
			in = false
		case in:
			names = append(names, strings.Fields(line)[0])
		}
	}
	return names
}

// cliPaths is every command line the binary's own help lists: [CMD] for a
// command without subcommands, [CMD SUB] for each subcommand.
func cliPaths(t *testing.T) [][]string {
	out, _, code := cliRun(t, nil, "help")
	cmds := listed(out)
	if code != 0 || len(cmds) < 15 {
		t.Fatalf("crow help: exit %d, commands %v:\n%s", code, cmds, out)
	}
	var paths [][]string
	for _, c := range cmds {
		out, errOut, code := cliRun(t, nil, c, "--help")
		if code != 0 || errOut != "" || !strings.HasPrefix(out, "usage: crow "+c) {
			t.Errorf("crow %s --help: exit %d\nstdout: %s\nstderr: %s", c, code, out, errOut)
			continue
		}
		subs := listed(out)
		if len(subs) == 0 {
			paths = append(paths, []string{c})
		}
		for _, s := range subs {
			paths = append(paths, []string{c, s})
		}
	}
	return paths
}

// Every command and subcommand answers --help with its own help on stdout
// and exit 0, and an unknown flag with a one-line reason, a hint and exit 2.
func TestCLIHelpAndUsageErrors(t *testing.T) {
	paths := cliPaths(t)
	if !slices.ContainsFunc(paths, func(p []string) bool { return strings.Join(p, " ") == "memory add" }) {
		t.Fatalf("crow help does not lead to memory add: %v", paths)
	}
	for _, p := range paths {
		line := strings.Join(p, " ")
		out, errOut, code := cliRun(t, nil, append(p, "--help")...)
		if code != 0 || errOut != "" || !strings.HasPrefix(out, "usage: crow "+line) || !strings.Contains(out, "--home") {
			t.Errorf("crow %s --help: exit %d\nstdout: %s\nstderr: %s", line, code, out, errOut)
		}
		out, errOut, code = cliRun(t, nil, append(p, "--no-such-flag")...)
		want := fmt.Sprintf("crow: %s: unknown flag --no-such-flag (run 'crow %s --help' for usage)\n", line, line)
		if code != 2 || out != "" || errOut != want {
			t.Errorf("crow %s --no-such-flag: exit %d\nstdout: %q\nstderr: %q, want %q", line, code, out, errOut, want)
		}
	}

	// Each subcommand's help has its own flags with their defaults, and not
	// another's.
	for _, c := range []struct {
		args      []string
		want, not []string
	}{
		{[]string{"memory", "add", "--help"}, []string{"--project", "--importance int", "--tags string", "(default: none)"}, []string{"--cursor", "--instances"}},
		{[]string{"memory", "add", "-h"}, []string{"--project"}, []string{"--cursor"}},
		{[]string{"help", "memory", "add"}, []string{"--project"}, []string{"--cursor"}},
		{[]string{"memory", "list", "--help"}, []string{"--cursor", "--limit int"}, []string{"--instances"}},
		{[]string{"memory", "search", "--help"}, []string{"--instances"}, []string{"--cursor"}},
		{[]string{"conflicts", "list", "--help"}, []string{"--unresolved", "(default: false)"}, nil},
		{[]string{"conflicts", "--help"}, []string{"list", "show ID", "resolve-all"}, nil},
		{[]string{"help", "memory"}, []string{"add CONTENT|-", "proof N", "import FILE|-"}, nil},
		{[]string{"memory", "--help"}, []string{"add CONTENT|-"}, nil},
		{[]string{"instance", "invite", "--help"}, []string{"--name", "--ttl", "(default: 1h)"}, nil},
		{[]string{"help"}, []string{"memory", "completion", "version"}, nil},
		{[]string{"--help"}, []string{"memory"}, nil},
	} {
		out, errOut, code := cliRun(t, nil, c.args...)
		if code != 0 || errOut != "" {
			t.Errorf("crow %s: exit %d, stderr %q", strings.Join(c.args, " "), code, errOut)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("crow %s lacks %q:\n%s", strings.Join(c.args, " "), w, out)
			}
		}
		for _, n := range c.not {
			if strings.Contains(out, n) {
				t.Errorf("crow %s has %q:\n%s", strings.Join(c.args, " "), n, out)
			}
		}
	}

	// Other usage errors: exit 2, the reason and a hint; a failure that is
	// not one (no daemon) exits 1.
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"memory", "get"}, 2, "crow: crow memory get needs ID|N (run 'crow memory get --help' for usage)\n"},
		{[]string{"memory", "list", "extra"}, 2, "crow: crow memory list takes no arguments, got \"extra\" (run 'crow memory list --help' for usage)\n"},
		{[]string{"memory", "nope"}, 2, "crow: unknown memory command \"nope\": use add, get, list, search, update, delete, forget, proof, export, import (run 'crow memory --help' for its commands)\n"},
		{[]string{"conflicts"}, 2, "crow: crow conflicts needs a command: list, show, keep, restore, resolve-all (run 'crow conflicts --help' for its commands)\n"},
		{[]string{"nope"}, 2, "crow: unknown command \"nope\" (run 'crow help' for the commands)\n"},
		{nil, 2, "crow: no command given (run 'crow help' for the commands)\n"},
		{[]string{"memory", "list"}, 1, ""},
	} {
		out, errOut, code := cliRun(t, nil, c.args...)
		if code != c.code || out != "" || (c.want != "" && errOut != c.want) || !strings.HasPrefix(errOut, "crow: ") {
			t.Errorf("crow %s: exit %d (want %d)\nstdout: %q\nstderr: %q, want %q", strings.Join(c.args, " "), code, c.code, out, errOut, c.want)
		}
	}
}

// crow version reports the build info of the binary: what go version -m
// reads from it (the VCS revision where the build stamped one; cmd/crow's
// TestVersionFromBuildInfo reads a stamped build info).
func TestCLIVersion(t *testing.T) {
	type info struct {
		Version       string `json:"version"`
		ModuleVersion string `json:"module_version"`
		VCSRevision   string `json:"vcs_revision"`
		VCSTime       string `json:"vcs_time"`
		VCSModified   *bool  `json:"vcs_modified"`
		GoVersion     string `json:"go_version"`
		OS            string `json:"os"`
		Arch          string `json:"arch"`
	}
	versionOf := func(bin string) (info, map[string]string) {
		t.Helper()
		out, err := exec.Command(bin, "version", "--json").Output()
		if err != nil {
			t.Fatalf("%s version --json: %v", bin, err)
		}
		var v info
		var keys map[string]any
		if err := json.Unmarshal(out, &v); err != nil || json.Unmarshal(out, &keys) != nil {
			t.Fatalf("crow version --json: %v\n%s", err, out)
		}
		for _, k := range []string{"version", "module_version", "vcs_revision", "vcs_time", "vcs_modified", "go_version", "os", "arch"} {
			if _, ok := keys[k]; !ok {
				t.Errorf("crow version --json has no %q:\n%s", k, out)
			}
		}
		// What the toolchain says is in the binary.
		mout, err := exec.Command("go", "version", "-m", bin).Output()
		if err != nil {
			t.Fatalf("go version -m: %v", err)
		}
		m := map[string]string{}
		for _, line := range strings.Split(string(mout), "\n") {
			f := strings.Fields(line)
			switch {
			case len(f) >= 3 && f[0] == "mod":
				m["mod"] = f[2]
			case len(f) >= 2 && f[0] == "build":
				if k, val, ok := strings.Cut(f[1], "="); ok {
					m[k] = val
				}
			case strings.HasPrefix(line, bin+": "):
				m["go"] = strings.TrimPrefix(line, bin+": ")
			}
		}
		return v, m
	}

	v, m := versionOf(crowBin)
	rev := m["vcs.revision"]
	if rev == "" {
		rev = "unknown"
	}
	if tm, ok := m["vcs.time"]; ok && v.VCSTime != tm {
		rev = "vcs.time " + tm + " differs"
	}
	if mod, ok := m["vcs.modified"]; ok && (v.VCSModified == nil || fmt.Sprint(*v.VCSModified) != mod) {
		rev = "vcs.modified " + mod + " differs"
	}
	if v.GoVersion == "" || v.GoVersion != m["go"] || v.ModuleVersion != m["mod"] || v.VCSRevision != rev || v.Version == "" || v.OS == "" || v.Arch == "" {
		t.Errorf("crow version --json = %+v; the binary's build info: %v", v, m)
	}
	out, _, code := cliRun(t, nil, "--version")
	if code != 0 || !strings.HasPrefix(out, "crow "+v.Version+"\n") || !strings.Contains(out, v.GoVersion+" "+v.OS+"/"+v.Arch) {
		t.Errorf("crow --version: exit %d\n%s", code, out)
	}
	if text, _, code := cliRun(t, nil, "version"); code != 0 || text != out {
		t.Errorf("crow version: exit %d\n%s\nwant what crow --version prints:\n%s", code, text, out)
	}
}

// crow completion bash|zsh|fish writes a script calling this binary back;
// the binary answers the completion protocol (COMP_LINE, COMP_POINT) with
// commands, subcommands and each subcommand's own flags.
func TestCLICompletion(t *testing.T) {
	dir := t.TempDir()
	for _, shell := range []string{"bash", "zsh", "fish"} {
		out, errOut, code := cliRun(t, nil, "completion", shell)
		if code != 0 || errOut != "" || !strings.Contains(out, crowBin) {
			t.Fatalf("crow completion %s: exit %d\n%s\n%s", shell, code, out, errOut)
		}
		os.WriteFile(filepath.Join(dir, shell), []byte(out), 0o600)
	}
	script := filepath.Join(dir, "bash")
	if out, err := exec.Command("bash", "-n", script).CombinedOutput(); err != nil {
		t.Fatalf("bash -n on crow completion bash: %v\n%s", err, out)
	}
	out, err := exec.Command("bash", "-c", "source "+script+" && complete -p crow").CombinedOutput()
	if err != nil || !strings.Contains(string(out), crowBin) || !strings.HasPrefix(string(out), "complete ") || !strings.HasSuffix(strings.TrimSpace(string(out)), " crow") {
		t.Fatalf("bash: source <(crow completion bash); complete -p crow: %v\n%s", err, out)
	}

	for _, c := range []struct {
		line      string
		want, not []string
	}{
		{"crow mem", []string{"memory"}, nil},
		{"crow memory a", []string{"add"}, nil},
		{"crow memory add --pro", []string{"--project"}, nil},
		{"crow memory add --", []string{"--project", "--tags", "--home", "--json"}, []string{"--cursor", "--instances"}},
		{"crow memory list --cu", []string{"--cursor"}, nil},
		{"crow conflicts ", []string{"list", "show", "resolve-all"}, nil},
		{"crow conflicts list --un", []string{"--unresolved"}, nil},
		{"crow --home /tmp memory se", []string{"search"}, nil},
		{"crow completion ", []string{"bash", "zsh", "fish"}, nil},
		{"crow help sta", []string{"state"}, nil},
		{"crow serve --sync-l", []string{"--sync-listen"}, nil},
	} {
		// The cursor at the end, or mid-line (what follows it is ignored).
		for _, tail := range []string{"", " trailing words"} {
			got, errOut, code := cliRun(t, []string{"COMP_LINE=" + c.line + tail, fmt.Sprintf("COMP_POINT=%d", len(c.line))})
			lines := strings.Split(strings.TrimSpace(got), "\n")
			if code != 0 || errOut != "" {
				t.Errorf("completing %q: exit %d, stderr %q", c.line+tail, code, errOut)
			}
			for _, w := range c.want {
				if !slices.Contains(lines, w) {
					t.Errorf("completing %q: %q not among %q", c.line+tail, w, lines)
				}
			}
			for _, n := range c.not {
				if slices.Contains(lines, n) {
					t.Errorf("completing %q: %q among %q", c.line+tail, n, lines)
				}
			}
		}
	}
}

// crow state apply exits 1 when an op was rejected and says which (index,
// op, reason) on stderr, with --json too; 0 when every op applied.
func TestCLIStateApplyRejected(t *testing.T) {
	home := NewDaemon(t, "home", nil)
	home.Start()
	dir := t.TempDir()
	write := func(name, ops string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(ops), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", `[{"op":"set_focus","focus":"the CLI"}]`)
	bad := write("bad.json", `[{"op":"bogus"}, {"op": "set_phase"}]`)
	mixed := write("mixed.json", `{"ops": [{"op":"set_focus","focus":"again"}, {"op":"bogus"}]}`)

	if out := home.MustCLI("state", "apply", "cli", good); !strings.Contains(out, "cli version 1 (1 ops applied)") {
		t.Fatalf("crow state apply of a valid op:\n%s", out)
	}
	out, errOut, err := home.CLI("state", "apply", "cli", bad)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(out, "no op applied: cli stays at version 1") ||
		!strings.HasPrefix(errOut, "crow: 2 of the ops were rejected; op 0 {\"op\":\"bogus\"}: ") || !strings.Contains(errOut, `; op 1 {"op":"set_phase"}: `) ||
		strings.Count(errOut, "\n") != 1 {
		t.Fatalf("crow state apply, every op rejected: %v\nstdout: %s\nstderr: %s", err, out, errOut)
	}
	out, errOut, err = home.CLI("state", "apply", "cli", mixed, "--json")
	var res struct {
		Version  uint64 `json:"version"`
		Rejected []struct {
			Index int    `json:"index"`
			Error string `json:"error"`
		} `json:"rejected"`
	}
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || json.Unmarshal([]byte(out), &res) != nil || res.Version != 2 ||
		len(res.Rejected) != 1 || res.Rejected[0].Index != 1 || !strings.Contains(errOut, `1 of the ops were rejected; op 1 {"op":"bogus"}: `+res.Rejected[0].Error) {
		t.Fatalf("crow state apply --json, one op rejected: %v\nstdout: %s\nstderr: %s", err, out, errOut)
	}
}
