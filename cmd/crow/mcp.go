package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/crow-sync/crow/client"
	"github.com/crow-sync/crow/client/mcpstdio"
	"github.com/crow-sync/crow/home"
)

func init() {
	register("mcp", "a stdio MCP server for desktop clients, speaking to the local daemon", runMCP)
}

// runMCP serves MCP over stdin/stdout by forwarding every message to the
// local daemon's /mcp (client/mcpstdio): the tools, resources and prompts are
// the daemon's. Logs go to stderr; stdout carries JSON-RPC only.
func runMCP(ctx context.Context, g *globals, args []string) error {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	g.bind(fs) // --json is accepted like everywhere; MCP is JSON already
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("crow mcp takes no arguments (it speaks MCP on stdin and stdout)")
	}
	dir := home.Resolve(g.home)
	log := slog.New(slog.NewTextHandler(g.stderr, nil))
	if _, err := client.FromHome(dir); err != nil {
		// Not fatal: the client may start before the daemon; every request
		// gets a JSON-RPC error saying so until it runs.
		log.Warn("crow mcp: " + err.Error())
	}
	in := g.stdin
	if in == nil {
		in = os.Stdin
	}
	b := &mcpstdio.Bridge{
		In: in, Out: g.stdout, Log: log,
		Target: func() (string, string, error) {
			c, err := client.FromHome(dir)
			if err != nil {
				return "", "", err
			}
			key, err := os.ReadFile(home.PathsOf(dir).APIKeyFile())
			if err != nil {
				return "", "", fmt.Errorf("reading the API key: %w", err)
			}
			return c.Base(), strings.TrimSpace(string(key)), nil
		},
	}
	return b.Serve(ctx)
}
