package doctor

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"

	ma "github.com/multiformats/go-multiaddr"
)

// isLoopbackHost reports whether host (a name or an IP, without port) is
// this machine only: localhost, 127.0.0.0/8, ::1.
func isLoopbackHost(host string) bool {
	host = strings.Trim(strings.ToLower(host), "[]")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// urlHost is the host of a gateway URL ("" if it does not parse).
func urlHost(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// multiaddrHost is the IP or DNS name of a multiaddr ("" if it has none).
func multiaddrHost(s string) string {
	m, err := ma.NewMultiaddr(s)
	if err != nil {
		return ""
	}
	for _, code := range []int{ma.P_IP4, ma.P_IP6, ma.P_DNS, ma.P_DNS4, ma.P_DNS6} {
		if v, err := m.ValueForProtocol(code); err == nil {
			return v
		}
	}
	return ""
}

// remoteAddrs are the addresses of p that are not loopback: where p is on
// another machine.
func remoteAddrs(p Peer) []string {
	var out []string
	if h := urlHost(p.GatewayURL); h != "" && !isLoopbackHost(h) {
		out = append(out, p.GatewayURL)
	}
	for _, a := range p.SyncAddrs {
		if h := multiaddrHost(a); h != "" && !isLoopbackHost(h) {
			out = append(out, a)
		}
	}
	return out
}

// checkAddresses: when a peer is on another machine (a registered address
// of it is not loopback), this instance must be reachable from there: its
// gateway bound beyond loopback, gateway_url set to a URL that is not
// loopback, a sync address that is not loopback. It judges from the
// addresses alone; nothing is sent.
func checkAddresses(env Env) []Finding {
	n := env.Net
	if n.Listen == "" && n.Advertised == "" && len(n.SyncAddrs) == 0 {
		return nil
	}
	var remote []string // "name (addr)"
	for _, p := range env.Peers {
		if p.Revoked || p.ID == env.Self.InstanceID {
			continue
		}
		if addrs := remoteAddrs(p); len(addrs) > 0 {
			remote = append(remote, fmt.Sprintf("%s (%s)", p.Name, addrs[0]))
		}
	}
	if len(remote) == 0 {
		return []Finding{{Check: CheckAddresses, Status: OK,
			Message: fmt.Sprintf("gateway on %s; no peer is on another machine", n.Listen)}}
	}
	peers := strings.Join(remote, ", ")
	var out []Finding
	if host, _, err := net.SplitHostPort(n.Listen); err == nil && isLoopbackHost(host) {
		out = append(out, Finding{Check: CheckAddresses, Subject: "listen", Status: Problem,
			Message: fmt.Sprintf("the gateway is bound to %s while peers are on other machines (%s): peers on other machines cannot reach it", n.Listen, peers),
			Fix:     "crow serve --listen tailscale (or the Tailscale IP, e.g. --listen 100.x.y.z:3001), or listen = \"HOST:3001\" in config.toml"})
	}
	switch h := urlHost(n.Advertised); {
	case n.GatewayURL == "":
		out = append(out, Finding{Check: CheckAddresses, Subject: "gateway_url", Status: Problem,
			Message: fmt.Sprintf("gateway_url is not set while peers are on other machines (%s): they are told %s", peers, n.Advertised),
			Fix:     "crow config set gateway_url http://HOST:3001 (the name or IP peers reach this machine at, e.g. its Tailscale name)"})
	case h != "" && isLoopbackHost(h):
		out = append(out, Finding{Check: CheckAddresses, Subject: "gateway_url", Status: Problem,
			Message: fmt.Sprintf("gateway_url %s is loopback while peers are on other machines (%s)", n.Advertised, peers),
			Fix:     "crow config set gateway_url http://HOST:3001 (the name or IP peers reach this machine at)"})
	}
	if len(n.SyncAddrs) > 0 {
		reachable := false
		for _, a := range n.SyncAddrs {
			if h := multiaddrHost(a); h != "" && !isLoopbackHost(h) {
				reachable = true
			}
		}
		if !reachable {
			out = append(out, Finding{Check: CheckAddresses, Subject: "sync", Status: Problem,
				Message: fmt.Sprintf("sync announces only loopback addresses (%s) while peers are on other machines (%s): they cannot replicate with it",
					strings.Join(n.SyncAddrs, ", "), peers),
				Fix: "crow serve --sync-listen /ip4/0.0.0.0/tcp/3002 (or the Tailscale IP), or sync_announce in config.toml"})
		}
	}
	if len(out) == 0 {
		out = append(out, Finding{Check: CheckAddresses, Status: OK,
			Message: fmt.Sprintf("gateway on %s, advertised as %s; peers on other machines (%s) can reach it", n.Listen, n.Advertised, peers)})
	}
	return out
}
