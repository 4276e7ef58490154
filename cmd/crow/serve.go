package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"

	"github.com/crow-sync/crow/home"
)

func init() {
	register("serve", "run the daemon in the foreground until SIGINT/SIGTERM", runServe)
}

type serveArgs struct {
	listen     string
	syncListen string
	logLevel   string
}

func runServe(ctx context.Context, g *globals, args []string) error {
	var a serveArgs
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	g.bind(fs)
	fs.StringVar(&a.listen, "listen", "", "gateway HOST:PORT (default 127.0.0.1:3001)")
	fs.StringVar(&a.syncListen, "sync-listen", "", "sync multiaddr (default: gateway host, gateway port + 1)")
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
	if a.logLevel != "" {
		cfg.LogLevel = a.logLevel
	}
	log, err := newLogger(g, cfg.LogLevel)
	if err != nil {
		return err
	}
	log = log.With("instance", h.Name)
	return serveDaemon(ctx, log, h, cfg)
}

func newLogger(g *globals, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log level %q: use debug, info, warn or error", level)
	}
	return slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: lv})), nil
}

// defaultSyncListen returns the sync multiaddr: the configured one, else the
// gateway's host with the gateway's port + 1 (port 0 stays 0).
func defaultSyncListen(configured, gatewayAddr string) (string, error) {
	if configured != "" {
		return configured, nil
	}
	host, portStr, err := net.SplitHostPort(gatewayAddr)
	if err != nil {
		return "", err
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return "", err
	}
	if port != 0 {
		port++
	}
	proto := "dns"
	if ip := net.ParseIP(host); ip != nil && ip.To4() != nil {
		proto = "ip4"
	} else if ip != nil {
		proto = "ip6"
	} else if host == "" {
		proto, host = "ip4", "0.0.0.0"
	}
	return fmt.Sprintf("/%s/%s/tcp/%d", proto, host, port), nil
}
