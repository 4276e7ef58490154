// Command crow is the crow daemon and its command-line client. Each subcommand
// lives in its own file; this one only dispatches.
//
// Adding a command:
//
//   - register(name, summary, run) in the file's init. run parses its own
//     flags: a flag.FlagSet of its own named after the command ("doctor", or
//     "config set" for a subcommand), g.bind(fs) for --home and --json, then
//     parseArgs(fs, args) before it does anything else. parseArgs answers
//     --help/-h with the help built from fs (usage line, summary, every flag
//     with its default) on stdout and exit 0, and returns a usage error
//     (exit 2, with a hint) for an unknown flag; usagef(...) is any other
//     usage error (a missing argument).
//   - A command with subcommands (crow NAME SUB ...) also gets its entry in
//     subcommands (subcommands.go): the name, arguments and summary of each
//     SUB. dispatch then answers `crow NAME --help` and `crow help NAME`,
//     refuses an unknown SUB before calling run, and completion offers the
//     SUBs; checkArgs(fs.Name(), pos) checks the positionals against the
//     arguments listed there. A command without subcommands may get its
//     arguments in synopses there.
//   - Nothing else: a command registered only with register is listed by
//     `crow help` and completed by name; its flags are completed and shown in
//     its help from its own FlagSet (completion asks run for its --help, which
//     is why parseArgs must come first in run). Until a command with
//     subcommands has its entry, `crow NAME --help` prints its summary and the
//     usage error its run returns (exit 0).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	// Its init gives the heap of `crow serve` transparent huge pages where
	// the system's THP mode is "madvise" (see the package).
	_ "github.com/crow-sync/crow/internal/hugeheap"
)

// version is stamped by the build (-ldflags "-X main.version=…").
var version = "0.1.0-dev"

// command is one top-level subcommand.
type command struct {
	summary string
	run     func(ctx context.Context, g *globals, args []string) error
}

var commands = map[string]command{}

func register(name, summary string, run func(ctx context.Context, g *globals, args []string) error) {
	commands[name] = command{summary: summary, run: run}
}

// globals are the flags every command accepts.
type globals struct {
	home   string
	json   bool
	stdout io.Writer
	stderr io.Writer
	stdin  io.Reader
}

// globalFlags are the names bind adds; help lists them apart.
var globalFlags = map[string]bool{"home": true, "json": true}

// bind adds the global flags to fs so they are accepted after the subcommand too.
func (g *globals) bind(fs *flag.FlagSet) {
	fs.StringVar(&g.home, "home", g.home, "data directory (default $CROW_HOME or ~/.crow)")
	fs.BoolVar(&g.json, "json", g.json, "print machine-readable JSON")
}

// usageError marks errors caused by how the command was called (exit 2).
// hint says where to read the usage.
type usageError struct{ msg, hint string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{msg: fmt.Sprintf(format, args...)} }

// helpRequest is what parseArgs returns for --help: not a failure, the help
// to print on stdout (run prints it and returns nil). fs is the flag set it
// describes (completion reads its flags).
type helpRequest struct {
	text string
	fs   *flag.FlagSet
}

func (h helpRequest) Error() string { return "help requested" }

// parseArgs parses flags anywhere among args (not only before the first
// positional argument) and returns the positionals. --help or -h returns a
// helpRequest.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, helpRequest{text: flagHelp(fs), fs: fs}
			}
			return nil, usagef("%s: %s", fs.Name(), flagError(err))
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if rest[0] == "--" {
			return append(pos, rest[1:]...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// flagError rewords the flag package's errors with the flags spelled as
// the help spells them (--name).
func flagError(err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return "unknown flag --" + strings.TrimPrefix(name, "-")
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return "flag --" + strings.TrimPrefix(name, "-") + " needs a value"
	}
	return strings.Replace(msg, " for flag -", " for flag --", 1)
}

func mainUsage() string {
	names := make([]string, 0, len(commands))
	width := 10
	for n := range commands {
		names = append(names, n)
		width = max(width, len(n))
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("usage: crow [--home DIR] [--json] COMMAND [args] [flags]\n\ncommands:\n")
	for _, n := range names {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, n, commands[n].summary)
	}
	b.WriteString("\nRun 'crow COMMAND --help' (or 'crow help COMMAND') for a command's arguments and flags.\n" +
		"Global flags, accepted before or after the command: --home DIR (default $CROW_HOME or ~/.crow), --json.\n" +
		"crow --version prints the version; crow completion bash|zsh|fish a shell completion script.\n")
	return b.String()
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	g := &globals{stdout: stdout, stderr: stderr, stdin: stdin}
	fs := flag.NewFlagSet("crow", flag.ContinueOnError)
	g.bind(fs)
	showVersion := fs.Bool("version", false, "print the version")
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, mainUsage())
			return nil
		}
		return usageError{msg: flagError(err), hint: "run 'crow help' for usage"}
	}
	rest := fs.Args()
	if *showVersion {
		return dispatch(ctx, g, append([]string{"version"}, rest...))
	}
	if len(rest) == 0 {
		return usageError{msg: "no command given", hint: "run 'crow help' for the commands"}
	}
	return dispatch(ctx, g, rest)
}

