package daemon

import (
	"fmt"
	"net"
	"strconv"
)

// defaultSyncListen returns the sync multiaddr: the configured one, else the
// gateway's host with the gateway's port + 1 (port 0 stays 0).
func defaultSyncListen(configured, gatewayAddr string) (string, error) {
	if configured != "" {
		return configured, nil
	}
	host, portStr, err := net.SplitHostPort(gatewayAddr)
	if err != nil {
		return "", err
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return "", err
	}
	if port != 0 {
		port++
	}
	proto := "dns"
	if ip := net.ParseIP(host); ip != nil && ip.To4() != nil {
		proto = "ip4"
	} else if ip != nil {
		proto = "ip6"
	} else if host == "" {
		proto, host = "ip4", "0.0.0.0"
	}
	return fmt.Sprintf("/%s/%s/tcp/%d", proto, host, port), nil
}
