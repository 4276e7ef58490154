package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crow-sync/crow/doctor"
)

func doctorJSON(t *testing.T, d *Daemon) (doctor.Report, int) {
	t.Helper()
	out, errOut, err := d.CLI("doctor", "--json")
	var rep doctor.Report
	if jerr := json.Unmarshal([]byte(out), &rep); jerr != nil {
		t.Fatalf("%s: crow doctor --json: %v\nstdout: %s\nstderr: %s", d.Name, jerr, out, errOut)
	}
	return rep, exitCode(t, err)
}

func finding(rep doctor.Report, check, subject string) (doctor.Finding, bool) {
	for _, f := range rep.Findings {
		if f.Check == check && f.Subject == subject {
			return f, true
		}
	}
	return doctor.Finding{}, false
}

// TestDoctor runs `crow doctor` on a real home and satellite: both healthy
// (exit 0, every peer check ok both ways, home's embedded chain answers),
// then a satellite key file readable by others (exit 1, the finding names
// the file and chmod 600), then a stopped satellite seen from home (exit 1,
// unreachable).
func TestDoctor(t *testing.T) {
	home := NewDaemon(t, "home", nil)
	home.Start()
	sat := NewDaemon(t, "laptop", home)
	sat.Start()
	Enrolled(t, home, sat)

	for _, c := range []struct {
		d    *Daemon
		peer string
	}{{home, "laptop"}, {sat, "home"}} {
		began := time.Now()
		out, errOut, err := c.d.CLI("doctor")
		t.Logf("figure: crow doctor on %s took %v", c.d.Name, time.Since(began).Round(time.Millisecond))
		if code := exitCode(t, err); code != 0 {
			t.Fatalf("%s: crow doctor exit %d on a healthy pair\nstdout: %s\nstderr: %s", c.d.Name, code, out, errOut)
		}
		t.Logf("crow doctor on %s:\n%s", c.d.Name, out)
		if !strings.Contains(out, "OK    peer "+c.peer) || !strings.Contains(out, "0 problem(s)") {
			t.Errorf("%s: crow doctor printed:\n%s", c.d.Name, out)
		}
		rep, code := doctorJSON(t, c.d)
		if code != 0 || rep.Status == doctor.Problem {
			t.Fatalf("%s: --json exit %d, status %s: %+v", c.d.Name, code, rep.Status, rep.Findings)
		}
		for _, check := range []string{doctor.CheckPeer, doctor.CheckTokens, doctor.CheckClock} {
			if f, ok := finding(rep, check, c.peer); !ok || f.Status != doctor.OK {
				t.Errorf("%s: %s %s: %+v (found %v)", c.d.Name, check, c.peer, f, ok)
			}
		}
	}
	rep, _ := doctorJSON(t, home)
	if f, ok := finding(rep, doctor.CheckChain, "embedded"); !ok || f.Status != doctor.OK {
		t.Errorf("home's embedded chain: %+v (found %v); findings %+v", f, ok, rep.Findings)
	}

	// A satellite's instance key readable by others.
	key := filepath.Join(sat.Home, "instance.key")
	if err := os.Chmod(key, 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := sat.CLI("doctor")
	if code := exitCode(t, err); code != 1 {
		t.Fatalf("crow doctor with a 0644 key: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if !strings.Contains(out, "FAIL  files "+key) || !strings.Contains(out, "chmod 600 "+key) {
		t.Errorf("crow doctor with a 0644 key printed:\n%s", out)
	}
	if lines := strings.Split(strings.TrimSpace(errOut), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "1 problem(s)") {
		t.Errorf("stderr %q", errOut)
	}
	if rep, code := doctorJSON(t, sat); code != 1 || rep.Status != doctor.Problem || rep.Problems != 1 {
		t.Errorf("--json with a 0644 key: exit %d, %+v", code, rep)
	}
	if err := os.Chmod(key, 0o600); err != nil {
		t.Fatal(err)
	}

	// The satellite stops: home's doctor finds it unreachable.
	sat.Stop()
	rep, code := doctorJSON(t, home)
	f, ok := finding(rep, doctor.CheckPeer, "laptop")
	if code != 1 || !ok || f.Status != doctor.Problem || !strings.Contains(f.Message, "unreachable") {
		t.Errorf("a stopped satellite: exit %d, %+v", code, rep.Findings)
	}

	if _, errOut, err := home.CLI("doctor", "extra"); exitCode(t, err) != 2 || !strings.Contains(errOut, "takes no arguments") {
		t.Errorf("crow doctor extra: %v %q", err, errOut)
	}
}

// TestDoctorForkedCopy: a satellite restored from an old copy of its
// directory writes before it meets home; once it knows its feed forked,
// `crow doctor` fails on it and names `crow instance reenroll --join`.
func TestDoctorForkedCopy(t *testing.T) {
	home := NewDaemon(t, "home", nil)
	home.Start()
	s := NewDaemon(t, "sat", home)
	s.Start()
	Enrolled(t, home, s)
	common := addMemories(t, s, "common", 1)
	Eventually(t, syncTimeout, "home to hold the common write", func() bool { return holdsOnce(t, home, common, 1) })
	s.Stop()
	backup := filepath.Join(t.TempDir(), "backup")
	copyDir(t, s.Home, backup)
	s.Start()
	all := append(common, addMemories(t, s, "genuine", 1)...)
	Eventually(t, syncTimeout, "home to hold the genuine write", func() bool { return holdsOnce(t, home, all, 2) })
	s.Stop()
	home.Stop()
	copyDir(t, backup, s.Home)
	s.Start()
	addMemories(t, s, "fork branch", 1)
	home.Start()
	Eventually(t, syncTimeout, "the restored copy to know its feed forked", func() bool {
		rep, _ := doctorJSON(t, s)
		f, ok := finding(rep, doctor.CheckFork, "")
		return ok && f.Status == doctor.Problem
	})
	out, _, err := s.CLI("doctor")
	if code := exitCode(t, err); code != 1 || !strings.Contains(out, "FAIL  fork") ||
		!strings.Contains(out, "crow instance reenroll --join INVITE") {
		t.Fatalf("crow doctor on the forked copy: exit %d\n%s", code, out)
	}
}