// dispatch runs the command args[0] with the rest of args.
func dispatch(ctx context.Context, g *globals, args []string) error {
	name, args := args[0], args[1:]
	if name == "help" {
		return help(ctx, g, args)
	}
	cmd, ok := commands[name]
	if !ok {
		return usageError{msg: fmt.Sprintf("unknown command %q", name), hint: "run 'crow help' for the commands"}
	}
	path := name
	if subs := subcommands[name]; subs != nil {
		// Global flags may come between the command and its subcommand.
		fs := flag.NewFlagSet(name, flag.ContinueOnError)
		g.bind(fs)
		fs.SetOutput(io.Discard)
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprint(g.stdout, groupHelp(name))
				return nil
			}
			return usageError{msg: name + ": " + flagError(err), hint: fmt.Sprintf("run 'crow %s --help' for usage", name)}
		}
		args = fs.Args()
		hint := fmt.Sprintf("run 'crow %s --help' for its commands", name)
		if len(args) == 0 {
			return usageError{msg: fmt.Sprintf("crow %s needs a command: %s", name, subNames(subs)), hint: hint}
		}
		if args[0] == "help" {
			if len(args) == 1 {
				fmt.Fprint(g.stdout, groupHelp(name))
				return nil
			}
			return dispatch(ctx, g, []string{name, args[1], "--help"})
		}
		if findSub(subs, args[0]) == nil {
			return usageError{msg: fmt.Sprintf("unknown %s command %q: use %s", name, args[0], subNames(subs)), hint: hint}
		}
		path += " " + args[0]
	}
	err := cmd.run(ctx, g, args)
	var h helpRequest
	if errors.As(err, &h) {
		fmt.Fprint(g.stdout, h.text)
		return nil
	}
	var ue usageError
	if errors.As(err, &ue) && len(args) == 1 && (args[0] == "--help" || args[0] == "-h") {
		// A command with subcommands not (yet) in subcommands: its summary
		// and its own usage message are its help.
		fmt.Fprintf(g.stdout, "usage: crow %s COMMAND [args] [flags]\n\n%s\n\n%s\n", name, cmd.summary, ue.msg)
		return nil
	}
	if errors.As(err, &ue) && ue.hint == "" {
		ue.hint = fmt.Sprintf("run 'crow %s --help' for usage", path)
		return ue
	}
	return err
}

// help is `crow help [COMMAND [SUB]]`: the help of the command, as its
// --help prints it.
func help(ctx context.Context, g *globals, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(g.stdout, mainUsage())
		return nil
	}
	if args[0] == "help" || args[0] == "--help" || args[0] == "-h" {
		fmt.Fprint(g.stdout, mainUsage())
		return nil
	}
	if len(args) > 2 {
		return usageError{msg: "usage: crow help [COMMAND [SUBCOMMAND]]", hint: "run 'crow help' for the commands"}
	}
	return dispatch(ctx, g, append(args, "--help"))
}

// signalContext is done at the first SIGINT or SIGTERM, which begins a clean
// stop. From then on SIGINT has its default action again: a second Ctrl-C ends
// a stop that hangs at once (every acknowledged write is already on disk). A
// later SIGTERM is still taken as the stop already under way: a supervisor such
// as crow demo, whose children get the terminal's Ctrl-C too, stops them with
// SIGTERM and waits for their clean exit.
func signalContext() (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		signal.Reset(os.Interrupt)
	}()
	return ctx, stop
}

func main() {
	if completing() {
		return
	}
	ctx, stop := signalContext()
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		msg := strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; ")
		// One line (scripts read it): the reason, and for a usage error the
		// hint to the help.
		var ue usageError
		if errors.As(err, &ue) {
			if ue.hint != "" {
				msg += " (" + ue.hint + ")"
			}
			fmt.Fprintln(os.Stderr, "crow:", msg)
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "crow:", msg)
		os.Exit(1)
	}
}
