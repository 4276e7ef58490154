// Package service renders the files that run `crow serve` under the
// system's service manager: a hardened systemd unit on Linux, a launchd
// agent on macOS. It only renders text and names where it goes; writing
// the file is the caller's (cmd/crow's `crow service install`), and it
// never runs systemctl or launchctl. Pure: testable on any OS.
package service

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// Spec is what a unit needs to know about the daemon it runs.
type Spec struct {
	// Binary is the absolute path of the crow executable (ExecStart).
	Binary string
	// Home is the absolute $CROW_HOME the daemon serves (--home); the only
	// directory the sandbox lets it write.
	Home string
	// User runs a per-user unit (systemd --user, or a launchd agent) instead
	// of a system one.
	User bool
	// RunAs is the account of a system unit (User=); ignored with User.
	RunAs string
	// UserHome is the account's home directory: where per-user units and
	// the per-user passphrase credential live.
	UserHome string
	// Locked says the seed is encrypted: the unit passes the passphrase as a
	// systemd credential (LoadCredential) read from PassphraseFile.
	Locked bool
	// Name is the instance's name, for the description.
	Name string
}

// SystemPassphraseFile is where a system unit reads the seed's passphrase
// from (root-owned, mode 0600; systemd hands it to the daemon as the
// credential crow-passphrase).
const SystemPassphraseFile = "/etc/crow/passphrase"

// PassphraseFile is the file the unit of s loads the passphrase from.
func (s Spec) PassphraseFile() string {
	if s.User {
		return filepath.Join(s.UserHome, ".config", "crow", "passphrase")
	}
	return SystemPassphraseFile
}

// check refuses a spec a unit cannot be made of.
func (s Spec) check() error {
	if !filepath.IsAbs(s.Binary) {
		return fmt.Errorf("the crow binary path %q is not absolute", s.Binary)
	}
	if !filepath.IsAbs(s.Home) {
		return fmt.Errorf("the data directory %q is not absolute", s.Home)
	}
	if (s.User || s.Locked) && !filepath.IsAbs(s.UserHome) {
		return fmt.Errorf("the home directory %q is not absolute", s.UserHome)
	}
	if !s.User && s.RunAs == "" {
		return errors.New("a system unit needs the account to run as")
	}
	for _, p := range []string{s.Binary, s.Home, s.UserHome} {
		// One line, no quoting surprises: systemd splits ExecStart on
		// spaces and takes % as a specifier.
		if strings.ContainsAny(p, " \t\n\"'\\%$") {
			return fmt.Errorf("the path %q holds a space, quote, %% or $: move it, systemd and launchd lines would misread it", p)
		}
	}
	return nil
}

// File is a rendered service file and where it belongs.
type File struct {
	Path    string // absolute path it is installed at
	Content string
	// Next are the commands that start it (printed, never run).
	Next []string
}
