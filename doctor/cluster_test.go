package doctor_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crow-sync/crow/clock"
	"github.com/crow-sync/crow/daemon/cluster"
	"github.com/crow-sync/crow/doctor"
)

// These tests run crow doctor (GET /v1/doctor) on real daemons
// (daemon/cluster: badger on disk, gateways on loopback, real federation
// calls between them) and check that each check passes on a healthy setup
// and fails on a broken one.

func run(t *testing.T, n *cluster.Node) doctor.Report {
	t.Helper()
	var rep doctor.Report
	n.MustDo(200, "GET", "/v1/doctor", nil, &rep)
	return rep
}

func findings(r doctor.Report, check, subject string) []doctor.Finding {
	var out []doctor.Finding
	for _, f := range r.Findings {
		if f.Check == check && (subject == "" || f.Subject == subject) {
			out = append(out, f)
		}
	}
	return out
}

// status is the one status of check/subject in r, or "" with a failure.
func status(t *testing.T, r doctor.Report, check, subject string) doctor.Status {
	t.Helper()
	fs := findings(r, check, subject)
	if len(fs) != 1 {
		t.Errorf("%s: %d findings of %s %q, want 1: %+v", r.Name, len(fs), check, subject, r.Findings)
		return ""
	}
	return fs[0].Status
}

func TestHealthyCluster(t *testing.T) {
	c := cluster.New(t, 2, cluster.Options{})
	for _, n := range c.Nodes {
		rep := run(t, n)
		if rep.Status == doctor.Problem {
			t.Errorf("%s: problems on a healthy cluster: %+v", n.Name, rep.Findings)
		}
		other := c.Nodes[1].Name
		if n == c.Nodes[1] {
			other = c.Nodes[0].Name
		}
		for _, check := range []string{doctor.CheckPeer, doctor.CheckTokens, doctor.CheckClock} {
			if s := status(t, rep, check, other); s != doctor.OK {
				t.Errorf("%s: %s %s is %s", n.Name, check, other, s)
			}
		}
		for _, check := range []string{doctor.CheckFiles, doctor.CheckStore, doctor.CheckDisk, doctor.CheckAddresses,
			doctor.CheckCertificate, doctor.CheckFork} {
			if s := status(t, rep, check, ""); s != doctor.OK {
				t.Errorf("%s: %s is %s", n.Name, check, s)
			}
		}
	}
	// Home's seed is in clear in the cluster: a warning, not a problem.
	if s := status(t, run(t, c.Nodes[0]), doctor.CheckSeed, ""); s != doctor.Warn {
		t.Errorf("home's clear seed: %s", s)
	}
}

func TestWrongModeKeyFile(t *testing.T) {
	c := cluster.New(t, 2, cluster.Options{})
	b := c.Nodes[1]
	key := filepath.Join(b.Dir(), "instance.key")
	if err := os.Chmod(key, 0o644); err != nil {
		t.Fatal(err)
	}
	rep := run(t, b)
	fs := findings(rep, doctor.CheckFiles, key)
	if len(fs) != 1 || fs[0].Status != doctor.Problem || fs[0].Fix != "chmod 600 "+key {
		t.Fatalf("a 0644 instance.key: %+v", rep.Findings)
	}
	if rep.Status != doctor.Problem {
		t.Fatalf("report status %s", rep.Status)
	}
}

// skewed is the real clock, off by d.
type skewed struct {
	clock.System
	d time.Duration
}

func (s skewed) Now() time.Time                  { return time.Now().Add(s.d) }
func (s skewed) Since(t time.Time) time.Duration { return s.Now().Sub(t) }

func TestSkewedClock(t *testing.T) {
	// 25 s: tokens still pass (30 s allowed), the doctor says it is too close.
	c := cluster.New(t, 2, cluster.Options{Clocks: map[string]clock.Clock{"B": skewed{d: 25 * time.Second}}})
	a, b := c.Nodes[0], c.Nodes[1]
	ra := run(t, a)
	fs := findings(ra, doctor.CheckClock, "B")
	if len(fs) != 1 || fs[0].Status != doctor.Problem || !strings.Contains(fs[0].Message, "ahead of") {
		t.Fatalf("A about B's clock: %+v", ra.Findings)
	}
	if s := status(t, ra, doctor.CheckTokens, "B"); s != doctor.OK {
		t.Errorf("tokens within the allowed skew: %s", s)
	}
	rb := run(t, b)
	if fs := findings(rb, doctor.CheckClock, "A"); len(fs) != 1 || fs[0].Status != doctor.Problem || !strings.Contains(fs[0].Message, "behind") {
		t.Fatalf("B about A's clock: %+v", rb.Findings)
	}
}

