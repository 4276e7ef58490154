package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"runtime"
	"runtime/debug"
)

func init() {
	register("version", "the crow version, the build's module version and VCS revision, Go version and platform ([--json])", runVersion)
}

// versionInfo is what crow version prints; its JSON keys are fixed.
type versionInfo struct {
	Version       string `json:"version"`        // crow's (-ldflags "-X main.version=…")
	ModuleVersion string `json:"module_version"` // the main module's, from the build info
	VCSRevision   string `json:"vcs_revision"`   // "unknown" without VCS info (go run, -buildvcs=false)
	VCSTime       string `json:"vcs_time"`
	VCSModified   *bool  `json:"vcs_modified"` // null when unknown
	GoVersion     string `json:"go_version"`
	OS            string `json:"os"`
	Arch          string `json:"arch"`
}

// buildVersion reads the build info the Go toolchain embeds in the binary.
func buildVersion() versionInfo {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return versionFrom(bi)
}

// versionFrom is what bi (nil: none) says of this build.
func versionFrom(bi *debug.BuildInfo) versionInfo {
	v := versionInfo{Version: version, ModuleVersion: "unknown", VCSRevision: "unknown", VCSTime: "unknown",
		GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if bi == nil {
		return v
	}
	if bi.GoVersion != "" {
		v.GoVersion = bi.GoVersion
	}
	if bi.Main.Version != "" {
		v.ModuleVersion = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.VCSRevision = s.Value
		case "vcs.time":
			v.VCSTime = s.Value
		case "vcs.modified":
			m := s.Value == "true"
			v.VCSModified = &m
		}
	}
	return v
}

func runVersion(ctx context.Context, g *globals, args []string) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	g.bind(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("crow version takes no arguments")
	}
	v := buildVersion()
	if g.json {
		raw, err := json.Marshal(v)
		if err != nil {
			return err
		}
		return printJSON(g.stdout, raw)
	}
	modified := "unknown"
	if v.VCSModified != nil {
		modified = fmt.Sprint(*v.VCSModified)
	}
	fmt.Fprintln(g.stdout, "crow", v.Version)
	fmt.Fprintf(g.stdout, "module    %s\n", v.ModuleVersion)
	fmt.Fprintf(g.stdout, "revision  %s (%s, modified: %s)\n", v.VCSRevision, v.VCSTime, modified)
	fmt.Fprintf(g.stdout, "go        %s %s/%s\n", v.GoVersion, v.OS, v.Arch)
	return nil
}
