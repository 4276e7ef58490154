package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/crow-sync/crow/home"
	"github.com/crow-sync/crow/identity"
)

func init() {
	register("init", "create this instance: a new identity (home) or --import one (satellite)", runInit)
}

type initArgs struct {
	name       string
	importFile string
}

func runInit(ctx context.Context, g *globals, args []string) error {
	var a initArgs
	fs := flag.NewFlagSet("init", flag.ContinueOnError)
	g.bind(fs)
	fs.StringVar(&a.name, "name", "", "a human name for this instance (required)")
	fs.StringVar(&a.importFile, "import", "", "join an existing identity from an export blob file (this instance becomes a satellite)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("usage: crow init --name NAME [--import FILE]")
	}
	if a.name == "" {
		return usagef("crow init needs --name NAME")
	}
	dir := home.Resolve(g.home)

	var (
		seed identity.Seed
		role = home.RoleHome
	)
	if a.importFile != "" {
		blob, err := os.ReadFile(a.importFile)
		if err != nil {
			return fmt.Errorf("reading identity blob: %w", err)
		}
		pass, err := passphrase(g, "passphrase of the identity blob: ", false)
		if err != nil {
			return err
		}
		seed, err = identity.Import(string(blob), pass)
		if err != nil {
			return fmt.Errorf("importing identity: %w", err)
		}
		role = home.RoleSatellite
	} else {
		seed, err = identity.NewSeed(rand.Reader)
		if err != nil {
			return err
		}
	}
	info, err := home.Init(dir, a.name, seed, role)
	if errors.Is(err, home.ErrAlreadyInitialized) {
		return fmt.Errorf("%s is already initialised; nothing was changed", dir)
	} else if err != nil {
		return err
	}
	if g.json {
		return json.NewEncoder(g.stdout).Encode(map[string]string{
			"instance_id": info.InstanceID, "name": info.Name, "role": info.Role, "crow_id": info.CrowID, "home": dir,
		})
	}
	fmt.Fprintln(g.stdout, info.InstanceID)
	return nil
}
