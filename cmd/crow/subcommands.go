package main

import (
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
)

// sub is one subcommand of a command: crow CMD NAME ARGS.
type sub struct {
	name    string
	args    string // its arguments in the usage line, e.g. "ID|N"; flags are listed by its help
	summary string
}

// subcommands are the subcommands of each command that has some (see the
// comment at the top of main.go). Each one's flags are its own FlagSet's,
// declared where it runs.
var subcommands = map[string][]sub{
	"apikey": {
		{"rotate", "", "make a new owner API key; the old one stops working at once"},
	},
	"chain": {
		{"status", "", "the anchoring chain: head, contract, balance, roots, pending transactions"},
	},
	"completion": {
		{"bash", "", "a bash completion script: source <(crow completion bash)"},
		{"zsh", "", "a zsh completion script: source <(crow completion zsh)"},
		{"fish", "", "a fish completion script: crow completion fish | source"},
	},
	"conflicts": {
		{"list", "", "the sync conflicts, newest first"},
		{"show", "ID", "both versions of a conflict: the one kept and the one overwritten"},
		{"keep", "ID", "resolve a conflict by keeping the live version"},
		{"restore", "ID", "resolve a conflict by writing the overwritten version back as a new edit"},
		{"resolve-all", "", "keep the live version of every unresolved conflict"},
	},
	"identity": {
		{"show", "", "this instance's public identity: crow id, instance id, keys"},
		{"export", "", "the master seed as a passphrase-encrypted blob (on stdout or --out FILE)"},
		{"lock", "", "encrypt the seed at rest with a passphrase (the daemon stopped)"},
		{"unlock", "", "store the seed in clear again (the daemon stopped)"},
	},
	"instance": {
		{"invite", "", "a single-use invite that enrolls a new machine (crow init --join)"},
		{"add", "GATEWAY_URL", "register a peer by its gateway URL (e.g. http://100.64.0.2:3001)"},
		{"list", "", "the instances of this crow"},
		{"revoke", "ID", "revoke an instance: its key and tokens are refused everywhere"},
		{"promote", "", "make this satellite (holding the seed) the home"},
		{"reenroll", "", "give a forked copy a new identity (--join INVITE; none where the seed is held)"},
	},
	"memory": {
		{"add", "CONTENT|-", "add a memory (- reads the content from stdin)"},
		{"get", "ID|N", "a memory by id, or the exact version numbered N"},
		{"list", "", "memories, newest first, a page at a time"},
		{"search", "QUERY", "full-text search, here or on every instance (--instances)"},
		{"update", "ID", "edit a memory's content or fields"},
		{"delete", "ID", "delete a memory"},
		{"forget", "ID|N", "erase a memory's content on every instance (its data key is destroyed)"},
		{"proof", "N", "the proof of memory number N, step by step, against the chain"},
		{"export", "", "every live memory as crow JSONL (stdout or --out FILE)"},
		{"import", "FILE|-", "import crow JSONL, MCP memory.jsonl or a mem0 export"},
	},
	"state": {
		{"show", "NAME", "a project's newest consolidated state"},
		{"apply", "NAME FILE|-", "consolidate: apply the ops in FILE (a JSON array, or {\"ops\": [...]})"},
		{"projects", "", "the projects, with their memory counts and state versions"},
	},
	"sync": {
		{"status", "", "feeds held here and each peer's connection, lag and traffic (--watch: live rates and ETA)"},
		{"pause", "[ID|NAME]", "stop replicating with every peer, or with one instance; kept across restarts"},
		{"resume", "[ID|NAME]", "replicate again (no ID: with every peer)"},
	},
	"config": {
		{"show", "", "the effective configuration of crow serve and where each value came from"},
		{"set", "KEY VALUE", "set a key of $CROW_HOME/config.toml (checked; the daemon needs a restart)"},
		{"unset", "KEY", "remove a key from $CROW_HOME/config.toml"},
	},
	"service": {
		{"install", "", "write a hardened systemd unit (--user: a user unit) or a launchd agent"},
	},
}

