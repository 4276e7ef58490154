package service

import (
	"bytes"
	"encoding/xml"
	"path/filepath"
)

// LaunchdLabel is the launchd job's label (and the plist's file name).
const LaunchdLabel = "dev.crow.serve"

// Launchd renders the launchd agent of s (macOS): it starts at login
// (RunAtLoad), is started again when it exits (KeepAlive), and writes its
// output to $CROW_HOME/logs (the installer creates it: launchd does not).
// launchd has no credentials: with a locked seed the agent names the
// per-user passphrase file (mode 0600) in CROW_PASSPHRASE_FILE.
func Launchd(s Spec) (File, error) {
	s.User = true
	if err := s.check(); err != nil {
		return File{}, err
	}
	logs := filepath.Join(s.Home, "logs")
	env := [][2]string{{"CROW_HOME", s.Home}}
	if s.Locked {
		env = append(env, [2]string{"CROW_PASSPHRASE_FILE", s.PassphraseFile()})
	}
	var b bytes.Buffer
	b.WriteString(xml.Header)
	b.WriteString(`<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">` + "\n")
	b.WriteString(`<plist version="1.0">` + "\n<dict>\n")
	key := func(k string) { b.WriteString("\t<key>"); xml.EscapeText(&b, []byte(k)); b.WriteString("</key>\n") }
	str := func(indent, v string) {
		b.WriteString(indent + "<string>")
		xml.EscapeText(&b, []byte(v))
		b.WriteString("</string>\n")
	}
	key("Label")
	str("\t", LaunchdLabel)
	key("ProgramArguments")
	b.WriteString("\t<array>\n")
	for _, a := range []string{s.Binary, "serve", "--home", s.Home} {
		str("\t\t", a)
	}
	b.WriteString("\t</array>\n")
	key("EnvironmentVariables")
	b.WriteString("\t<dict>\n")
	for _, kv := range env {
		b.WriteString("\t\t<key>")
		xml.EscapeText(&b, []byte(kv[0]))
		b.WriteString("</key>\n")
		str("\t\t", kv[1])
	}
	b.WriteString("\t</dict>\n")
	key("RunAtLoad")
	b.WriteString("\t<true/>\n")
	// KeepAlive as a dict: restart after a crash or a non-zero exit, not
	// after a clean one (crow serve exits 0 when asked to stop).
	key("KeepAlive")
	b.WriteString("\t<dict>\n\t\t<key>SuccessfulExit</key>\n\t\t<false/>\n\t</dict>\n")
	key("ThrottleInterval")
	b.WriteString("\t<integer>5</integer>\n")
	key("ProcessType")
	str("\t", "Background")
	key("StandardOutPath")
	str("\t", filepath.Join(logs, "crow.out.log"))
	key("StandardErrorPath")
	str("\t", filepath.Join(logs, "crow.err.log"))
	b.WriteString("</dict>\n</plist>\n")
	path := filepath.Join(s.UserHome, "Library", "LaunchAgents", LaunchdLabel+".plist")
	return File{Path: path, Content: b.String(), Next: []string{
		"mkdir -p " + logs,
		"launchctl bootstrap gui/$(id -u) " + path,
		"launchctl kickstart -k gui/$(id -u)/" + LaunchdLabel,
		"tail -f " + filepath.Join(logs, "crow.err.log"),
	}}, nil
}
