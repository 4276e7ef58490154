package registry

import (
	"context"
	"fmt"
	"time"

	"github.com/crow-sync/crow/clock"
)

// Checked is the answer of CheckInstance: the instance's proven /health
// document, when this instance sent the request and when the answer came
// back (by the registry's clock), and the instance's own clock in the
// answer (zero when it reported none).
type Checked struct {
	Doc            HealthDoc
	Sent, Received time.Time
	PeerTime       time.Time
}

// CheckInstance probes registered instance id now, as the prober does (a
// challenged /health that must prove the instance's identity, certificate
// and key, bounded by DefaultProbeTimeout), without recording anything.
// Errors: ErrNotFound for an unknown id, ErrRevoked for a revoked one
// (nothing is sent), and the prober's errors (ErrUnhealthy, ErrRevoked,
// ErrBadSignature, ...) for the answer. `crow doctor` uses it.
func (r *Registry) CheckInstance(ctx context.Context, id string) (Checked, error) {
	row, ok := r.snap.Load().rows[id]
	if !ok {
		return Checked{}, fmt.Errorf("checking instance %q: %w", id, ErrNotFound)
	}
	if row.Revoked {
		return Checked{}, fmt.Errorf("checking instance %q (revoked %s): %w", id, row.RevokedAt, ErrRevoked)
	}
	challenge, err := r.newChallenge()
	if err != nil {
		return Checked{}, err
	}
	ctx, cancel := clock.WithTimeout(ctx, r.clock, DefaultProbeTimeout)
	defer cancel()
	out := Checked{Sent: r.clock.Now()}
	doc, err := fetchHealth(ctx, r.client, row.GatewayURL, challenge)
	out.Received = r.clock.Now()
	if err != nil {
		return out, fmt.Errorf("checking %q at %s: %w", id, row.GatewayURL, err)
	}
	if doc.InstanceID != id {
		return out, fmt.Errorf("checking %q: %w: %s is now instance %q", id, ErrUnhealthy, row.GatewayURL, doc.InstanceID)
	}
	if _, _, err := r.verifyHealth(doc, challenge); err != nil {
		return out, fmt.Errorf("checking %q: %w", id, err)
	}
	out.Doc = doc
	if doc.Time != "" {
		if t, err := time.Parse(time.RFC3339Nano, doc.Time); err == nil {
			out.PeerTime = t
		}
	}
	return out, nil
}