// synopses are the positional arguments of commands without subcommands,
// for their usage line.
var synopses = map[string]string{
	"audit":   "[PROJECT]",
	"restore": "FILE",
	"verify":  "[NAME]",
}

func findSub(subs []sub, name string) *sub {
	for i := range subs {
		if subs[i].name == name {
			return &subs[i]
		}
	}
	return nil
}

func subNames(subs []sub) string {
	names := make([]string, len(subs))
	for i, s := range subs {
		names[i] = s.name
	}
	return strings.Join(names, ", ")
}

// groupHelp is the help of a command with subcommands.
func groupHelp(name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: crow %s COMMAND [args] [flags]\n\n%s\n\ncommands:\n", name, commands[name].summary)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, s := range subcommands[name] {
		fmt.Fprintf(tw, "  %s %s\t%s\n", s.name, s.args, s.summary)
	}
	tw.Flush()
	fmt.Fprintf(&b, "\nRun 'crow %s COMMAND --help' for the flags of each.\n", name)
	return b.String()
}

// flagHelp is the help of the command whose flag set is fs (named "CMD" or
// "CMD SUB"): its usage line, its summary, then each flag with its default.
func flagHelp(fs *flag.FlagSet) string {
	name := fs.Name()
	cmdName, subName, _ := strings.Cut(name, " ")
	summary, args := commands[cmdName].summary, synopses[cmdName]
	if s := findSub(subcommands[cmdName], subName); s != nil {
		summary, args = s.summary, s.args
	}
	var own, global []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) {
		if globalFlags[f.Name] {
			global = append(global, f)
		} else {
			own = append(own, f)
		}
	})
	var b strings.Builder
	b.WriteString("usage: crow " + name)
	if args != "" {
		b.WriteString(" " + args)
	}
	b.WriteString(" [flags]\n")
	if summary != "" {
		b.WriteString("\n" + summary + "\n")
	}
	if len(own) > 0 {
		b.WriteString("\nflags:\n")
		writeFlags(&b, own)
	}
	if len(global) > 0 {
		b.WriteString("\nglobal flags:\n")
		writeFlags(&b, global)
	}
	return b.String()
}

// writeFlags writes one line per flag: --name TYPE, its usage and its
// default (unless the usage already says it).
func writeFlags(b *strings.Builder, flags []*flag.Flag) {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	for _, f := range flags {
		typ, usage := flag.UnquoteUsage(f)
		left := "  --" + f.Name
		if typ != "" {
			left += " " + typ
		}
		if !strings.Contains(usage, "default") {
			usage += " (default: " + defaultText(f) + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\n", left, usage)
	}
	tw.Flush()
}

func defaultText(f *flag.Flag) string {
	if f.DefValue == "" {
		return "none"
	}
	if strings.ContainsAny(f.DefValue, " \t") {
		return fmt.Sprintf("%q", f.DefValue)
	}
	return f.DefValue
}

// checkArgs refuses positional arguments that do not fit the usage line of
// the command named name ("CMD" or "CMD SUB"): a usage error, before the
// command reaches for the daemon.
func checkArgs(name string, pos []string) error {
	cmdName, subName, _ := strings.Cut(name, " ")
	args := synopses[cmdName]
	if s := findSub(subcommands[cmdName], subName); s != nil {
		args = s.args
	}
	words := strings.Fields(args)
	least := 0
	for _, w := range words {
		if !strings.HasPrefix(w, "[") {
			least++
		}
	}
	switch {
	case len(pos) >= least && len(pos) <= len(words):
		return nil
	case len(words) == 0:
		return usagef("crow %s takes no arguments, got %q", name, strings.Join(pos, " "))
	case len(pos) < least:
		return usagef("crow %s needs %s", name, args)
	default:
		return usagef("crow %s takes %s, got %d arguments", name, args, len(pos))
	}
}
