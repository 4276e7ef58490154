package main

import (
	"context"
	"encoding/hex"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/crow-sync/crow/feed"
	"github.com/crow-sync/crow/gateway"
	"github.com/crow-sync/crow/home"
	"github.com/crow-sync/crow/identity"
	"github.com/crow-sync/crow/memory"
	"github.com/crow-sync/crow/search"
	"github.com/crow-sync/crow/store"
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

// serveDaemon builds the daemon's tree and runs it until ctx is done.
func serveDaemon(ctx context.Context, log *slog.Logger, h *home.Home, cfg home.Config) (err error) {
	db, err := store.Open(h.DBDir(), store.Options{Logger: log.With("component", "badger")})
	if err != nil {
		return fmt.Errorf("opening store: %w", err)
	}
	defer func() {
		if cerr := db.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("closing store: %w", cerr)
		}
	}()
	own, err := feed.OpenLog(feed.NewBadgerStorage(db.Badger()), h.InstanceKey())
	if err != nil {
		return err
	}
	writer, err := store.NewWriter(db, store.WriterOptions{InstanceID: h.InstanceID, Journal: own, Logger: log})
	if err != nil {
		return err
	}
	ix, err := search.Open(h.IndexDir(), log)
	if err != nil {
		return fmt.Errorf("opening search index: %w", err)
	}
	defer ix.Close()
	indexer := search.NewIndexer(db, ix)
	mem := memory.NewService(db, writer, ix, memory.Options{})

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("gateway listen on %s: %w", cfg.Listen, err)
	}
	defer ln.Close()
	syncListen, err := defaultSyncListen(cfg.SyncListen, cfg.Listen)
	if err != nil {
		return err
	}
	gw := gateway.New(gateway.Config{
		Logger: log,
		Self: gateway.Self{
			InstanceID: h.InstanceID, Name: h.Name, Role: h.Role, CrowID: h.CrowID,
			PublicKey: hex.EncodeToString(h.PublicKey), Version: version,
			SyncAddrs: func() []string { return nil },
		},
		Keys:     gateway.NewKeyChecker(h.APIKeyHash()),
		Sign:     func(c []byte) []byte { return identity.SignChallenge(h.InstanceKey(), c, h.InstanceID) },
		Memories: mem,
		Metrics:  reg,
	})
	if err := h.WriteGatewayAddr(ln.Addr().String()); err != nil {
		return err
	}
	defer h.RemoveGatewayAddr()
	log.Info("crow serving", "gateway", ln.Addr().String(), "sync", syncListen, "instance_id", h.InstanceID,
		"role", h.Role, "feed_length", own.Head().Length)

	err = runServices(ctx, log,
		service{"writer", writer.Serve},
		service{"indexer", indexer.Serve},
		service{"gateway", func(ctx context.Context) error { return gw.Serve(ctx, ln) }},
	)
	log.Info("crow stopped", "err", err)
	return err
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
