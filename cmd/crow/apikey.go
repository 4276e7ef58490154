package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"syscall"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/client"
	"github.com/crow-sync/crow/home"
)

func init() {
	register("apikey", "the owner API key (rotate)", runAPIKey)
}

type apikeyArgs struct {
	show bool
}

// apikeyResult is what `crow apikey rotate --json` prints.
type apikeyResult struct {
	APIKey  string `json:"api_key"`
	KeyFile string `json:"key_file"`
	// Via says who rotated it: "daemon" (the running daemon, which stopped
	// accepting the old key at once) or "files" (no daemon was running).
	Via string `json:"via"`
}

// runAPIKey rotates the owner API key. With a daemon running it goes through
// POST /v1/apikey/rotate, so the old key stops working at once; with none it
// rewrites $CROW_HOME/api-key and api-key.sha256 directly. The new key is
// printed only with --show or --json.
func runAPIKey(ctx context.Context, g *globals, args []string) error {
	if len(args) == 0 || args[0] != "rotate" {
		return usagef("usage: crow apikey rotate [--show] [--json]")
	}
	var a apikeyArgs
	fs := flag.NewFlagSet("apikey rotate", flag.ContinueOnError)
	g.bind(fs)
	fs.BoolVar(&a.show, "show", false, "print the new key")
	pos, err := parseArgs(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("crow apikey rotate takes no arguments")
	}
	dir := home.Resolve(g.home)
	res := apikeyResult{KeyFile: home.PathsOf(dir).APIKeyFile()}
	res.APIKey, res.Via, err = rotateAPIKey(ctx, g, dir)
	if err != nil {
		return err
	}
	switch {
	case g.json:
		b, err := json.Marshal(res)
		if err != nil {
			return err
		}
		return printJSON(g.stdout, b)
	case a.show:
		fmt.Fprintln(g.stdout, res.APIKey)
	case res.Via == "daemon":
		fmt.Fprintf(g.stdout, "API key rotated: the daemon accepts only the new key, which is in %s\n", res.KeyFile)
	default:
		fmt.Fprintf(g.stdout, "API key rotated (no daemon running): the new key is in %s\n", res.KeyFile)
	}
	return nil
}

// rotateAPIKey asks the running daemon to rotate the key, or rotates the
// files itself when no daemon runs (no gateway.addr, or a stale one nobody
// listens on). A daemon that answers with an error is not bypassed.
func rotateAPIKey(ctx context.Context, g *globals, dir string) (key, via string, err error) {
	c, err := newClient(g)
	switch {
	case err == nil:
		var resp app.APIKey
		resp, err = client.Do(ctx, c, app.APIKeyRotate, app.NoInput{})
		if err == nil {
			if resp.APIKey == "" {
				return "", "", errors.New("the daemon rotated the key but did not return it; it is in " + home.PathsOf(dir).APIKeyFile())
			}
			return resp.APIKey, "daemon", nil
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return "", "", fmt.Errorf("rotating the API key through the daemon: %w", err)
		}
	case !errors.Is(err, client.ErrNoDaemon):
		return "", "", err
	}
	h, err := home.Load(dir)
	if err != nil {
		return "", "", err
	}
	key, err = h.RotateAPIKey()
	if err != nil {
		return "", "", err
	}
	return key, "files", nil
}
