// Command crow is the crow daemon and its command-line client. Each subcommand
// lives in its own file; this one only dispatches.
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

// bind adds the global flags to fs so they are accepted after the subcommand too.
func (g *globals) bind(fs *flag.FlagSet) {
	fs.StringVar(&g.home, "home", g.home, "data directory (default $CROW_HOME or ~/.crow)")
	fs.BoolVar(&g.json, "json", g.json, "print machine-readable JSON")
}

// usageError marks errors caused by how the command was called.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// parseArgs parses flags anywhere among args (not only before the first
// positional argument) and returns the positionals.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, usageError{flagUsage(fs)}
			}
			return nil, usagef("%s: %v", fs.Name(), err)
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

func flagUsage(fs *flag.FlagSet) string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage of %s:", fs.Name())
	fs.VisitAll(func(f *flag.Flag) { fmt.Fprintf(&b, " --%s (%s)", f.Name, f.Usage) })
	return b.String()
}

func mainUsage() string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("usage: crow [--home DIR] <command> [args]\n\ncommands:\n")
	for _, n := range names {
		fmt.Fprintf(&b, "  %-10s %s\n", n, commands[n].summary)
	}
	return b.String()
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	g := &globals{stdout: stdout, stderr: stderr, stdin: stdin}
	fs := flag.NewFlagSet("crow", flag.ContinueOnError)
	g.bind(fs)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, mainUsage())
			return nil
		}
		return usagef("%v", err)
	}
	rest := fs.Args()
	if len(rest) == 0 {
		fmt.Fprint(stderr, mainUsage())
		return usagef("no command given")
	}
	name := rest[0]
	if name == "help" {
		fmt.Fprint(stdout, mainUsage())
		return nil
	}
	if name == "version" {
		fmt.Fprintln(stdout, "crow", version)
		return nil
	}
	cmd, ok := commands[name]
	if !ok {
		return usagef("unknown command %q (run 'crow help')", name)
	}
	return cmd.run(ctx, g, rest[1:])
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		msg := strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; ")
		fmt.Fprintln(os.Stderr, "crow:", msg)
		var ue usageError
		if errors.As(err, &ue) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}
