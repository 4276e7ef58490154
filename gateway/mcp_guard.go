package gateway

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// browserGuard protects the gateway (it wraps the whole mux: REST, MCP, the
// web UI and its API calls, /health, the OpenAPI document) from browsers
// driven by other sites:
//
//  1. DNS rebinding: a site that points its own name at 127.0.0.1 makes the
//     victim's browser send requests whose Host is that name. A request is
//     refused (403) unless its Host is a loopback name or IP ("localhost",
//     127.0.0.0/8, ::1), the host of the configured gateway URL
//     (Self.GatewayURL, e.g. the Tailscale IP satellites use), or the IP
//     literal of the local address the connection arrived on (an IP
//     literal involves no DNS, so it cannot be rebound).
//  2. Cross-origin browser requests: a request carrying an Origin header is
//     refused unless that origin is this gateway itself on a loopback host
//     (scheme http or https, loopback host, same host:port as the Host
//     header). A Sec-Fetch-Site of "cross-site" or "same-site" is refused
//     too, which covers the browser requests that carry no Origin.
//  3. Except ChainRPCPath: the chain's public, read-only JSON-RPC is meant
//     for browser dapps of any origin (it sends Access-Control-Allow-Origin:
//     *, holds nothing of the owner's and takes no key), so past the Host
//     check (1) its requests skip (2).
//
// CLI and SDK clients send neither Origin nor Sec-Fetch-Site and pass
// whenever they address the gateway by a loopback or its configured host.
func (s *Server) browserGuard(next http.Handler) http.Handler {
	var configured string
	if u, err := url.Parse(s.app.Self().GatewayURL); err == nil {
		configured = strings.ToLower(u.Hostname())
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := hostName(r.Host)
		allowed := isLoopbackName(host) || (configured != "" && host == configured)
		if !allowed {
			if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && la != nil {
				if ap, err := netip.ParseAddrPort(la.String()); err == nil {
					ip, err := netip.ParseAddr(host)
					allowed = err == nil && ip.Unmap() == ap.Addr().Unmap()
				}
			}
		}
		if !allowed {
			writeError(w, http.StatusForbidden, "refused: Host %q is neither a loopback address nor this gateway's configured host (DNS rebinding protection)", r.Host)
			return
		}
		if r.URL.Path == ChainRPCPath {
			next.ServeHTTP(w, r)
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !sameLoopbackOrigin(o, r.Host) {
			writeError(w, http.StatusForbidden, "refused: cross-origin request from %q; only this gateway's own loopback origin may call it from a browser", o)
			return
		}
		switch r.Header.Get("Sec-Fetch-Site") {
		case "cross-site", "same-site":
			writeError(w, http.StatusForbidden, "refused: cross-site browser request")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hostName returns the lower-case host of a Host header value, without port
// or IPv6 brackets.
func hostName(hostport string) string {
	h := hostport
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		h = host
	}
	return strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"))
}

// isLoopbackName reports whether host (no port) is "localhost" or a loopback IP.
func isLoopbackName(host string) bool {
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// sameLoopbackOrigin reports whether origin is http(s)://<reqHost> with a
// loopback host.
func sameLoopbackOrigin(origin, reqHost string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" {
		return false
	}
	return isLoopbackName(strings.ToLower(u.Hostname())) && strings.EqualFold(u.Host, reqHost)
}
