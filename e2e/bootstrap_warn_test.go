package e2e

import (
	"strings"
	"testing"
)

// A fresh cluster's start-up race (a satellite dials before the registry row
// of its peer has replicated, a token arrives before its issuer is known)
// is normal and must not log a security warning: operators read those lines
// as attacks, and a WARN on every start hides the real ones.
func TestFreshClusterLogsNoSecurityWarning(t *testing.T) {
	home, sats := cluster(t, "laptop", "vps")
	a, b := sats[0], sats[1]
	writeN(t, home, 3, "home")
	writeN(t, a, 3, "laptop")
	writeN(t, b, 3, "vps")
	Eventually(t, syncTimeout, "three feeds to converge", func() bool { return converged(home, a, b) })
	// A federated search crosses every instance with bearer tokens.
	a.MustCLI("memory", "search", "laptop", "--instances", "all")
	for _, d := range []*Daemon{home, a, b} {
		for _, line := range strings.Split(d.Log(), "\n") {
			if strings.Contains(line, "security") {
				t.Errorf("%s logged during a normal start: %s", d.Name, line)
			}
		}
	}
}
