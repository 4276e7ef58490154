package daemon

import (
	"context"
	"errors"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/client"
	"github.com/crow-sync/crow/identity/member"
)

// ErrRestart is what Serve returns when the daemon stopped to start again
// on its $CROW_HOME, which changed under it (a reenrollment gave it a new
// identity): the caller loads the home again and serves a new Daemon.
var ErrRestart = errors.New("daemon: restart requested")

// requestRestart makes Serve stop and return ErrRestart.
func (d *Daemon) requestRestart() {
	d.restartMu.Lock()
	defer d.restartMu.Unlock()
	select {
	case <-d.restart:
	default:
		close(d.restart)
	}
}

// waitRestart is the service that ends Serve with ErrRestart.
func (d *Daemon) waitRestart(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case <-d.restart:
		return ErrRestart
	}
}

// joinHome sends a join request to home's gateway (the instances.join
// operation, as `crow init --join` does).
func joinHome(ctx context.Context, url string, req member.JoinRequest) (member.JoinAnswer, error) {
	j, err := client.Do(ctx, client.New(url, ""), app.InstancesJoin, app.JoinIn{Request: req})
	return j.Answer, err
}
