package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/crow-sync/crow/anchor"
	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/client"
)

func init() {
	register("verify", "verify a project's state versions from the chain alone (NAME [--rpc URL] [--packet FILE] [--url GATEWAY])", runVerify)
}

// runVerify takes each version's verification packet (from a gateway's
// public endpoint, or a file) and reaches the verdict from the packet and
// the chain alone (anchor.VerifyPacket): a gateway's own verdict is never
// trusted.
func runVerify(ctx context.Context, g *globals, args []string) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	g.bind(fs)
	gw := fs.String("url", "", "the gateway to take the packets from (public endpoint, no key); default: the local daemon")
	rpc := fs.String("rpc", "", "a JSON-RPC endpoint of the anchoring chain; default: the packet's rpc_url")
	cpRPC := fs.String("checkpoint-rpc", "", "a JSON-RPC endpoint of the checkpoint chain; default: the checkpoint's rpc_url")
	packet := fs.String("packet", "", "verify this packet file (GET /v1/project/{name}/state/anchor's answer) instead of asking a gateway")
	version := fs.Uint64("version", 0, "only this version (default: every version)")
	maxPending := fs.Duration("max-pending", 10*time.Minute, "a version still pending this long after its consolidation is a failure")
	requireCP := fs.Duration("require-checkpoint", 0, "a root anchored longer ago than this must be covered by a public-chain checkpoint (e.g. 1h10m for an hourly [chain.checkpoint]); 0: not required")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 || (len(pos) == 0 && *packet == "") {
		return usagef("usage: crow verify NAME [--rpc URL] [--url GATEWAY] [--version N] | crow verify --packet FILE [--rpc URL]")
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var checks []anchor.VersionCheck
	if *packet != "" {
		p, err := readPacket(*packet)
		if err != nil {
			return err
		}
		checks = []anchor.VersionCheck{{Version: p.Version, StateHash: p.StateHash, Status: p.Status, Packet: &p}}
	} else if checks, err = fetchChecks(ctx, g, *gw, pos[0]); err != nil {
		return err
	}
	opts := anchor.JudgeOptions{RPCURL: *rpc, CheckpointRPC: *cpRPC, MaxPending: *maxPending, RequireCheckpoint: *requireCP, Now: time.Now()}
	var out []anchor.PacketVerdict
	var failed []string
	// Each version is checked against the chain: a project with many
	// versions shows a bar on a terminal.
	var bar *progressbar.ProgressBar
	if *version == 0 && len(checks) > 1 {
		bar = newCountBar(g.stderr, int64(len(checks)), "verifying", "versions", g.json)
	}
	for _, c := range checks {
		if *version != 0 && c.Version != *version {
			continue
		}
		v, failure := anchor.JudgeVersion(ctx, c, opts)
		if failure != "" {
			failed = append(failed, failure)
		}
		out = append(out, v)
		if bar != nil {
			_ = bar.Add(1)
		}
	}
	if bar != nil {
		_ = bar.Finish()
		_ = bar.Clear()
	}
	if *version != 0 && len(out) == 0 {
		return fmt.Errorf("version %d: no such version", *version)
	}
	if g.json {
		raw, _ := json.Marshal(map[string]any{"versions": out, "ok": len(failed) == 0})
		if err := printJSON(g.stdout, raw); err != nil {
			return err
		}
	} else {
		for _, v := range out {
			fmt.Fprintf(g.stdout, "v%-4d %-9s %s", v.Version, v.Verdict, v.StateHash)
			if v.RootID > 0 {
				fmt.Fprintf(g.stdout, "  root #%d (%s)", v.RootID, v.AnchoredAt)
			}
			fmt.Fprintln(g.stdout)
			for _, c := range v.Checks {
				mark := "ok  "
				if !c.OK {
					mark = "FAIL"
				}
				if v.Verdict == anchor.VerdictPending {
					mark = "    "
				}
				fmt.Fprintf(g.stdout, "      %s %-18s %s\n", mark, c.Name, c.Detail)
			}
		}
	}
	if len(failed) > 0 {
		return errors.New(failed[0])
	}
	if !g.json {
		fmt.Fprintf(g.stdout, "verified from the chain alone: %d version(s) checked\n", len(out))
	}
	return nil
}

// readPacket reads a packet file: the packet itself, or an answer that
// holds it under "packet".
func readPacket(path string) (anchor.Packet, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return anchor.Packet{}, fmt.Errorf("reading the packet: %w", err)
	}
	var wrapped struct {
		Packet *anchor.Packet `json:"packet"`
	}
	var p anchor.Packet
	if err := json.Unmarshal(b, &wrapped); err == nil && wrapped.Packet != nil {
		p = *wrapped.Packet
	} else if err := json.Unmarshal(b, &p); err != nil {
		return anchor.Packet{}, fmt.Errorf("reading the packet %s: %w", path, err)
	}
	if p.Root == "" && p.Status != anchor.StatusPending {
		return anchor.Packet{}, fmt.Errorf("%s is not a verification packet (no root)", path)
	}
	return p, nil
}

// fetchChecks takes every version's packet from a gateway's public
// GET /v1/verify/{name}.
func fetchChecks(ctx context.Context, g *globals, gw, project string) ([]anchor.VersionCheck, error) {
	var c *client.Client
	var err error
	if gw != "" {
		c = client.New(gw, "")
	} else if c, err = newClient(g); err != nil {
		return nil, err
	}
	c = c.WithKey("") // a public endpoint: no key
	doc, err := client.Do(ctx, c, app.ProjectVerify, app.ProjectName{Project: project})
	if err != nil {
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			return nil, fmt.Errorf("asking %s: %w", c.Base(), ue)
		}
		return nil, err
	}
	return doc.Versions, nil
}
