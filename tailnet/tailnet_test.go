package tailnet

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func ifaces(list ...Interface) func() ([]Interface, error) {
	return func() ([]Interface, error) { return list, nil }
}

func addrs(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, a := range s {
		out = append(out, netip.MustParseAddr(a))
	}
	return out
}

func noCLI(context.Context) (string, error) {
	return "", errors.New("the tailscale CLI is not installed")
}

func TestIPv4(t *testing.T) {
	ctx := context.Background()
	lo := Interface{Name: "lo", Addrs: addrs("127.0.0.1", "::1")}
	eth := Interface{Name: "eth0", Addrs: addrs("192.168.1.20", "fe80::1")}
	for _, c := range []struct {
		name string
		r    Resolver
		want string
		err  bool
	}{
		{"tailscale0 first", Resolver{Interfaces: ifaces(lo, Interface{Name: "utun9", Addrs: addrs("100.70.0.9")},
			Interface{Name: "tailscale0", Addrs: addrs("fd7a:115c:a1e0::1", "100.101.102.103")}), CLI: noCLI}, "100.101.102.103", false},
		{"CGNAT address on another interface (userspace, macOS utun)", Resolver{Interfaces: ifaces(lo, eth,
			Interface{Name: "utun3", Addrs: addrs("100.64.0.7")}), CLI: noCLI}, "100.64.0.7", false},
		{"100.128.0.1 is outside 100.64.0.0/10", Resolver{Interfaces: ifaces(Interface{Name: "eth1", Addrs: addrs("100.128.0.1")}), CLI: noCLI}, "", true},
		{"the CLI as a last resort", Resolver{Interfaces: ifaces(lo, eth),
			CLI: func(context.Context) (string, error) { return "100.99.1.2\n", nil }}, "100.99.1.2", false},
		{"nothing", Resolver{Interfaces: ifaces(lo, eth), CLI: noCLI}, "", true},
		{"the CLI prints no IPv4", Resolver{Interfaces: ifaces(lo), CLI: func(context.Context) (string, error) { return "\n", nil }}, "", true},
	} {
		got, err := c.r.IPv4(ctx)
		if c.err {
			if !errors.Is(err, ErrNoAddress) {
				t.Errorf("%s: err %v, want ErrNoAddress", c.name, err)
			}
			continue
		}
		if err != nil || got.String() != c.want {
			t.Errorf("%s: %v, %v; want %s", c.name, got, err, c.want)
		}
	}
}

func TestListenAndSyncListen(t *testing.T) {
	ctx := context.Background()
	r := Resolver{Interfaces: ifaces(Interface{Name: "tailscale0", Addrs: addrs("100.64.0.2")}), CLI: noCLI}
	for _, c := range []struct{ in, want string }{
		{"tailscale", "100.64.0.2:3001"},
		{"tailscale:4000", "100.64.0.2:4000"},
		{"127.0.0.1:3001", "127.0.0.1:3001"},
	} {
		if got, err := r.Listen(ctx, c.in); err != nil || got != c.want {
			t.Errorf("Listen(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, c := range []struct{ in, gw, want string }{
		{"tailscale", "100.64.0.2:3001", "/ip4/100.64.0.2/tcp/3002"},
		{"tailscale", "100.64.0.2:4000", "/ip4/100.64.0.2/tcp/4001"},
		{"tailscale:5000", "127.0.0.1:3001", "/ip4/100.64.0.2/tcp/5000"},
		{"", "100.64.0.2:3001", ""},
		{"/ip4/127.0.0.1/tcp/9", "x", "/ip4/127.0.0.1/tcp/9"},
	} {
		if got, err := r.SyncListen(ctx, c.in, c.gw); err != nil || got != c.want {
			t.Errorf("SyncListen(%q, %q) = %q, %v; want %q", c.in, c.gw, got, err, c.want)
		}
	}
	for _, bad := range []string{"tailscale:", "tailscale:0", "tailscale:70000", "tailscale:http"} {
		if _, err := r.Listen(ctx, bad); err == nil || !strings.Contains(err.Error(), "tailscale:PORT") {
			t.Errorf("Listen(%q): %v", bad, err)
		}
	}
	none := Resolver{Interfaces: ifaces(), CLI: noCLI}
	if _, err := none.Listen(ctx, "tailscale"); !errors.Is(err, ErrNoAddress) || !strings.Contains(err.Error(), "tailscale up") {
		t.Errorf("no address: %v", err)
	}
}

// TestSystemInterfaces reads this machine's interfaces (never binds one):
// loopback is among them.
func TestSystemInterfaces(t *testing.T) {
	ifs, err := systemInterfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range ifs {
		for _, a := range i.Addrs {
			if a.IsLoopback() {
				return
			}
		}
	}
	t.Errorf("no loopback address among %v", ifs)
}
