// Package tailnet resolves the listen value "tailscale" (`crow serve
// --listen tailscale`, `--sync-listen tailscale`, `listen = "tailscale"` in
// config.toml) to this machine's Tailscale IPv4 address: the address of the
// tailscale0 interface, else any interface address in Tailscale's CGNAT
// range 100.64.0.0/10, else what `tailscale ip -4` prints. The interfaces
// and the CLI are injected, so tests never look at (or bind) a real one.
package tailnet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Keyword is the listen value that names the Tailscale address.
const Keyword = "tailscale"

// DefaultPort is the gateway port of "tailscale" without one; the sync
// port is the gateway's + 1.
const DefaultPort = 3001

// ErrNoAddress is returned by Resolver.IPv4 when no Tailscale address is
// found.
var ErrNoAddress = errors.New("no Tailscale address found: no tailscale0 interface, no interface address in 100.64.0.0/10, and `tailscale ip -4` gave none; is Tailscale up on this machine (tailscale up)?")

// cgnat is the range Tailscale assigns IPv4 addresses from.
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// Interface is one network interface and its addresses.
type Interface struct {
	Name  string
	Addrs []netip.Addr
}

// Resolver finds the Tailscale address. Its zero value reads the machine's
// interfaces and runs the tailscale CLI if it is on $PATH.
type Resolver struct {
	// Interfaces lists the network interfaces (nil: net.Interfaces).
	Interfaces func() ([]Interface, error)
	// CLI prints this machine's Tailscale IPv4 (nil: `tailscale ip -4`
	// when the tailscale binary is found; an error when it is not).
	CLI func(ctx context.Context) (string, error)
}

// IPv4 is this machine's Tailscale IPv4 address.
func (r Resolver) IPv4(ctx context.Context) (netip.Addr, error) {
	list := r.Interfaces
	if list == nil {
		list = systemInterfaces
	}
	ifs, err := list()
	if err != nil {
		return netip.Addr{}, fmt.Errorf("listing network interfaces: %w", err)
	}
	for _, i := range ifs {
		if i.Name != "tailscale0" {
			continue
		}
		for _, a := range i.Addrs {
			if a.Unmap().Is4() {
				return a.Unmap(), nil
			}
		}
	}
	for _, i := range ifs {
		for _, a := range i.Addrs {
			if a = a.Unmap(); a.Is4() && cgnat.Contains(a) {
				return a, nil
			}
		}
	}
	cli := r.CLI
	if cli == nil {
		cli = tailscaleCLI
	}
	out, err := cli(ctx)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("%w (%v)", ErrNoAddress, err)
	}
	for _, f := range strings.Fields(out) {
		if a, err := netip.ParseAddr(f); err == nil && a.Is4() {
			return a, nil
		}
	}
	return netip.Addr{}, ErrNoAddress
}

// IsKeyword reports whether v is "tailscale" or "tailscale:PORT".
func IsKeyword(v string) bool {
	return v == Keyword || strings.HasPrefix(v, Keyword+":")
}

// port parses the PORT of "tailscale:PORT" (def without one).
func port(v string, def int) (int, error) {
	p, ok := strings.CutPrefix(v, Keyword+":")
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("%q: want tailscale or tailscale:PORT with a port from 1 to 65535", v)
	}
	return n, nil
}

// Listen resolves a gateway listen value: "tailscale[:PORT]" becomes
// IP:PORT (port 3001 by default); any other value is returned unchanged.
func (r Resolver) Listen(ctx context.Context, v string) (string, error) {
	if !IsKeyword(v) {
		return v, nil
	}
	p, err := port(v, DefaultPort)
	if err != nil {
		return "", err
	}
	ip, err := r.IPv4(ctx)
	if err != nil {
		return "", err
	}
	return netip.AddrPortFrom(ip, uint16(p)).String(), nil
}

// SyncListen resolves a sync listen value: "tailscale[:PORT]" becomes the
// multiaddr /ip4/IP/tcp/PORT, by default on the gateway's port + 1
// (gateway is the resolved gateway listen address); any other value is
// returned unchanged.
func (r Resolver) SyncListen(ctx context.Context, v, gateway string) (string, error) {
	if !IsKeyword(v) {
		return v, nil
	}
	def := DefaultPort + 1
	if ap, err := netip.ParseAddrPort(gateway); err == nil && ap.Port() < 65535 {
		def = int(ap.Port()) + 1
	}
	p, err := port(v, def)
	if err != nil {
		return "", err
	}
	ip, err := r.IPv4(ctx)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("/ip4/%s/tcp/%d", ip, p), nil
}

func systemInterfaces() ([]Interface, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	out := make([]Interface, 0, len(ifs))
	for _, i := range ifs {
		if i.Flags&net.FlagUp == 0 {
			continue
		}
		addrs, err := i.Addrs()
		if err != nil {
			continue
		}
		e := Interface{Name: i.Name}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				if ip, ok := netip.AddrFromSlice(n.IP); ok {
					e.Addrs = append(e.Addrs, ip.Unmap())
				}
			}
		}
		out = append(out, e)
	}
	return out, nil
}

func tailscaleCLI(ctx context.Context) (string, error) {
	bin, err := exec.LookPath("tailscale")
	if err != nil {
		return "", errors.New("the tailscale CLI is not installed")
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "ip", "-4").Output()
	if err != nil {
		return "", fmt.Errorf("tailscale ip -4: %w", err)
	}
	return string(out), nil
}
