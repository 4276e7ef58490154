package doctor

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"runtime"
)

// Secret files of $CROW_HOME (names as package home writes them).
const (
	identityFile    = "identity"
	instanceKeyFile = "instance.key"
	apiKeyFile      = "api-key"
	apiKeyHashFile  = "api-key.sha256"
	certificateFile = "certificate"
)

// secretFiles are the files the files check looks at, with whether each
// must exist.
func secretFiles(f Files) []struct {
	path     string
	required bool
} {
	type sf = struct {
		path     string
		required bool
	}
	j := func(n string) string { return filepath.Join(f.Dir, n) }
	key := instanceKeyFile
	if f.HasSeed {
		key = identityFile
	}
	out := []sf{{j(key), true}, {j(apiKeyFile), true}, {j(apiKeyHashFile), true}, {j(certificateFile), true}}
	for _, x := range f.Extra {
		if !filepath.IsAbs(x) {
			x = j(x)
		}
		out = append(out, sf{x, true})
	}
	return out
}

// checkFiles: $CROW_HOME is 0700 and every secret file exists with no
// access for group or others (home refuses to load some of them otherwise;
// the others leak).
func checkFiles(env Env) []Finding {
	if env.Files.Dir == "" || runtime.GOOS == "windows" {
		return nil
	}
	var out []Finding
	bad := 0
	if st, err := env.Stat(env.Files.Dir); err != nil {
		out = append(out, Finding{Check: CheckFiles, Subject: env.Files.Dir, Status: Problem,
			Message: fmt.Sprintf("cannot read $CROW_HOME %s: %v", env.Files.Dir, err),
			Fix:     "check CROW_HOME (or --home) names this instance's data directory"})
		return out
	} else if m := st.Mode().Perm(); m&0o077 != 0 {
		bad++
		out = append(out, Finding{Check: CheckFiles, Subject: env.Files.Dir, Status: Problem,
			Message: fmt.Sprintf("%s has mode %04o: other users can list and reach its files", env.Files.Dir, m),
			Fix:     "chmod 700 " + env.Files.Dir})
	}
	for _, sf := range secretFiles(env.Files) {
		st, err := env.Stat(sf.path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if sf.required {
				bad++
				out = append(out, Finding{Check: CheckFiles, Subject: sf.path, Status: Problem,
					Message: sf.path + " is missing",
					Fix:     "restore it from a backup (crow restore), or set up this instance again (crow init)"})
			}
		case err != nil:
			bad++
			out = append(out, Finding{Check: CheckFiles, Subject: sf.path, Status: Problem,
				Message: fmt.Sprintf("cannot read %s: %v", sf.path, err), Fix: "check the file's owner: crow runs as the user who owns $CROW_HOME"})
		case st.Mode().Perm()&0o077 != 0:
			bad++
			out = append(out, Finding{Check: CheckFiles, Subject: sf.path, Status: Problem,
				Message: fmt.Sprintf("%s has mode %04o: group or other users can read a secret", sf.path, st.Mode().Perm()),
				Fix:     "chmod 600 " + sf.path})
		}
	}
	if bad == 0 {
		out = append(out, Finding{Check: CheckFiles, Status: OK,
			Message: fmt.Sprintf("secret files in %s present and private (0600, directory 0700)", env.Files.Dir)})
	}
	return out
}

// checkSeed: home's seed should be locked; a satellite normally holds none.
func checkSeed(env Env) []Finding {
	f := env.Files
	switch {
	case env.Self.Role == "home" && f.HasSeed && !f.Locked:
		return []Finding{{Check: CheckSeed, Status: Warn,
			Message: "the master seed is stored in clear: anyone who copies $CROW_HOME holds the whole identity",
			Fix:     "crow identity lock (the daemon then asks for the passphrase at start, or reads CROW_PASSPHRASE)"}}
	case env.Self.Role == "home" && f.HasSeed:
		return []Finding{{Check: CheckSeed, Status: OK, Message: "the master seed is locked (encrypted at rest)"}}
	case env.Self.Role == "home":
		return []Finding{{Check: CheckSeed, Status: Problem,
			Message: "this home holds no master seed: it cannot invite, enroll or revoke",
			Fix:     "promote an instance that holds the seed (crow instance promote on it)"}}
	case f.HasSeed && !f.Locked:
		return []Finding{{Check: CheckSeed, Status: Warn,
			Message: "this satellite holds the master seed in clear (imported): losing the machine exposes the whole identity",
			Fix:     "crow identity lock, or enroll satellites by invite (crow instance invite on home, crow init --join) so they hold no seed"}}
	case f.HasSeed:
		return []Finding{{Check: CheckSeed, Status: OK, Message: "this satellite holds the master seed, locked (it can be promoted to home)"}}
	}
	return []Finding{{Check: CheckSeed, Status: OK, Message: "no master seed here (enrolled by invite: its own instance key only)"}}
}
