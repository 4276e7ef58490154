package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/posener/complete/v2"
	"github.com/posener/complete/v2/predict"
)

func init() {
	register("completion", "a shell completion script for commands, subcommands and flags (bash|zsh|fish)", runCompletion)
}

// The scripts make the shell call this binary with COMP_LINE and COMP_POINT
// set (posener/complete's protocol); main answers with the candidates, one
// a line (completing).
const (
	bashScript = `# crow completion for bash: source <(crow completion bash)
# (or write it to ~/.local/share/bash-completion/completions/crow)
complete -o default -C %[1]s crow
`
	zshScript = `# crow completion for zsh: source <(crow completion zsh)
autoload -U +X bashcompinit && bashcompinit
complete -o nospace -C %[1]s crow
`
	fishScript = `# crow completion for fish: crow completion fish | source
# (or write it to ~/.config/fish/completions/crow.fish)
function __complete_crow
    set -lx COMP_LINE (commandline -cp)
    test -z (commandline -ct)
    and set COMP_LINE "$COMP_LINE "
    set -lx COMP_POINT (string length -- "$COMP_LINE")
    %[1]s
end
complete -f -c crow -a "(__complete_crow)"
`
)

func runCompletion(ctx context.Context, g *globals, args []string) error {
	shell, args := args[0], args[1:] // run() checked it is one of subcommands["completion"]
	fs := flag.NewFlagSet("completion "+shell, flag.ContinueOnError)
	g.bind(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("crow completion %s takes no arguments", shell)
	}
	bin, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the crow binary: %w", err)
	}
	script := map[string]string{"bash": bashScript, "zsh": zshScript, "fish": fishScript}[shell]
	_, err = fmt.Fprintf(g.stdout, script, shellQuote(bin))
	return err
}

// completing answers a shell's completion request (COMP_LINE set) on
// stdout and exits; it returns false when there is none.
func completing() bool {
	line := os.Getenv("COMP_LINE")
	if line == "" {
		return false
	}
	if _, err := strconv.Atoi(os.Getenv("COMP_POINT")); err != nil {
		os.Setenv("COMP_POINT", strconv.Itoa(len(line)))
	}
	// The library also installs itself into shell rc files on these: never here.
	os.Unsetenv("COMP_INSTALL")
	os.Unsetenv("COMP_UNINSTALL")
	complete.Complete("crow", compNode{})
	return true
}

// compNode is the command line typed so far, for the completion library:
// path is nil (crow), [CMD] or [CMD SUB]; ["help", ...] completes the
// command names after crow help. value is set after a global flag that
// takes a value (--home DIR) typed before the subcommand.
type compNode struct {
	path  []string
	value bool
}

func (n compNode) target() []string {
	if len(n.path) > 0 && n.path[0] == "help" {
		return n.path[1:]
	}
	return n.path
}

func (n compNode) SubCmdList() []string {
	p := n.target()
	switch len(p) {
	case 0:
		if len(n.path) == 1 { // crow help ...
			return commandNames()
		}
		return append(commandNames(), "help")
	case 1:
		var names []string
		for _, s := range subcommands[p[0]] {
			names = append(names, s.name)
		}
		return names
	}
	return nil
}

func (n compNode) SubCmdGet(name string) complete.Completer {
	// Global flags before the subcommand (crow --home DIR memory ...) are
	// stepped over.
	if n.value {
		return compNode{path: n.path}
	}
	if strings.HasPrefix(name, "-") {
		flag, _, hasValue := strings.Cut(strings.TrimLeft(name, "-"), "=")
		if !globalFlags[flag] {
			return nil
		}
		return compNode{path: n.path, value: flag == "home" && !hasValue}
	}
	for _, s := range n.SubCmdList() {
		if s == name {
			return compNode{path: append(append([]string(nil), n.path...), name)}
		}
	}
	return nil
}

// FlagList is the flags of a command without subcommands, read from its own
// flag set.
func (n compNode) FlagList() []string {
	fs := n.flags()
	if fs == nil {
		return nil
	}
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return names
}

func (n compNode) FlagGet(name string) complete.Predictor {
	fs := n.flags()
	if fs == nil {
		return nil
	}
	f := fs.Lookup(name)
	switch {
	case f == nil:
		return nil
	case isBool(f):
		return predict.Nothing
	case name == "home" || name == "dir":
		return predict.Dirs("*")
	case name == "out" || name == "packet" || name == "import":
		return predict.Files("*")
	}
	return predict.Something // a value is typed here, not another flag
}

// ArgsGet predicts file names where the usage line takes a FILE.
func (n compNode) ArgsGet() complete.Predictor {
	p := n.target()
	if len(n.path) == 0 || len(p) == 0 || len(n.SubCmdList()) > 0 {
		return nil
	}
	args := synopses[p[0]]
	if len(p) > 1 {
		if s := findSub(subcommands[p[0]], p[1]); s != nil {
			args = s.args
		}
	}
	if strings.Contains(args, "FILE") {
		return predict.Files("*")
	}
	return nil
}

// flags is the flag set of n's command, asked from the command itself (its
// --help answer carries it); nil for a node with subcommands.
func (n compNode) flags() *flag.FlagSet {
	if len(n.path) == 0 || n.path[0] == "help" || len(n.SubCmdList()) > 0 {
		return nil
	}
	cmd, ok := commands[n.path[0]]
	if !ok {
		return nil
	}
	return probeFlags(cmd, n.path[1:])
}

// probeFlags runs cmd with args and --help, which answers before the command
// does anything, and returns the flag set the answer describes.
func probeFlags(cmd command, args []string) (fs *flag.FlagSet) {
	defer func() {
		if recover() != nil {
			fs = nil
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g := &globals{stdout: io.Discard, stderr: io.Discard, stdin: strings.NewReader("")}
	var h helpRequest
	if err := cmd.run(ctx, g, append(append([]string(nil), args...), "--help")); errors.As(err, &h) {
		return h.fs
	}
	return nil
}

func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

func commandNames() []string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
