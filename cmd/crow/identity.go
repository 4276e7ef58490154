package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"

	"github.com/crow-sync/crow/home"
	"github.com/crow-sync/crow/identity"
)

func init() {
	register("identity", "show, export, lock or unlock this instance's identity (show|export|lock|unlock)", runIdentity)
}

// Which identity commands need the passphrase of a locked identity: show
// never (it prints the public data kept in identity.pub); export and unlock
// do (they need the seed); lock takes the new passphrase.
func runIdentity(ctx context.Context, g *globals, args []string) error {
	if len(args) == 0 {
		return usagef("usage: crow identity show|export [--out FILE]|lock|unlock")
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("identity "+sub, flag.ContinueOnError)
	g.bind(fs)
	out := new(string)
	if sub == "export" {
		fs.StringVar(out, "out", "", "write the encrypted blob to FILE (mode 0600) instead of stdout")
	}
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("crow identity %s takes no arguments", sub)
	}
	dir := home.Resolve(g.home)
	h, err := home.Load(dir)
	if err != nil {
		return err
	}
	switch sub {
	case "show":
		pub := h.Public()
		v := map[string]string{
			"crow_id":         pub.CrowID,
			"instance_id":     h.InstanceID,
			"name":            h.Name,
			"role":            h.Role,
			"public_key":      pub.InstancePublicKey,
			"root_public_key": pub.RootPublicKey,
			"anchor_address":  pub.AnchorAddress,
		}
		keys := []string{"crow_id", "instance_id", "name", "role", "public_key", "root_public_key", "anchor_address"}
		if h.Locked() {
			v["locked"] = "true"
			keys = append(keys, "locked")
		}
		if !h.HasSeed() {
			v["seed"] = "none (enrolled by invitation: the master seed lives on home)"
			keys = append(keys, "seed")
			if c, ok := h.Certificate(); ok {
				v["certificate"] = c.String()
				keys = append(keys, "certificate")
			}
		}
		if g.json {
			return json.NewEncoder(g.stdout).Encode(v)
		}
		for _, k := range keys {
			fmt.Fprintf(g.stdout, "%-16s %s\n", k+":", v[k])
		}
		return nil
	case "export":
		if !h.HasSeed() {
			return fmt.Errorf("this instance holds no master seed (it joined by invitation); export the identity on home")
		}
		if h.Locked() {
			if err := decryptHome(g, h); err != nil {
				return err
			}
		}
		pass, err := passphrase(g, "passphrase to protect the exported identity: ", true)
		if err != nil {
			return err
		}
		blob, err := h.Seed().Export(pass, rand.Reader)
		if err != nil {
			return fmt.Errorf("exporting identity: %w", err)
		}
		// The blob is the master key: whoever has it and the passphrase
		// can restore home or start an instance able to become home.
		if *out == "" {
			fmt.Fprintln(g.stdout, blob)
			fmt.Fprintln(g.stderr, "this blob is the master key (encrypted): keep it offline; with its passphrase it restores home")
			return nil
		}
		if err := home.AtomicWrite(*out, []byte(blob+"\n"), 0o600); err != nil {
			return fmt.Errorf("writing %s: %w", *out, err)
		}
		fmt.Fprintln(g.stderr, "identity written to", *out, "- this file is the master key (encrypted): keep it offline; import it with: crow init --name NAME --import", *out)
		return nil
	case "lock", "unlock":
		if !h.HasSeed() {
			return fmt.Errorf("this instance holds no master seed to %s (it joined by invitation; its key is its own, the seed lives on home)", sub)
		}
		if sub == "lock" && h.Locked() {
			return fmt.Errorf("the identity in %s is already locked; nothing was changed", dir)
		}
		if sub == "unlock" && !h.Locked() {
			return fmt.Errorf("the identity in %s is not locked; nothing was changed", dir)
		}
		if err := notServing(dir); err != nil {
			return err
		}
		if sub == "lock" {
			pass, err := newPassphrase(g, "passphrase to lock the identity: ")
			if err != nil {
				return err
			}
			if err := home.LockIdentity(dir, pass); err != nil {
				return lockError(dir, err)
			}
			fmt.Fprintln(g.stderr, "identity locked:", h.IdentityFile(), "is encrypted; crow serve now needs the passphrase (CROW_PASSPHRASE, CROW_PASSPHRASE_FILE or a prompt)")
		} else {
			pass, err := lockedPassphrase(g, "passphrase of the locked identity: ")
			if err != nil {
				return err
			}
			if err := home.UnlockIdentity(dir, pass); err != nil {
				return lockError(dir, err)
			}
			fmt.Fprintln(g.stderr, "identity unlocked:", h.IdentityFile(), "holds the seed in clear again")
		}
		if g.json {
			return json.NewEncoder(g.stdout).Encode(map[string]any{"locked": sub == "lock", "identity": h.IdentityFile()})
		}
		return nil
	default:
		return usagef("unknown identity command %q: use show, export, lock or unlock", sub)
	}
}

// decryptHome asks for the passphrase of a locked identity and decrypts it.
func decryptHome(g *globals, h *home.Home) error {
	pass, err := lockedPassphrase(g, "passphrase of the locked identity: ")
	if err != nil {
		return err
	}
	defer clear(pass)
	if err := h.Decrypt(pass); errors.Is(err, identity.ErrBadPassphrase) {
		return fmt.Errorf("wrong passphrase for the locked identity %s", h.IdentityFile())
	} else if err != nil {
		return err
	}
	return nil
}

// notServing fails with a clear message while a daemon holds serve.lock.
func notServing(dir string) error {
	unlock, err := home.PathsOf(dir).Lock()
	if err != nil {
		return lockError(dir, err)
	}
	return unlock()
}

func lockError(dir string, err error) error {
	switch {
	case errors.Is(err, home.ErrRunning):
		return fmt.Errorf("stop the daemon first: %w; nothing was changed", err)
	case errors.Is(err, identity.ErrBadPassphrase):
		return fmt.Errorf("wrong passphrase for the locked identity %s; nothing was changed", home.PathsOf(dir).IdentityFile())
	case errors.Is(err, home.ErrLocked):
		return fmt.Errorf("the identity in %s is already locked; nothing was changed", dir)
	case errors.Is(err, home.ErrNotLocked):
		return fmt.Errorf("the identity in %s is not locked; nothing was changed", dir)
	}
	return err
}
