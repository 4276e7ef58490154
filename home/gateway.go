package home

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// ErrNoGateway is returned by ReadGatewayAddr when gateway.addr does not
// exist: no daemon is running for this directory. The error also matches
// fs.ErrNotExist.
var ErrNoGateway = errors.New("home: no gateway address (is 'crow serve' running?)")

// WriteGatewayAddr records the address the gateway serves (host:port), for
// the CLI and scripts. The daemon calls it once it listens.
func (p Paths) WriteGatewayAddr(addr string) error {
	addr = strings.TrimSpace(addr)
	if addr == "" || strings.ContainsAny(addr, " \t\r\n") {
		return fmt.Errorf("invalid gateway address %q", addr)
	}
	return AtomicWrite(p.GatewayAddrFile(), []byte(addr+"\n"), 0o600)
}

// ReadGatewayAddr returns the recorded gateway address (host:port).
func (p Paths) ReadGatewayAddr() (string, error) {
	b, err := os.ReadFile(p.GatewayAddrFile())
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%w: %w", ErrNoGateway, err)
	} else if err != nil {
		return "", fmt.Errorf("reading gateway address: %w", err)
	}
	addr := strings.TrimSpace(string(b))
	if addr == "" {
		return "", fmt.Errorf("%w: %s is empty", ErrNoGateway, p.GatewayAddrFile())
	}
	return addr, nil
}

// RemoveGatewayAddr deletes gateway.addr; the daemon calls it on shutdown.
// A missing file is not an error.
func (p Paths) RemoveGatewayAddr() error {
	if err := os.Remove(p.GatewayAddrFile()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing gateway address: %w", err)
	}
	return nil
}
