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
	"github.com/crow-sync/crow/internal/hugeheap"
	"github.com/crow-sync/crow/tailnet"
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
	fs.StringVar(&a.listen, "listen", "", "gateway HOST:PORT, or tailscale[:PORT] for this machine's Tailscale IPv4 (default 127.0.0.1:3001)")
	fs.StringVar(&a.syncListen, "sync-listen", "", "sync multiaddr, or tailscale[:PORT] (default: gateway host, gateway port + 1)")
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
	cfg, src, err := home.LoadConfigSources(dir, os.LookupEnv)
	if err != nil {
		return err
	}
	if a.listen != "" {
		cfg.Listen, src["listen"] = a.listen, home.SourceFlag
	}
	if a.syncListen != "" {
		cfg.SyncListen, src["sync_listen"] = a.syncListen, home.SourceFlag
	}
	if a.announce != "" {
		cfg.SyncAnnounce, src["sync_announce"] = strings.Split(a.announce, ","), home.SourceFlag
	}
	if a.dial != "" {
		if cfg.SyncDial, err = home.ParseSyncDial(a.dial); err != nil {
			return usagef("--sync-dial: %v", err)
		}
		src["sync_dial"] = home.SourceFlag
	}
	if a.logLevel != "" {
		cfg.LogLevel, src["log_level"] = a.logLevel, home.SourceFlag
	}
	if err := cfg.Validate(); err != nil {
		return usagef("%v", err)
	}
	shown := home.Settings(cfg, src)
	// listen = "tailscale[:PORT]": this machine's Tailscale address.
	var ts tailnet.Resolver
	listen, syncListen := cfg.Listen, cfg.SyncListen
	if cfg.Listen, err = ts.Listen(ctx, cfg.Listen); err != nil {
		return fmt.Errorf("listen %s: %w", listen, err)
	}
	if cfg.SyncListen, err = ts.SyncListen(ctx, cfg.SyncListen, cfg.Listen); err != nil {
		return fmt.Errorf("sync listen %s: %w", syncListen, err)
	}
	for i := range shown {
		switch shown[i].Key {
		case "listen":
			if cfg.Listen != listen {
				shown[i].Resolved = cfg.Listen
			}
		case "sync_listen":
			if cfg.SyncListen != syncListen {
				shown[i].Resolved = cfg.SyncListen
			}
		}
	}
	log, err := newLogger(g, cfg.LogLevel)
	if err != nil {
		return err
	}
	log = log.With("instance", h.Name)
	if o := hugeheap.AtInit; o.Start != 0 {
		log.Info("heap: transparent huge pages advised", "mib", (o.End-o.Start)>>20)
	} else if o.Skipped != "" {
		log.Debug("heap: no transparent huge pages advised", "why", o.Skipped)
	}
	// Run restarts the daemon in its new role after a promotion or a demotion.
	return daemon.Run(ctx, daemon.Config{Home: h, Settings: cfg, Shown: shown, Version: version}, daemon.Deps{Logger: log})
}

func newLogger(g *globals, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log level %q: use debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	if underJournal(os.Getenv("JOURNAL_STREAM"), g.stderr) {
		// journald stamps every line itself: a second time= would only
		// repeat it (and `journalctl -o short-precise` has the precision).
		opts.ReplaceAttr = func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}
	}
	return slog.New(slog.NewTextHandler(g.stderr, opts)), nil
}

// underJournal reports whether w is the stream systemd connected to
// journald: JOURNAL_STREAM names its device and inode ("DEV:INODE"), so a
// child of the service writing elsewhere keeps its timestamps.
func underJournal(stream string, w any) bool {
	if stream == "" {
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	if err != nil {
		return false
	}
	dev, ino, _, ok := statIDs(st)
	if !ok {
		return false
	}
	return stream == fmt.Sprintf("%d:%d", dev, ino)
}
