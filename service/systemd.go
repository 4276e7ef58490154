package service

import (
	"fmt"
	"path/filepath"
	"strings"
)

// UnitName is the systemd unit's file name.
const UnitName = "crow.service"

// SystemUnitDir and UserUnitDir (under the account's home) are where units
// are installed.
const (
	SystemUnitDir = "/etc/systemd/system"
	UserUnitDir   = ".config/systemd/user"
)

// homeRoots are the trees ProtectHome= hides.
var homeRoots = []string{"/home", "/root", "/run/user"}

// underHomes reports whether p is in a tree ProtectHome= hides.
func underHomes(p string) bool {
	for _, r := range homeRoots {
		if p == r || strings.HasPrefix(p, r+"/") {
			return true
		}
	}
	return false
}

// Systemd renders crow.service for s and where it is installed.
//
// The sandbox: the daemon writes only $CROW_HOME (ProtectSystem=strict,
// ReadWritePaths=), holds no capability and cannot gain one
// (CapabilityBoundingSet= empty, NoNewPrivileges=), speaks only IP (the
// gateway, libp2p, an RPC chain), Unix sockets and netlink (Go's
// net.Interfaces, which --listen tailscale reads), and runs the
// @system-service system calls. Its slog lines go to journald through
// stderr; the daemon sees JOURNAL_STREAM and leaves the timestamp to the
// journal.
func Systemd(s Spec) (File, error) {
	if err := s.check(); err != nil {
		return File{}, err
	}
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	line("# Installed by `crow service install`%s. Edit and `systemctl%s daemon-reload`, or run the command again.", map[bool]string{true: " --user"}[s.User], map[bool]string{true: " --user"}[s.User])
	line("[Unit]")
	desc := "crow memory sync daemon"
	if s.Name != "" {
		desc += " (" + s.Name + ")"
	}
	line("Description=%s", desc)
	line("Documentation=https://github.com/crow-sync/crow")
	if !s.User {
		// network-online exists in the system manager only. tailscaled
		// first: `--listen tailscale` needs its address (After= of a unit
		// that is not installed is a no-op).
		line("Wants=network-online.target")
		line("After=network-online.target tailscaled.service")
	}
	line("")
	line("[Service]")
	line("Type=simple")
	if !s.User {
		line("User=%s", s.RunAs)
	}
	line("ExecStart=%s serve --home %s", s.Binary, s.Home)
	line("Restart=on-failure")
	line("RestartSec=5s")
	line("TimeoutStopSec=30s")
	line("SyslogIdentifier=crow")
	line("StandardOutput=journal")
	line("StandardError=journal")
	if s.Locked {
		// The seed is encrypted: systemd reads the passphrase file (it may
		// be root-only) and hands it to the daemon in its private
		// credentials directory %d; crow serve reads CROW_PASSPHRASE_FILE.
		line("LoadCredential=crow-passphrase:%s", s.PassphraseFile())
		line("Environment=CROW_PASSPHRASE_FILE=%%d/crow-passphrase")
	}
	line("UMask=0077")
	line("")
	line("# Sandbox")
	line("NoNewPrivileges=yes")
	line("ProtectSystem=strict")
	line("ReadWritePaths=%s", s.Home)
	switch {
	case s.User:
		// A user unit runs as the account whose home holds $CROW_HOME (and
		// often the binary): read-only keeps the rest of that home from
		// being written, ReadWritePaths= above reopens $CROW_HOME only.
		// In a user manager these options need unprivileged user
		// namespaces (PrivateUsers= is implied).
		line("ProtectHome=read-only")
	case underHomes(s.Home) || underHomes(s.Binary):
		// $CROW_HOME or the binary is under /home, /root or /run/user:
		// ProtectHome=yes would hide it and ReadWritePaths= cannot reopen
		// an inaccessible tree. tmpfs puts an empty /home (and /root,
		// /run/user) in its place and binds back only what the daemon
		// needs: no other account's files are visible.
		line("ProtectHome=tmpfs")
		if underHomes(s.Home) {
			line("BindPaths=%s", s.Home)
		}
		if underHomes(s.Binary) {
			line("BindReadOnlyPaths=%s", s.Binary)
		}
	default:
		// $CROW_HOME and the binary live outside the home trees (e.g.
		// /var/lib/crow, /usr/local/bin): the daemon needs none of them.
		line("ProtectHome=yes")
	}
	if !strings.HasPrefix(s.Home, "/tmp/") && !strings.HasPrefix(s.Home, "/var/tmp/") {
		// (A $CROW_HOME in /tmp would be hidden by the private /tmp.)
		line("PrivateTmp=yes")
	}
	if !s.User {
		// Devices, kernel and capabilities are the system manager's to
		// take away (a user unit has none of them to give).
		line("PrivateDevices=yes")
		line("ProtectKernelTunables=yes")
		line("ProtectKernelModules=yes")
		line("ProtectKernelLogs=yes")
		line("ProtectControlGroups=yes")
		line("ProtectClock=yes")
		line("ProtectHostname=yes")
		line("RestrictNamespaces=yes")
		line("RestrictRealtime=yes")
		line("RestrictSUIDSGID=yes")
		line("CapabilityBoundingSet=")
		line("AmbientCapabilities=")
	}
	line("RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX AF_NETLINK")
	line("LockPersonality=yes")
	line("MemoryDenyWriteExecute=yes")
	line("SystemCallArchitectures=native")
	line("SystemCallFilter=@system-service")
	line("SystemCallErrorNumber=EPERM")
	line("")
	line("[Install]")
	f := File{Content: b.String()}
	if s.User {
		line("WantedBy=default.target")
		f.Path = filepath.Join(s.UserHome, UserUnitDir, UnitName)
		f.Next = []string{"systemctl --user daemon-reload && systemctl --user enable --now crow",
			"loginctl enable-linger   # keep it running while you are logged out",
			"journalctl --user -u crow -f"}
	} else {
		line("WantedBy=multi-user.target")
		f.Path = filepath.Join(SystemUnitDir, UnitName)
		f.Next = []string{"systemctl daemon-reload && systemctl enable --now crow", "journalctl -u crow -f"}
	}
	f.Content = b.String()
	return f, nil
}
