package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"

	"github.com/crow-sync/crow/home"
	"github.com/crow-sync/crow/service"
)

func init() {
	register("service", "install crow serve as a system service: systemd on Linux, launchd on macOS (install [--user] [--dry-run])", runService)
}

type serviceArgs struct {
	user, dryRun bool
}

func runService(ctx context.Context, g *globals, args []string) error {
	if len(args) == 0 || args[0] != "install" {
		return usagef("usage: crow service install [--user] [--dry-run]")
	}
	var a serviceArgs
	fs := flag.NewFlagSet("service install", flag.ContinueOnError)
	g.bind(fs)
	fs.BoolVar(&a.user, "user", false, "a per-user unit (~/.config/systemd/user) instead of a system one (/etc/systemd/system); macOS: always a user agent")
	fs.BoolVar(&a.dryRun, "dry-run", false, "print the unit and where it would go; write nothing")
	pos, err := parseArgs(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("crow service install takes no arguments")
	}
	dir, err := filepath.Abs(home.Resolve(g.home))
	if err != nil {
		return err
	}
	h, err := home.Load(dir)
	if err != nil {
		return fmt.Errorf("%w (run crow init first, or name the data directory with --home)", err)
	}
	bin, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the crow binary: %w", err)
	}
	if bin, err = filepath.EvalSymlinks(bin); err != nil {
		return fmt.Errorf("finding the crow binary: %w", err)
	}
	userHome, err := os.UserHomeDir()
	if err != nil {
		return fmt.Errorf("finding your home directory: %w", err)
	}
	spec := service.Spec{Binary: bin, Home: dir, User: a.user, UserHome: userHome, Locked: h.Locked(), Name: h.Name}
	var f service.File
	switch runtime.GOOS {
	case "linux":
		if !a.user {
			// The daemon runs as the account that owns its data directory
			// (`sudo crow service install --home /home/ann/.crow` runs as ann).
			if spec.RunAs, err = ownerOf(dir); err != nil {
				return err
			}
		}
		f, err = service.Systemd(spec)
	case "darwin":
		f, err = service.Launchd(spec)
	default:
		return fmt.Errorf("crow service install knows systemd (Linux) and launchd (macOS), not %s: run crow serve --home %s under your service manager", runtime.GOOS, dir)
	}
	if err != nil {
		return err
	}
	if a.dryRun {
		fmt.Fprintf(g.stdout, "# would write %s\n%s", f.Path, f.Content)
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(f.Path), 0o755); err != nil {
		return installError(f.Path, a.user, err)
	}
	if runtime.GOOS == "darwin" {
		if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o700); err != nil {
			return err
		}
	}
	if err := home.AtomicWrite(f.Path, []byte(f.Content), 0o644); err != nil {
		return installError(f.Path, a.user, err)
	}
	fmt.Fprintln(g.stdout, "wrote", f.Path)
	if spec.Locked {
		fmt.Fprintf(g.stdout, "the seed is locked: put its passphrase in %s (mode 0600) before starting\n", spec.PassphraseFile())
	}
	fmt.Fprintln(g.stdout, "start it with:")
	for _, c := range f.Next {
		fmt.Fprintln(g.stdout, "  "+c)
	}
	return nil
}

func installError(path string, userUnit bool, err error) error {
	if errors.Is(err, fs.ErrPermission) && !userUnit {
		return fmt.Errorf("writing %s: permission denied: run it as root (sudo crow service install --home DIR) or install a user unit with --user", path)
	}
	return fmt.Errorf("writing %s: %w", path, err)
}

// ownerOf names the account that owns dir.
func ownerOf(dir string) (string, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return "", err
	}
	_, _, owner, ok := statIDs(st)
	if !ok {
		return "", fmt.Errorf("cannot tell who owns %s", dir)
	}
	uid := strconv.FormatUint(uint64(owner), 10)
	u, err := user.LookupId(uid)
	if err != nil {
		return "", fmt.Errorf("the owner of %s (uid %s) has no account name: %w", dir, uid, err)
	}
	return u.Username, nil
}
