package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/backup"
	"github.com/crow-sync/crow/client"
	"github.com/crow-sync/crow/home"
	"github.com/crow-sync/crow/identity/member"
)

func init() {
	register("backup", "write an encrypted, consistent backup of this instance while it runs (--out FILE)", runBackup)
	register("restore", "restore a backup into an empty or missing data directory, as a new instance (FILE [--join INVITE])", runRestore)
}

func runBackup(ctx context.Context, g *globals, args []string) error {
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	g.bind(fs)
	out := fs.String("out", "", "the archive to write (replaced atomically once complete)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 || *out == "" {
		return usagef("usage: crow backup --out FILE")
	}
	dir := home.Resolve(g.home)
	h, err := home.Load(dir)
	if err != nil {
		return err
	}
	c, err := client.FromHome(dir)
	if err != nil {
		return fmt.Errorf("crow backup takes its snapshot from the running daemon: %w", err)
	}
	if h.HasSeed() && h.Locked() {
		if err := decryptHome(g, h); err != nil {
			return err
		}
	}
	contents, err := backup.Collect(h, version, time.Now())
	if err != nil {
		return err
	}
	pass, err := passphrase(g, "passphrase to protect the backup: ", true)
	if err != nil {
		return err
	}
	snap, err := client.Stream(ctx, c, app.BackupSnapshot, app.NoInput{})
	if err != nil {
		return fmt.Errorf("taking the snapshot: %w", err)
	}
	defer snap.Close()

	tmp, err := home.CreateAtomic(*out)
	if err != nil {
		return fmt.Errorf("writing %s: %w", *out, err)
	}
	defer tmp.Abort() // after the commit, a no-op
	var w io.Writer = tmp
	bar := newBytesBar(g.stderr, -1, "backing up", g.json)
	if bar != nil {
		w = io.MultiWriter(tmp, bar)
	}
	written := &countingWriter{w: w}
	st, err := writeArchive(written, pass, contents, snap)
	if err == nil {
		err = tmp.Commit()
	}
	if bar != nil {
		bar.Finish()
	}
	if err != nil {
		return fmt.Errorf("writing %s (nothing was written there): %w", *out, err)
	}
	if g.json {
		return json.NewEncoder(g.stdout).Encode(map[string]any{
			"out": *out, "instance_id": h.InstanceID, "name": h.Name, "bytes": written.n, "db_bytes": st.Bytes, "seed": contents.Manifest.Seed,
		})
	}
	fmt.Fprintln(g.stdout, *out)
	what := "no master seed: restore it with --join INVITE"
	if contents.Manifest.Seed {
		what = "it holds the master seed: keep it offline like an identity export"
	}
	fmt.Fprintf(g.stderr, "backup of %s (%s) written to %s, %d bytes (%s)\n", h.Name, h.InstanceID, *out, written.n, what)
	return nil
}

// writeArchive seals the archive of contents and the snapshot into w.
func writeArchive(w io.Writer, pass []byte, contents backup.Contents, snap io.Reader) (backup.Stats, error) {
	enc, err := backup.Seal(w, pass, 0)
	if err != nil {
		return backup.Stats{}, err
	}
	st, err := backup.Write(enc, contents, snap)
	if err != nil {
		return st, err
	}
	return st, enc.Close()
}

func runRestore(ctx context.Context, g *globals, args []string) error {
	fs := flag.NewFlagSet("restore", flag.ContinueOnError)
	g.bind(fs)
	join := fs.String("join", "", "an invite from 'crow instance invite --name NAME' on home, for a backup without the master seed")
	name := fs.String("name", "", "the restored instance's name (default: the backed-up instance's; with --join, the invite's name)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("usage: crow restore FILE [--join INVITE] [--name NAME]")
	}
	dir := home.Resolve(g.home)
	if err := home.CheckRestorable(dir); errors.Is(err, home.ErrNotEmpty) {
		return fmt.Errorf("%s is not empty; restore into an empty or missing directory (--home DIR or CROW_HOME); nothing was changed", dir)
	} else if err != nil {
		return err
	}
	var opts backup.Options
	opts.Name = *name
	if *join != "" {
		if _, err := member.ParseInvite(*join, time.Now()); err != nil {
			return fmt.Errorf("the invite is not valid (copy the whole crowinv1. line from 'crow instance invite'): %w", err)
		}
		opts.Enroll = func(ctx context.Context, name string) (home.Joined, error) { return enrollByInvite(ctx, *join, name) }
	}
	f, err := os.Open(pos[0])
	if err != nil {
		return fmt.Errorf("reading the backup: %w", err)
	}
	defer f.Close()
	var in io.Reader = f
	if fi, err := f.Stat(); err == nil {
		if bar := newBytesBar(g.stderr, fi.Size(), "restoring", g.json); bar != nil {
			defer bar.Finish()
			in = io.TeeReader(f, bar)
		}
	}
	pass, err := passphrase(g, "passphrase of the backup: ", false)
	if err != nil {
		return err
	}
	plain, err := backup.Open(in, pass)
	if err != nil {
		return err
	}
	res, err := backup.Restore(ctx, plain, dir, opts)
	if err != nil {
		return fmt.Errorf("restoring %s (nothing was written to %s): %w", pos[0], dir, err)
	}
	if g.json {
		return json.NewEncoder(g.stdout).Encode(map[string]any{
			"instance_id": res.InstanceID, "name": res.Name, "role": res.Role, "seed": res.Seed, "home": dir,
			"home_url": res.HomeURL, "old_instance_id": res.Old.InstanceID, "backup_created_at": res.Old.CreatedAt,
		})
	}
	fmt.Fprintln(g.stdout, res.InstanceID)
	fmt.Fprintf(g.stderr, "restored %s (instance %s, backup of %s) into %s as a new instance %s; start it with 'crow serve'.\n",
		res.Old.Name, res.Old.InstanceID, res.Old.CreatedAt.Format(time.RFC3339), dir, res.InstanceID)
	if res.Seed {
		fmt.Fprintln(g.stderr, "it holds the master seed: a satellite that certified its own new key"+
			ifURL(res.HomeURL, "; on its first start it registers with home at %s")+
			". If the old home is gone for good, 'crow instance promote' makes this instance home.")
	}
	fmt.Fprintf(g.stderr, "if the machine of %s is gone, revoke it on home: crow instance revoke %s\n", res.Old.InstanceID, res.Old.InstanceID)
	return nil
}

func ifURL(url, format string) string {
	if url == "" {
		return ""
	}
	return fmt.Sprintf(format, url)
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
