package e2e

import "testing"

// TestServeMemoryLimitByRole: crow serve gives the Go runtime the soft memory
// limit of its role, as the runtime itself reports it (go_gc_gomemlimit_bytes
// on /metrics): 400 MiB on the home, 192 MiB on a satellite, and
// memory_limit_mb's value when it is set.
func TestServeMemoryLimitByRole(t *testing.T) {
	home := NewDaemon(t, "home", nil)
	home.Unset = append(home.Unset, "GOMEMLIMIT", "CROW_MEMORY_LIMIT_MB")
	home.Start()
	sat := NewDaemon(t, "sat", home)
	sat.Unset = append(sat.Unset, "GOMEMLIMIT", "CROW_MEMORY_LIMIT_MB")
	sat.Start()
	for _, c := range []struct {
		d    *Daemon
		want float64
	}{{home, 400 << 20}, {sat, 192 << 20}} {
		if got := metricValue(t, c.d, "go_gc_gomemlimit_bytes"); got != c.want {
			t.Errorf("%s: soft memory limit %.0f bytes, want %.0f", c.d.Name, got, c.want)
		}
	}
	sat.Stop()
	sat.Env = append(sat.Env, "CROW_MEMORY_LIMIT_MB=300")
	sat.Start()
	if got := metricValue(t, sat, "go_gc_gomemlimit_bytes"); got != 300<<20 {
		t.Errorf("satellite with memory_limit_mb 300: %.0f bytes", got)
	}
}
