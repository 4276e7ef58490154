package hugeheap

import "testing"

func TestCommand(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"serve"}, "serve"},
		{[]string{"serve", "--listen", "127.0.0.1:1"}, "serve"},
		{[]string{"--home", "/tmp/serve", "memory", "add", "serve"}, "memory"},
		{[]string{"-home", "/x", "serve"}, "serve"},
		{[]string{"--home=/x", "--json", "serve"}, "serve"},
		{[]string{"--json", "version"}, "version"},
		{[]string{"--", "serve"}, "serve"},
		{[]string{"--home"}, ""},
	} {
		if got := command(c.args); got != c.want {
			t.Errorf("command(%q) = %q, want %q", c.args, got, c.want)
		}
	}
}

func TestDisablesTHP(t *testing.T) {
	for godebug, want := range map[string]bool{
		"":                          false,
		"disablethp=1":              true,
		"gctrace=1,disablethp=1":    true,
		"disablethp=1,disablethp=0": false,
		"disablethp=0":              false,
		"madvdontneed=1":            false,
	} {
		if got := disablesTHP(godebug); got != want {
			t.Errorf("disablesTHP(%q) = %v, want %v", godebug, got, want)
		}
	}
}
