package home

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// ErrRunning is returned by Lock when another daemon holds this directory.
var ErrRunning = errors.New("home: another 'crow serve' is running on this directory")

// Lock takes the daemon's exclusive lock on the directory (an flock on
// serve.lock, released by the kernel when the process dies, so a kill -9
// leaves nothing stale). It fails with ErrRunning, naming the other
// daemon's gateway address when it is known, if another process holds it.
// The returned func releases the lock.
func (p Paths) Lock() (unlock func() error, err error) {
	f, err := os.OpenFile(p.LockFile(), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", p.LockFile(), err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			if addr, aerr := p.ReadGatewayAddr(); aerr == nil {
				return nil, fmt.Errorf("%w (%s, gateway %s)", ErrRunning, p.Root, addr)
			}
			return nil, fmt.Errorf("%w (%s)", ErrRunning, p.Root)
		}
		return nil, fmt.Errorf("locking %s: %w", p.LockFile(), err)
	}
	return f.Close, nil
}