func TestClockBeyondTokenSkew(t *testing.T) {
	// 45 s: B's tokens are not yet valid at A; A's still pass at B (they
	// expire 5 minutes after issue). A's doctor finds both: the skew, and
	// its token check's callback refused.
	c := cluster.New(t, 2, cluster.Options{Clocks: map[string]clock.Clock{"B": skewed{d: 45 * time.Second}}})
	ra := run(t, c.Nodes[0])
	if s := status(t, ra, doctor.CheckClock, "B"); s != doctor.Problem {
		t.Errorf("clock B: %s", s)
	}
	fs := findings(ra, doctor.CheckTokens, "B")
	if len(fs) != 1 || fs[0].Status != doctor.Problem || !strings.Contains(fs[0].Message, "call back here failed") {
		t.Errorf("tokens with B 45 s ahead: %+v", ra.Findings)
	}
}

func TestRemotePeerWhileBoundToLoopback(t *testing.T) {
	// B says it is on another machine (its sync address is not loopback;
	// the in-memory transport never dials it); A listens on 127.0.0.1 only.
	c := cluster.New(t, 2, cluster.Options{Announce: map[string][]string{"B": {"/ip4/192.0.2.10/tcp/3002"}}})
	rep := run(t, c.Nodes[0])
	for _, subj := range []string{"listen", "gateway_url"} {
		fs := findings(rep, doctor.CheckAddresses, subj)
		if len(fs) != 1 || fs[0].Status != doctor.Problem || fs[0].Fix == "" {
			t.Fatalf("addresses %s: %+v", subj, rep.Findings)
		}
	}
	if f := findings(rep, doctor.CheckAddresses, "listen")[0]; !strings.Contains(f.Message, "cannot reach it") ||
		!strings.Contains(f.Fix, "--listen tailscale") {
		t.Errorf("listen finding: %+v", f)
	}
}

func TestUnreachableAndRevokedPeers(t *testing.T) {
	c := cluster.New(t, 3, cluster.Options{})
	a, b, cn := c.Nodes[0], c.Nodes[1], c.Nodes[2]
	cn.Stop()
	if _, err := a.Daemon.Registry().Revoke(context.Background(), b.Home.InstanceID); err != nil {
		t.Fatal(err)
	}
	rep := run(t, a)
	if fs := findings(rep, doctor.CheckPeer, "C"); len(fs) != 1 || fs[0].Status != doctor.Problem ||
		!strings.Contains(fs[0].Message, "unreachable") || !strings.Contains(fs[0].Fix, "crow instance revoke") {
		t.Errorf("stopped C: %+v", rep.Findings)
	}
	if s := status(t, rep, doctor.CheckPeer, "B"); s != doctor.OK {
		t.Errorf("revoked B, on A: %s", s)
	}
	if rep.Status != doctor.Problem {
		t.Errorf("A's status %s", rep.Status)
	}
	// B learns of its revocation by replication; then its doctor says so.
	c.Eventually("B to know it is revoked", func() bool {
		in, err := b.Daemon.Registry().Get(b.Home.InstanceID)
		return err == nil && in.Revoked()
	})
	rb := run(t, b)
	if s := status(t, rb, doctor.CheckCertificate, ""); s != doctor.Problem {
		t.Errorf("revoked B's certificate: %s (%+v)", s, rb.Findings)
	}
	// A refuses the revoked B's federation token.
	if fs := findings(rb, doctor.CheckTokens, "A"); len(fs) != 1 || fs[0].Status != doctor.Problem ||
		!strings.Contains(fs[0].Message, "refuses this instance's federation token") {
		t.Errorf("revoked B's token at A: %+v", rb.Findings)
	}
}
