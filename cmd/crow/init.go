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
	register("init", "create this instance: a new identity (home), --join INVITE (satellite) or --import FILE", runInit)
}

type initArgs struct {
	name       string
	importFile string
	join       string
}

func runInit(ctx context.Context, g *globals, args []string) error {
	var a initArgs
	fs := flag.NewFlagSet("init", flag.ContinueOnError)
	g.bind(fs)
	fs.StringVar(&a.name, "name", "", "a human name for this instance (required)")
	fs.StringVar(&a.join, "join", "", "enroll this machine as a satellite with an invite from 'crow instance invite' on home")
	fs.StringVar(&a.importFile, "import", "", "take the full identity (the master key) from an export blob file: a satellite that holds the seed and can be promoted to home")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("usage: crow init --name NAME [--join INVITE | --import FILE]")
	}
	if a.name == "" {
		return usagef("crow init needs --name NAME")
	}
	if a.join != "" && a.importFile != "" {
		return usagef("crow init takes --join or --import, not both")
	}
	dir := home.Resolve(g.home)
	if a.join != "" {
		return initJoin(ctx, g, dir, a)
	}

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

// initJoin enrolls this machine by invitation (SPEC §7): it checks the
// directory and the invite, generates this instance's key and id, proves to
// home (pinned by the invite's key) that it holds the invite's secret while
// binding the new key, checks home's signed answer, and only then writes the
// data directory: its key, its certificate, the root public key — never the
// seed. Anything refused leaves nothing behind.
func initJoin(ctx context.Context, g *globals, dir string, a initArgs) error {
	if err := home.CheckInitable(dir); errors.Is(err, home.ErrAlreadyInitialized) {
		return fmt.Errorf("%s is already initialised; nothing was changed", dir)
	} else if err != nil {
		return err
	}
	j, err := enrollByInvite(ctx, a.join, a.name)
	if err != nil {
		return err
	}
	info, err := home.InitJoined(dir, j)
	if err != nil {
		return fmt.Errorf("enrolled by home, but writing %s failed (the invite is used: make a new one): %w", dir, err)
	}
	if g.json {
		return json.NewEncoder(g.stdout).Encode(map[string]string{
			"instance_id": info.InstanceID, "name": info.Name, "role": info.Role, "crow_id": info.CrowID, "home": dir,
			"home_url": j.HomeURL,
		})
	}
	fmt.Fprintln(g.stdout, info.InstanceID)
	return nil
}
