package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"

	"github.com/crow-sync/crow/home"
)

func init() {
	register("identity", "show this instance's identity or export it encrypted (show|export)", runIdentity)
}

func runIdentity(ctx context.Context, g *globals, args []string) error {
	if len(args) == 0 {
		return usagef("usage: crow identity show|export [--out FILE]")
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("identity "+sub, flag.ContinueOnError)
	g.bind(fs)
	out := fs.String("out", "", "export: write the encrypted blob to FILE (mode 0600) instead of stdout")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("crow identity %s takes no arguments", sub)
	}
	h, err := home.Load(home.Resolve(g.home))
	if err != nil {
		return err
	}
	switch sub {
	case "show":
		seed := h.Seed()
		v := map[string]string{
			"crow_id":         h.CrowID,
			"instance_id":     h.InstanceID,
			"name":            h.Name,
			"role":            h.Role,
			"public_key":      hex.EncodeToString(h.PublicKey),
			"root_public_key": hex.EncodeToString(seed.RootPublicKey()),
			"anchor_address":  seed.AnchorAddress().Hex(),
		}
		if g.json {
			return json.NewEncoder(g.stdout).Encode(v)
		}
		for _, k := range []string{"crow_id", "instance_id", "name", "role", "public_key", "root_public_key", "anchor_address"} {
			fmt.Fprintf(g.stdout, "%-16s %s\n", k+":", v[k])
		}
		return nil
	case "export":
		pass, err := passphrase(g, "passphrase to protect the exported identity: ", true)
		if err != nil {
			return err
		}
		blob, err := h.Seed().Export(pass, rand.Reader)
		if err != nil {
			return fmt.Errorf("exporting identity: %w", err)
		}
		if *out == "" {
			fmt.Fprintln(g.stdout, blob)
			return nil
		}
		if err := home.AtomicWrite(*out, []byte(blob+"\n"), 0o600); err != nil {
			return fmt.Errorf("writing %s: %w", *out, err)
		}
		fmt.Fprintln(g.stderr, "identity written to", *out, "- import it with: crow init --name NAME --import", *out)
		return nil
	default:
		return usagef("unknown identity command %q: use show or export", sub)
	}
}
