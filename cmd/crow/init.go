package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/client"
	"github.com/crow-sync/crow/home"
	"github.com/crow-sync/crow/identity"
	"github.com/crow-sync/crow/identity/member"
	"github.com/crow-sync/crow/registry"
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
	inv, err := member.ParseInvite(strings.TrimSpace(a.join), time.Now())
	if errors.Is(err, member.ErrExpired) {
		return fmt.Errorf("the invite has expired; make a new one on home (crow instance invite --name %s): %w", a.name, err)
	} else if err != nil {
		return fmt.Errorf("the invite is not valid (copy the whole crowinv1. line from 'crow instance invite'): %w", err)
	}
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	id, err := home.NewInstanceID()
	if err != nil {
		return err
	}
	req, err := member.NewJoinRequest(inv, id, key, a.name, rand.Reader)
	if err != nil {
		return err
	}
	joined, err := client.Do(ctx, client.New(inv.GatewayURL, ""), app.InstancesJoin, app.JoinIn{Request: req})
	if err != nil {
		return fmt.Errorf("home at %s refused the join: %w", inv.GatewayURL, err)
	}
	if err := member.VerifyJoinAnswer(inv, req, joined.Answer); err != nil {
		return fmt.Errorf("the answer from %s is not home's (it is not signed by the key the invite pins): %w", inv.GatewayURL, err)
	}
	homeID := ""
	for _, in := range joined.Instances {
		if in.Role == registry.RoleHome && !in.Revoked() {
			homeID = in.ID
		}
	}
	info, err := home.InitJoined(dir, home.Joined{
		Name: a.name, InstanceID: id, Key: key, Certificate: joined.Answer.Certificate,
		RootPublicKey: joined.Answer.RootPublicKey, HomeURL: inv.GatewayURL, HomeID: homeID,
	})
	if err != nil {
		return fmt.Errorf("enrolled by home, but writing %s failed (the invite is used: make a new one): %w", dir, err)
	}
	if g.json {
		return json.NewEncoder(g.stdout).Encode(map[string]string{
			"instance_id": info.InstanceID, "name": info.Name, "role": info.Role, "crow_id": info.CrowID, "home": dir,
			"home_url": inv.GatewayURL,
		})
	}
	fmt.Fprintln(g.stdout, info.InstanceID)
	return nil
}
