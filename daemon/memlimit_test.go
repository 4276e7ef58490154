package daemon

import (
	"testing"

	"github.com/crow-sync/crow/home"
)

// The soft memory limit is memory_limit_mb's (for 0, the default: 400 MiB on the home,
// 192 on a satellite; none for -1), and untouched whenever GOMEMLIMIT is set.
func TestMemoryLimit(t *testing.T) {
	for name, tc := range map[string]struct {
		mb     int64
		role   string
		gomem  string
		want   int64
		wantOK bool
	}{
		"default":                 {0, home.RoleHome, "", 400 << 20, true},
		"default on a satellite":  {0, home.RoleSatellite, "", 192 << 20, true},
		"none":                    {-1, home.RoleSatellite, "", 0, false},
		"configured":              {384, home.RoleHome, "", 384 << 20, true},
		"configured on satellite": {384, home.RoleSatellite, "", 384 << 20, true},
		"GOMEMLIMIT over file":    {384, home.RoleHome, "1GiB", 0, false},
		"GOMEMLIMIT off":          {0, home.RoleSatellite, "off", 0, false},
	} {
		s := home.DefaultConfig()
		s.MemoryLimitMB = tc.mb
		getenv := func(k string) string {
			if k == "GOMEMLIMIT" {
				return tc.gomem
			}
			return ""
		}
		got, ok := memoryLimit(s, tc.role, getenv)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("%s: memoryLimit = %d, %v; want %d, %v", name, got, ok, tc.want, tc.wantOK)
		}
		var set []int64
		applyMemoryLimit(s, tc.role, getenv, func(n int64) int64 { set = append(set, n); return 0 }, nil)
		if tc.wantOK != (len(set) == 1) || (len(set) == 1 && set[0] != tc.want) {
			t.Errorf("%s: applyMemoryLimit set %v, want %d (%v)", name, set, tc.want, tc.wantOK)
		}
	}
}
