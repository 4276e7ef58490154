package daemon

import (
	"testing"

	"github.com/crow-sync/crow/home"
)

// The soft memory limit is memory_limit_mb's (400 MiB for 0, the default; none for -1),
// and untouched whenever GOMEMLIMIT is set.
func TestMemoryLimit(t *testing.T) {
	for name, tc := range map[string]struct {
		mb     int64
		gomem  string
		want   int64
		wantOK bool
	}{
		"default":              {0, "", home.DefaultMemoryLimitMB << 20, true},
		"none":                 {-1, "", 0, false},
		"configured":           {384, "", 384 << 20, true},
		"GOMEMLIMIT over file": {384, "1GiB", 0, false},
		"GOMEMLIMIT off":       {384, "off", 0, false},
	} {
		s := home.DefaultConfig()
		s.MemoryLimitMB = tc.mb
		getenv := func(k string) string {
			if k == "GOMEMLIMIT" {
				return tc.gomem
			}
			return ""
		}
		got, ok := memoryLimit(s, getenv)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("%s: memoryLimit = %d, %v; want %d, %v", name, got, ok, tc.want, tc.wantOK)
		}
		var set []int64
		applyMemoryLimit(s, getenv, func(n int64) int64 { set = append(set, n); return 0 }, nil)
		if tc.wantOK != (len(set) == 1) || (len(set) == 1 && set[0] != tc.want) {
			t.Errorf("%s: applyMemoryLimit set %v, want %d (%v)", name, set, tc.want, tc.wantOK)
		}
	}
}
