package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/crow-sync/crow/daemon"
	"github.com/crow-sync/crow/home"
)

func init() {
	register("serve", "run the daemon in the foreground until SIGINT/SIGTERM", runServe)
}

type serveArgs struct {
	listen     string
	syncListen string
	announce   string
	dial       string
	logLevel   string
}

func runServe(ctx context.Context, g *globals, args []string) error {
	var a serveArgs
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	g.bind(fs)
	fs.StringVar(&a.listen, "listen", "", "gateway HOST:PORT (default 127.0.0.1:3001)")
	fs.StringVar(&a.syncListen, "sync-listen", "", "sync multiaddr (default: gateway host, gateway port + 1)")
	fs.StringVar(&a.announce, "sync-announce", "", "sync multiaddrs peers are told to dial, comma-separated (default: the listen addresses)")
	fs.StringVar(&a.dial, "sync-dial", "", "sync multiaddrs to dial per peer: ID=ADDR[,ADDR][;ID=ADDR...] (default: what each peer announces)")
	fs.StringVar(&a.logLevel, "log-level", "", "debug, info, warn or error")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("crow serve takes no arguments")
	}
	dir := home.Resolve(g.home)
	h, err := home.Load(dir)
	if err != nil {
		return err
	}
	if h.Locked() {
		if err := decryptHome(g, h); err != nil {
			return err
		}
	}
	// Nothing this process starts needs the passphrase.
	os.Unsetenv("CROW_PASSPHRASE")
	cfg, err := home.LoadConfig(dir, os.LookupEnv)
	if err != nil {
		return err
	}
	if a.listen != "" {
		cfg.Listen = a.listen
	}
	if a.syncListen != "" {
		cfg.SyncListen = a.syncListen
	}
	if a.announce != "" {
		cfg.SyncAnnounce = strings.Split(a.announce, ",")
	}
	if a.dial != "" {
		if cfg.SyncDial, err = home.ParseSyncDial(a.dial); err != nil {
			return usagef("--sync-dial: %v", err)
		}
	}
	if a.logLevel != "" {
		cfg.LogLevel = a.logLevel
	}
	if err := cfg.Validate(); err != nil {
		return usagef("%v", err)
	}
	log, err := newLogger(g, cfg.LogLevel)
	if err != nil {
		return err
	}
	log = log.With("instance", h.Name)
	// Run restarts the daemon in its new role after a promotion or a demotion.
	return daemon.Run(ctx, daemon.Config{Home: h, Settings: cfg, Version: version}, daemon.Deps{Logger: log})
}

func newLogger(g *globals, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log level %q: use debug, info, warn or error", level)
	}
	return slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: lv})), nil
}
