package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

func init() {
	register("verify", "check a project's state versions against the chain (NAME [--url GATEWAY])", runVerify)
}

func runVerify(ctx context.Context, g *globals, args []string) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	g.bind(fs)
	gw := fs.String("url", "", "a gateway to ask (public endpoint, no key); default: the local daemon")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("usage: crow verify NAME [--url http://HOST:PORT]")
	}
	base := strings.TrimRight(*gw, "/")
	if base == "" {
		c, err := newClient(g)
		if err != nil {
			return err
		}
		base = c.base
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/v1/verify/"+url.PathEscape(pos[0]), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("asking %s: %w", base, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(raw, &e) == nil && e.Error != "" {
			return errors.New(e.Error)
		}
		return fmt.Errorf("%s answered %s", base, resp.Status)
	}
	var doc struct {
		ProjectID string `json:"project_id"`
		Chain     *struct {
			Kind     string `json:"kind"`
			ChainID  uint64 `json:"chain_id"`
			Contract string `json:"contract"`
		} `json:"chain"`
		Versions []struct {
			Version          uint64 `json:"version"`
			StateHash        string `json:"state_hash"`
			Status           string `json:"status"`
			OnchainStateHash string `json:"onchain_state_hash"`
			AnchorID         uint64 `json:"anchor_id"`
			BlockNumber      uint64 `json:"block_number"`
		} `json:"versions"`
		Verified bool `json:"verified"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("decoding answer: %w", err)
	}
	if g.json {
		if err := printJSON(g.stdout, raw); err != nil {
			return err
		}
	} else {
		if doc.Chain != nil {
			fmt.Fprintf(g.stdout, "chain %d (%s), contract %s, project id %s\n", doc.Chain.ChainID, doc.Chain.Kind, doc.Chain.Contract, doc.ProjectID)
		} else {
			fmt.Fprintf(g.stdout, "this gateway reads no chain: the statuses are home's replicated records (project id %s)\n", doc.ProjectID)
		}
		for _, v := range doc.Versions {
			fmt.Fprintf(g.stdout, "v%-4d %-10s %s", v.Version, v.Status, v.StateHash)
			if v.AnchorID > 0 {
				fmt.Fprintf(g.stdout, "  anchor #%d block %d", v.AnchorID, v.BlockNumber)
			}
			fmt.Fprintln(g.stdout)
		}
	}
	for _, v := range doc.Versions {
		if v.Status == "mismatch" || v.Status == "conflict" {
			return fmt.Errorf("version %d does NOT match the chain (%s)", v.Version, v.Status)
		}
	}
	if !g.json {
		switch {
		case doc.Verified:
			fmt.Fprintln(g.stdout, "verified: every version is anchored and matches")
		case doc.Chain == nil:
			fmt.Fprintln(g.stdout, "not verified here: this instance reads no chain; run crow verify on home, or --url its gateway")
		default:
			fmt.Fprintln(g.stdout, "not fully verified yet: some versions are pending (anchoring runs every few seconds on home)")
		}
	}
	return nil
}
